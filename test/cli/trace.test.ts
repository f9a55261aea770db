/** `kfmesh trace` through the real program, on the built-in example platform. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runKfmesh, writeText } from '../cli-process.ts';

const client = 'kubeflow-user-example-com/curl-inside-mesh';
const internalUrl =
  'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict';

type Trace = {
  response: { code: number; flags: string };
  hops: { kind: string; cluster?: string }[];
  telemetry: { reporter: string; proxy: string; labels: Record<string, string> }[];
};

const example = writeText(runKfmesh(['example']).stdout, 'platform.yaml');
const before = writeText(runKfmesh(['render', example, '--no-mesh-gateway']).stdout, 'before.yaml');

function traceJson(args: string[]): Trace {
  const run = runKfmesh(['trace', ...args, '-o', 'json']);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as Trace;
}

describe('kfmesh trace on the example platform', () => {
  test('in-mesh client after the fix: sidecar, one gateway pass, the predictor', () => {
    const r = traceJson([example, '--from', client, '--url', internalUrl, '--method', 'POST']);
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['sidecar', 'gateway', 'sidecar'],
    );
    const source = r.telemetry.find((t) => t.proxy === client);
    assert.equal(source?.labels['destination_service_name'], 'knative-local-gateway');
  });

  test('before the fix (the VirtualService rendered without mesh, overlaid): two gateway passes; PassthroughCluster at 1.20', () => {
    const r = traceJson([
      example,
      before,
      '--from',
      client,
      '--url',
      internalUrl,
      '--method',
      'POST',
      '--istio-version',
      '1.20',
    ]);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['sidecar', 'gateway', 'gateway', 'sidecar'],
    );
    assert.equal(
      r.telemetry.find((t) => t.proxy === client)?.labels['destination_service_name'],
      'PassthroughCluster',
    );
  });

  const externalUrl =
    'http://sklearn-iris.kubeflow-user-example-com.example.com/v1/models/sklearn-iris:predict';
  // A token dex issued (iss/sub is what the policies read; its signature is not checked offline).
  const claims = {
    iss: 'http://dex.auth.svc.cluster.local:5556/dex',
    sub: 'user',
    email: 'user@example.com',
  };
  const token = `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;

  test('from outside with a dex token: the ingress gateway, the local gateway, the predictor', () => {
    const r = traceJson([
      example,
      '--from',
      'external',
      '--url',
      externalUrl,
      '-H',
      `Authorization: Bearer ${token}`,
    ]);
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['gateway', 'gateway', 'sidecar'],
    );
  });

  test('from outside without a token: the ingress gateway refuses (require-jwt DENY)', () => {
    const r = traceJson([example, '--from', 'external', '--url', externalUrl]);
    assert.equal(r.response.code, 403);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['gateway'],
    );
  });

  test('the text form lists each hop and the outcome', () => {
    const run = runKfmesh(['trace', example, '--from', client, '--url', internalUrl]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /^GET http:\/\/sklearn-iris\.kubeflow-user-example-com\.svc\.cluster\.local\/v1\/models\/sklearn-iris:predict {2}from kubeflow-user-example-com\/curl-inside-mesh {2}\(Istio 1\.29\)/,
    );
    // The version the example's proxies run, and where it was read.
    assert.match(
      run.stderr,
      /simulating Istio 1\.29 \(the proxies' image docker\.io\/istio\/proxyv2:1\.29\.1\)/,
    );
    assert.match(run.stdout, /1\. sidecar kubeflow-user-example-com\/curl-inside-mesh \(outbound\)/);
    assert.match(
      run.stdout,
      /virtual host {3}sklearn-iris\.kubeflow-user-example-com\.svc\.cluster\.local:80/,
    );
    assert.match(
      run.stdout,
      /response: 200\noutcome: {2}answered by kubeflow-user-example-com\/sklearn-iris-predictor-00001-deployment/,
    );
  });

  test('the same input gives the same output', () => {
    const args = ['trace', example, '--from', client, '--url', internalUrl, '-o', 'json'];
    assert.equal(runKfmesh(args).stdout, runKfmesh(args).stdout);
  });
});

describe('kfmesh trace on the ambient example of docs/cli.md', () => {
  const ambient = fileURLToPath(new URL('../../../examples/ambient-waypoint.yaml', import.meta.url));
  const predict = 'http://iris.models/v1/models/iris:predict';

  test('POST from team-a: ztunnel, the waypoint (its policy allows), ztunnel; the waypoint reports', () => {
    const r = traceJson([ambient, '--from', 'team-a/client-0', '--url', predict, '--method', 'POST']);
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'waypoint', 'ztunnel'],
    );
    const waypoint = r.telemetry.find((t) => t.reporter === 'waypoint');
    assert.equal(waypoint?.labels['source_principal'], 'spiffe://cluster.local/ns/team-a/sa/client');
    assert.equal(waypoint?.labels['destination_workload'], 'iris-0');
  });

  test('GET is refused at the waypoint with 403', () => {
    const r = traceJson([ambient, '--from', 'team-a/client-0', '--url', predict]);
    assert.equal(r.response.code, 403);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'waypoint'],
    );
  });
});

describe('kfmesh trace: bad input', () => {
  const cases: [string, string[], RegExp][] = [
    [
      'an unknown workload names the closest',
      ['--from', 'kubeflow-user-example-com/curl', '--url', internalUrl],
      /no such workload; closest: kubeflow-user-example-com\/curl-inside-mesh/,
    ],
    ['an unparsable URL', ['--from', client, '--url', 'not a url'], /is not a URL/],
    [
      'a host nobody serves, from outside',
      ['--from', 'external', '--url', 'http://nowhere.example.org:8443/'],
      /no ingress gateway serves nowhere\.example\.org:8443/,
    ],
    [
      'a bad Istio version',
      ['--from', client, '--url', internalUrl, '--istio-version', 'latest'],
      /--istio-version must be a modelled version X\.Y \(1\.20 to 1\.31\)/,
    ],
    [
      'an Istio version outside the modelled range',
      ['--from', client, '--url', internalUrl, '--istio-version', '9.9'],
      /--istio-version must be a modelled version X\.Y \(1\.20 to 1\.31\), got "9\.9"/,
    ],
    [
      'a header without a colon',
      ['--from', client, '--url', internalUrl, '-H', 'nonsense'],
      /write 'Name: value'/,
    ],
    ['--from missing', ['--url', internalUrl], /--from/],
  ];
  for (const [name, args, message] of cases) {
    test(name, () => {
      const run = runKfmesh(['trace', example, ...args]);
      assert.equal(run.code, 2);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, message);
    });
  }
});

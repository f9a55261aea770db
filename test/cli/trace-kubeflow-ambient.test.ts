/**
 * One Profile of the example platform moved to ambient mode by itself (the namespace label
 * `kfmesh.io/mode: ambient`, test/data/kubeflow-ambient/mixed.yaml), rendered by `kfmesh render` and traced
 * by `kfmesh trace`: the owner through the ingress and the waypoint, another user denied at the waypoint,
 * the pipelines UI (still a sidecar) refused by ztunnel as finding KFM303 says, a pipeline step of the
 * namespace allowed, an in-mesh call to the namespace's InferenceService routed by the waypoint, and a call
 * to the pipelines API (a sidecar) that goes in plaintext and that STRICT mTLS refuses, as KFM302 says.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runKfmesh, writeText } from '../cli-process.ts';

type Trace = {
  response: { code: number; flags: string };
  hops: {
    kind: string;
    workload: string;
    decision?: string;
    policy?: string;
    virtualService?: string;
    mtls?: boolean;
  }[];
  telemetry: { metric: string; reporter: string; proxy: string; labels: Record<string, string> }[];
};

const example = writeText(runKfmesh(['example']).stdout, 'platform.yaml');
const mixed = fileURLToPath(new URL('../../../test/data/kubeflow-ambient/mixed.yaml', import.meta.url));
const rendered = runKfmesh(['render', example, mixed]);
const desired = writeText(rendered.stdout, 'desired.yaml');
const notebook = 'http://kubeflow.example.com/notebook/ml-research/lab/';

function trace(args: string[]): Trace {
  const run = runKfmesh(['trace', example, mixed, desired, ...args, '-o', 'json']);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as Trace;
}

const viaIngress = (user: string) =>
  trace([
    '--from',
    'external',
    '--via',
    'kubeflow/kubeflow-gateway',
    '-H',
    `kubeflow-userid: ${user}`,
    '--url',
    notebook,
  ]);

describe('the Profile ml-research alone in ambient mode, traced', () => {
  test('render warns that the pipelines UI will be refused (KFM303)', () => {
    assert.match(rendered.stderr, /ml-pipeline-ui.*\[KFM303\]/);
  });

  test('the owner reaches the notebook: Gateway API ingress, the waypoint (owner policy), ztunnel (L4 policy)', () => {
    const r = viaIngress('researcher@example.com');
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => `${h.kind} ${h.workload}`),
      ['gateway kubeflow-gateway-istio', 'waypoint waypoint', 'ztunnel ztunnel'],
    );
    assert.equal(r.hops[1]?.policy, 'ml-research/ns-owner-access-waypoint');
    assert.equal(r.hops[2]?.policy, 'ml-research/ns-l4-waypoint');
    const record = r.telemetry.find((t) => t.reporter === 'waypoint');
    assert.equal(record?.labels['response_code'], '200');
    assert.equal(record?.labels['destination_workload'], 'lab');
  });

  test('another user is denied at the waypoint with 403', () => {
    const r = viaIngress('user@example.com');
    assert.equal(r.response.code, 403);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['gateway', 'waypoint'],
    );
    assert.equal(r.hops[1]?.decision, 'deny');
    assert.equal(r.telemetry.find((t) => t.reporter === 'waypoint')?.labels['response_code'], '403');
  });

  test('the pipelines UI, with a sidecar, skips the waypoint and ztunnel refuses it (DENY)', () => {
    const r = trace(['--from', 'kubeflow/ml-pipeline-ui', '--url', 'http://lab.ml-research/']);
    assert.equal(r.response.code, 503);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['sidecar', 'ztunnel'],
    );
    const closed = r.telemetry.find((t) => t.metric === 'istio_tcp_connections_closed_total');
    assert.equal(closed?.labels['response_flags'], 'DENY');
  });

  test('a pipeline step of the namespace reaches the notebook through the waypoint', () => {
    const r = trace(['--from', 'ml-research/pipeline-step', '--url', 'http://lab.ml-research/']);
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'waypoint', 'ztunnel'],
    );
  });

  test('an in-mesh client calls the InferenceService: the waypoint routes by its mesh HTTPRoute to the predictor', () => {
    const r = trace([
      '--from',
      'ml-research/pipeline-step',
      '--url',
      'http://iris-raw.ml-research/v1/models/iris-raw:predict',
      '--method',
      'POST',
    ]);
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'waypoint', 'ztunnel'],
    );
    assert.equal(r.hops[1]?.virtualService, 'ml-research/iris-raw-mesh');
    const record = r.telemetry.find((t) => t.reporter === 'waypoint');
    assert.equal(record?.labels['destination_service_name'], 'iris-raw-predictor');
    assert.equal(record?.labels['source_workload'], 'pipeline-step');
  });

  test('a pipeline step calls the pipelines API (a sidecar): plaintext, no identity; STRICT resets it (KFM302)', () => {
    const args = [
      '--from',
      'ml-research/pipeline-step',
      '--url',
      'http://ml-pipeline.kubeflow:8888/apis/v2beta1/runs',
    ];
    const r = trace(args);
    assert.equal(r.response.code, 200);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['ztunnel', 'sidecar'],
    );
    assert.equal(r.hops[0]?.mtls, false);
    const server = r.telemetry.find(
      (t) => t.reporter === 'destination' && t.proxy === 'kubeflow/ml-pipeline',
    );
    assert.equal(server?.labels['source_principal'], 'unknown');
    assert.match(rendered.stderr, /sidecars do not accept HBONE.*\[KFM302\]/);
    const strict = writeText(
      'apiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata:\n  name: default\n  namespace: istio-system\nspec:\n  mtls:\n    mode: STRICT\n',
      'strict.yaml',
    );
    const refused = trace([strict, ...args]);
    assert.deepEqual(refused.response, { code: 0, flags: '-' });
    assert.equal(refused.hops[1]?.decision, 'deny');
  });

  test('--via names a gateway that does not exist, or is used without --from external: exit 2', () => {
    const missing = runKfmesh([
      'trace',
      example,
      '--from',
      'external',
      '--via',
      'kubeflow/nope',
      '--url',
      notebook,
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--via kubeflow\/nope: no such ingress gateway; the gateways are /);
    const inside = runKfmesh([
      'trace',
      example,
      '--from',
      'kubeflow-user-example-com/curl-inside-mesh',
      '--via',
      'istio-system/istio-ingressgateway',
      '--url',
      notebook,
    ]);
    assert.equal(inside.code, 2);
    assert.match(inside.stderr, /use it with --from external/);
    // Without --via and with no ingress gateway at all, the error is about the host, not about --via.
    const noIngress = fileURLToPath(new URL('../../../examples/ambient-waypoint.yaml', import.meta.url));
    const external = runKfmesh(['trace', noIngress, '--from', 'external', '--url', notebook]);
    assert.equal(external.code, 2);
    assert.match(external.stderr, /--from external: no ingress gateway serves kubeflow\.example\.com:80/);
  });
});

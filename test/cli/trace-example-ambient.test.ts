/**
 * The example platform in ambient mode (`kfmesh example --mode ambient`, the migration of the sidecar
 * example), traced end to end: a user reaching their notebook through the one front door (the Istio
 * ingress gateway, kept while a Profile in sidecar mode routes `*` there) and the namespace's waypoint,
 * another user denied at the waypoint, a pipeline run calling the pipelines API (which keeps its sidecar
 * for the sidecar Profile's notebook), an
 * in-mesh client calling an InferenceService, and an L7-only ALLOW policy without a waypoint, which
 * ztunnel turns into deny-all.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runKfmesh, writeText } from '../cli-process.ts';

type Trace = {
  response: { code: number; flags: string };
  hops: { kind: string; namespace: string; workload: string; decision?: string; policy?: string }[];
  telemetry: { metric: string; reporter: string; proxy: string; labels: Record<string, string> }[];
};

const ambient = writeText(runKfmesh(['example', '--mode', 'ambient']).stdout, 'ambient.yaml');
const claims = { iss: 'http://dex.auth.svc.cluster.local:5556/dex', sub: 'researcher' };
const token = `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
const notebook = 'http://kubeflow.example.com/notebook/ml-research/lab/';

function trace(args: string[], extra: string[] = []): Trace {
  const run = runKfmesh(['trace', ambient, ...extra, ...args, '-o', 'json']);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as Trace;
}

const hops = (r: Trace) => r.hops.map((h) => `${h.kind} ${h.namespace}/${h.workload}`);

const asUser = (user: string) =>
  trace([
    '--from',
    'external',
    '--via',
    'istio-system/istio-ingressgateway',
    '-H',
    `Authorization: Bearer ${token}`,
    '-H',
    `kubeflow-userid: ${user}`,
    '--url',
    notebook,
  ]);

describe('the example platform in ambient mode, traced', () => {
  test('the owner reaches the notebook: the front door, the waypoint (owner policy), ztunnel', () => {
    const r = asUser('researcher@example.com');
    assert.equal(r.response.code, 200);
    assert.deepEqual(hops(r), [
      'gateway istio-system/istio-ingressgateway',
      'waypoint ml-research/waypoint',
      'ztunnel istio-system/ztunnel',
    ]);
    assert.equal(r.hops[1]?.policy, 'ml-research/ns-owner-access-waypoint');
    // ztunnel: the profile controller's policy, kept as it writes it, admits the namespace's own
    // waypoint by its namespace rule (the only rule ztunnel can read).
    assert.equal(r.hops[2]?.policy, 'ml-research/ns-owner-access-istio');
    const record = r.telemetry.find((t) => t.reporter === 'waypoint');
    assert.equal(record?.labels['response_code'], '200');
    assert.equal(record?.labels['destination_workload'], 'lab');
    assert.equal(
      record?.labels['source_principal'],
      'spiffe://cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account',
    );
  });

  test('another user is denied at the waypoint with 403', () => {
    const r = asUser('user@example.com');
    assert.equal(r.response.code, 403);
    assert.deepEqual(hops(r), ['gateway istio-system/istio-ingressgateway', 'waypoint ml-research/waypoint']);
    assert.equal(r.hops[1]?.decision, 'deny');
    assert.equal(r.telemetry.find((t) => t.reporter === 'waypoint')?.labels['response_code'], '403');
  });

  test('without a token the front door refuses, as before (the require-JWT DENY stays on it)', () => {
    const r = trace(['--from', 'external', '--via', 'istio-system/istio-ingressgateway', '--url', notebook]);
    assert.equal(r.response.code, 403);
    assert.equal(r.hops[0]?.policy, 'istio-system/istio-ingressgateway-require-jwt');
  });

  test('a pipeline run calls the pipelines API: ztunnel to its sidecar, which enforces its policy', () => {
    const r = trace([
      '--from',
      'ml-research/pipeline-step',
      '--url',
      'http://ml-pipeline.kubeflow:8888/apis/v2beta1/runs',
    ]);
    assert.equal(r.response.code, 200);
    // The Profile that stays in sidecar mode calls it too, and a sidecar client skips waypoints: its pods
    // keep their sidecar, reached over HBONE with the step's identity.
    assert.deepEqual(hops(r), ['ztunnel istio-system/ztunnel', 'sidecar kubeflow/ml-pipeline']);
    assert.equal(r.hops[1]?.policy, 'kubeflow/ml-pipeline');
    // With a user header the pipelines API policy's second rule no longer matches, and the step's identity is
    // not one of the pipelines' own: its sidecar refuses.
    const withUser = trace([
      '--from',
      'ml-research/pipeline-step',
      '--url',
      'http://ml-pipeline.kubeflow:8888/apis/v2beta1/runs',
      '-H',
      'kubeflow-userid: researcher@example.com',
    ]);
    assert.equal(withUser.response.code, 403);
    assert.equal(withUser.hops.at(-1)?.kind, 'sidecar');
  });

  test('an in-mesh client calls an InferenceService: ztunnel, the namespace waypoint, the predictor', () => {
    const r = trace([
      '--from',
      'ml-research/pipeline-step',
      '--url',
      'http://iris-raw-predictor.ml-research/v1/models/iris-raw:predict',
      '--method',
      'POST',
    ]);
    assert.equal(r.response.code, 200);
    assert.deepEqual(hops(r), [
      'ztunnel istio-system/ztunnel',
      'waypoint ml-research/waypoint',
      'ztunnel istio-system/ztunnel',
    ]);
    const record = r.telemetry.find((t) => t.reporter === 'waypoint');
    assert.equal(record?.labels['destination_workload'], 'iris-raw-predictor');
    assert.equal(record?.labels['source_workload'], 'pipeline-step');
  });

  test('an L7-only ALLOW on a component without a waypoint: ztunnel drops its rules and denies every connection', () => {
    const misconfigured = writeText(
      [
        'apiVersion: security.istio.io/v1',
        'kind: AuthorizationPolicy',
        'metadata:',
        '  name: katib-ui-get-only',
        '  namespace: kubeflow',
        'spec:',
        '  selector:',
        '    matchLabels:',
        '      katib.kubeflow.org/component: ui',
        '  action: ALLOW',
        '  rules:',
        '  - to:',
        '    - operation:',
        '        methods: [GET]',
        '',
      ].join('\n'),
      'l7-only.yaml',
    );
    const r = trace(
      ['--from', 'kubeflow/centraldashboard', '--url', 'http://katib-ui.kubeflow/katib/'],
      [misconfigured],
    );
    assert.equal(r.response.code, 0);
    assert.equal(r.response.flags, 'DENY');
    assert.deepEqual(hops(r), ['ztunnel istio-system/ztunnel', 'ztunnel istio-system/ztunnel']);
    assert.equal(r.hops[1]?.decision, 'deny');
    const closed = r.telemetry.find(
      (t) => t.metric === 'istio_tcp_connections_closed_total' && t.reporter === 'destination',
    );
    assert.equal(closed?.labels['response_flags'], 'DENY');
  });
});

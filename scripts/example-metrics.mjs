/**
 * Writes examples/metrics/example.prom: the Istio metrics a cluster running the built-in example platform,
 * as the README's walkthrough leaves it (KServe before 0.14's VirtualServices), would report for a handful of requests (each traced through the example, every proxy's report counted),
 * and one series the example cannot produce (mutual TLS where the example's client leaves the mesh in
 * plaintext: drift), as Prometheus
 * exposition text. `npm start` serves the example with it, so the console shows observed traffic.
 * Run after `npm run build`: node scripts/example-metrics.mjs
 */
import { writeFileSync } from 'node:fs';
import { Snapshot } from '../dist/src/load/snapshot.js';
import { parseManifests } from '../dist/src/load/parse.js';
import { exampleBeforeKserve014, ExampleIstioVersion } from '../dist/src/example/platform.js';
import { parseIstioVersion } from '../dist/src/mesh/istio-version.js';
import { compileMesh } from '../dist/src/mesh/mesh.js';
import { traceRequest } from '../dist/src/mesh/trace.js';
import { seriesText } from '../dist/src/load/exposition.js';

// The example as the README's walkthrough leaves it (KServe before 0.14, Istio 1.20), as npm start serves it.
const mesh = compileMesh(new Snapshot(exampleBeforeKserve014().flatMap((d) => parseManifests(d))), {
  istioVersion: parseIstioVersion(ExampleIstioVersion),
});
const user = 'kubeflow-user-example-com';
const requests = [
  // A sidecar client calling a model whose VirtualService is bound only to gateways (KFM101).
  {
    from: `${user}/curl-inside-mesh`,
    url: `http://sklearn-iris.${user}.svc.cluster.local/v1/models/sklearn-iris:predict`,
    method: 'POST',
    count: 1840,
  },
  {
    from: `${user}/my-notebook`,
    url: 'http://ml-pipeline.kubeflow.svc.cluster.local:8888/apis/v2beta1/runs',
    method: 'GET',
    count: 620,
  },
  {
    from: 'kubeflow/centraldashboard',
    url: 'http://profiles-kfam.kubeflow.svc.cluster.local:8081/kfam/v1/bindings',
    method: 'GET',
    count: 300,
  },
  {
    from: 'ml-research/pipeline-step',
    url: 'http://ml-pipeline.kubeflow.svc.cluster.local:8888/apis/v2beta1/runs',
    method: 'POST',
    count: 45,
  },
  // Another team's model, which the Profile's policy does not admit: 403 at the model's sidecar.
  {
    from: 'ml-team/income-predictor-00001-deployment',
    url: 'http://iris-raw-predictor.ml-research.svc.cluster.local/v1/models/iris-raw:predict',
    method: 'POST',
    count: 90,
  },
];
const series = new Map();
const add = (name, labels, value) => {
  const key = seriesText({ name, labels });
  series.set(key, (series.get(key) ?? 0) + value);
};
let denied;
for (const r of requests) {
  const result = traceRequest(mesh, r);
  console.error(`${r.from} ${r.method} ${r.url}: ${result.summary}`);
  for (const record of result.telemetry) {
    add(record.metric, record.labels, r.count);
    if (record.labels.response_code === '403' && record.labels.reporter === 'destination')
      denied = record.labels;
  }
}
// Drift: the model's sidecar reports over mTLS, with the client's identity, what the example sends in
// plaintext (its client's sidecar sends it out of the mesh).
if (denied)
  add(
    'istio_requests_total',
    {
      ...denied,
      source_principal: 'spiffe://cluster.local/ns/ml-team/sa/default',
      connection_security_policy: 'mutual_tls',
    },
    12,
  );
const lines = ['# TYPE istio_requests_total counter', '# TYPE istio_tcp_connections_opened_total counter'];
for (const [key, value] of [...series].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  lines.push(`${key} ${value}`);
writeFileSync(new URL('../examples/metrics/example.prom', import.meta.url), `${lines.join('\n')}\n`);
console.error(`${series.size} series written`);

/**
 * The explain core over small meshes: a series is explained when a trace of the configuration reports
 * exactly its labels, HTTP (`istio_requests_total`, found through the paths the host's routes match) and
 * TCP (`istio_tcp_connections_opened_total`, found through the service's ports); a label the configuration
 * cannot give makes it drift, with the labels that differ.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
import { explainMetrics, ConnectionsMetric, RequestsMetric } from '../../src/explain/explain.ts';
import type { Sample } from '../../src/load/exposition.ts';
import { durationSeconds } from '../../src/load/prometheus.ts';
import { istio, namespace, pod, service } from '../mesh-fixtures.ts';

const objects = [
  namespace('apps'),
  pod('apps', 'client'),
  pod('apps', 'db'),
  service('apps', 'db', { ports: [{ name: 'tcp-postgres', port: 5432, targetPort: 5432 }] }),
  pod('apps', 'web'),
  service('apps', 'web'),
  istio('VirtualService', 'apps', 'web', {
    hosts: ['web.apps.svc.cluster.local'],
    http: [
      {
        match: [{ uri: { prefix: '/v2' } }],
        fault: { abort: { httpStatus: 503, percentage: { value: 100 } } },
      },
      { route: [{ destination: { host: 'web.apps.svc.cluster.local' } }] },
    ],
  }),
];
const mesh = compileMesh(Snapshot.of(objects));

/** The client-side records of one request, as samples (what the cluster would report for it). */
function observed(url: string, metric: string, value: number, line: number): Sample {
  const result = traceRequest(mesh, { from: 'apps/client-0', url });
  const record = result.telemetry.find((r) => r.metric === metric && r.reporter === 'source');
  assert.ok(record, `${url} reports ${metric}: ${JSON.stringify(result.telemetry.map((r) => r.metric))}`);
  return { name: metric, labels: record.labels, value, line };
}

describe('explain', () => {
  test('a TCP connection series is found through the port the service serves', () => {
    const report = explainMetrics(
      mesh,
      [],
      [observed('http://db.apps.svc.cluster.local:5432/', ConnectionsMetric, 7, 1)],
    );
    assert.equal(report.drift.length, 0, JSON.stringify(report.drift));
    assert.equal(report.causes[0]?.series[0]?.metric, ConnectionsMetric);
    assert.match(report.causes[0]?.series[0]?.request ?? '', /:5432\//);
  });

  test('an HTTP series is found through a path the route matches; causes are ordered by their counts', () => {
    const report = explainMetrics(
      mesh,
      [],
      [
        observed('http://web.apps.svc.cluster.local/', RequestsMetric, 5, 1),
        observed('http://web.apps.svc.cluster.local/v2', RequestsMetric, 50, 2),
      ],
    );
    assert.equal(report.drift.length, 0);
    assert.deepEqual(
      report.causes.map((c) => [c.total, c.series[0]?.labels['response_code']]),
      [
        [50, '503'],
        [5, '200'],
      ],
    );
  });

  test('a label the configuration never gives is drift, with the nearest trace and what differs', () => {
    const sample = observed('http://web.apps.svc.cluster.local/', RequestsMetric, 3, 1);
    const report = explainMetrics(
      mesh,
      [],
      [{ ...sample, labels: { ...sample.labels, response_code: '418' } }],
    );
    assert.equal(report.causes.length, 0);
    assert.deepEqual(
      report.drift[0]?.nearest?.differences.map((d) => [d.label, d.observed]),
      [['response_code', '418']],
    );
  });

  test('samples of other metrics are counted and left alone; a series without its client is not traced', () => {
    const report = explainMetrics(
      mesh,
      [],
      [
        { name: 'envoy_cluster_upstream_cx_total', labels: {}, value: 1, line: 1 },
        {
          name: RequestsMetric,
          labels: { destination_service: 'web.apps.svc.cluster.local' },
          value: 1,
          line: 2,
        },
      ],
    );
    assert.equal(report.otherSamples, 1);
    assert.match(report.untraced[0]?.reason ?? '', /no source workload/);
  });

  test('durations are read as Prometheus writes them', () => {
    assert.deepEqual(
      ['30s', '1h', '1h30m', '2d', '500ms'].map(durationSeconds),
      [30, 3600, 5400, 172_800, 0.5],
    );
  });
});

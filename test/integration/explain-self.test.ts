/**
 * explain against its own configuration: the example platform's every report, for a sample of the
 * equivalence check's request matrix (every client to every service, on the ports, paths, methods and
 * headers the configuration names), read back as observed series. Each must be explained, none drift:
 * a series the configuration produces that explain calls drift would tell a user their cluster differs
 * when it does not. Series that name no source workload (a caller outside the mesh) or no destination
 * service (a request no route took) cannot be traced.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Snapshot } from '../../src/load/snapshot.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { traceRequest } from '../../src/mesh/trace.ts';
import { TraceInputError } from '../../src/mesh/trace/request.ts';
import { seriesText, type Sample } from '../../src/load/exposition.ts';
import { requestMatrix } from '../../src/verify/requests.ts';
import { ExplainedMetrics, explainMetrics } from '../../src/explain/explain.ts';

describe('explain on the series its own configuration produces', () => {
  test('the example platform: every series with a client explained, none drift', () => {
    const mesh = compileMesh(Snapshot.of(examplePlatform()));
    const series = new Map<string, Sample>();
    // Every fifth request of the matrix: its clients, services and request variants all take part.
    requestMatrix(mesh, mesh)
      .filter((_, i) => i % 5 === 0)
      .forEach((request) => {
        let result;
        try {
          result = traceRequest(mesh, request);
        } catch (error) {
          if (error instanceof TraceInputError) return;
          throw error;
        }
        for (const r of result.telemetry.filter((t) => ExplainedMetrics.includes(t.metric))) {
          const key = seriesText({ name: r.metric, labels: r.labels });
          if (!series.has(key))
            series.set(key, { name: r.metric, labels: r.labels, value: 1, line: series.size + 1 });
        }
      });
    assert.ok(series.size > 500, `${series.size} series`);
    const report = explainMetrics(mesh, [], [...series.values()]);
    assert.deepEqual(
      report.drift.map((d) => seriesText({ name: d.metric, labels: d.labels })),
      [],
      'drift among series the configuration produces',
    );
    for (const u of report.untraced) assert.match(u.reason, /names no (source workload|destination service)/);
    const explained = report.causes.reduce((n, c) => n + c.series.length, 0);
    assert.equal(explained + report.untraced.length, series.size);
  });
});

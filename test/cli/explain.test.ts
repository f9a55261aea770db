/**
 * `kfmesh explain` on the published seed (../shared/conformance/traces, cases 01 and 02: KServe's
 * VirtualService without and with `mesh`, Istio 1.20). The observed metrics are the cases' published
 * telemetry (what Istio reports, from the case's sources), written as Prometheus exposition text with the
 * client the case names; the configuration is the case's input. Skipped with the reason when ../shared is
 * absent; under CI=true that fails.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../conformance/cases.ts';
import { runKfmesh, writeManifest, writeText } from '../cli-process.ts';
import { exampleBeforeKserve014, ExampleIstioVersion } from '../../src/example/platform.ts';
import { partTestOptions } from '../kube-apiserver.ts';
import {
  loadCase,
  seedAfter,
  seedBefore,
  seedExposition,
  seedMissing,
  type TraceCase,
} from '../seed-metrics.ts';

const before = seedBefore;
const after = seedAfter;
const load = loadCase;
const exposition = (c: TraceCase) => seedExposition(c);

interface Report {
  summary: { explained: number; drift: number; untraced: number };
  causes: { finding?: { code: string; patch?: unknown[] }; series: { labels: Record<string, string> }[] }[];
  drift: {
    labels: Record<string, string>;
    nearest?: { differences: { label: string; observed: string; configured: string }[] };
  }[];
}

function explain(configuration: TraceCase, metrics: TraceCase): Report {
  const run = runKfmesh([
    'explain',
    writeManifest(configuration.input, 'configuration.yaml'),
    '--metrics',
    writeText(exposition(metrics), 'metrics.prom'),
    '--istio-version',
    '1.20',
    '-o',
    'json',
  ]);
  assert.equal(run.code, 0, run.stderr);
  return JSON.parse(run.stdout) as Report;
}

describe('kfmesh explain on the seed', partTestOptions('../shared/conformance/traces', seedMissing), () => {
  test("before the fix: the client's PassthroughCluster series is KFM101's, with the patch that binds mesh", () => {
    const report = explain(load(before), load(before));
    assert.equal(report.summary.explained, 1, JSON.stringify(report.drift));
    const cause = report.causes[0];
    assert.equal(cause?.finding?.code, 'KFM101');
    assert.ok((cause?.finding?.patch ?? []).length > 0);
    assert.equal(cause?.series[0]?.labels['destination_service_name'], 'PassthroughCluster');
  });

  test("after the fix: the client's series to the local gateway is the configuration's, with no finding", () => {
    const report = explain(load(after), load(after));
    assert.deepEqual(report.summary, { explained: 1, drift: 0, untraced: 0, otherSamples: 0 });
    assert.equal(report.causes[0]?.finding, undefined);
  });

  test('drift: the after-fix metrics against the before-fix configuration, which cannot produce them', () => {
    const report = explain(load(before), load(after));
    assert.equal(report.summary.drift, 1);
    assert.ok((report.drift[0]?.nearest?.differences.length ?? 0) > 0);
  });

  test("before and after: the after window recognised as the effect of KFM101's fix", () => {
    const run = runKfmesh([
      'explain',
      writeManifest(load(before).input, 'configuration.yaml'),
      '--metrics',
      writeText(exposition(load(before)), 'before.prom'),
      '--metrics-after',
      writeText(exposition(load(after)), 'after.prom'),
      '--istio-version',
      '1.20',
      '-o',
      'json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const change = JSON.parse(run.stdout) as {
      gone: { labels: Record<string, string> }[];
      appeared: { labels: Record<string, string> }[];
      fixes: { finding: { code: string }; produces: { labels: Record<string, string> }[] }[];
    };
    assert.equal(change.gone[0]?.labels['destination_service_name'], 'PassthroughCluster');
    assert.equal(change.appeared[0]?.labels['destination_service_name'], 'knative-local-gateway');
    assert.deepEqual(
      change.fixes.map((f) => [f.finding.code, f.produces.map((p) => p.labels['destination_service_name'])]),
      [['KFM101', ['knative-local-gateway']]],
    );
  });

  test('a malformed exposition line: exit 2 with the file and line; no --metrics: exit 2', () => {
    const config = writeManifest(load(before).input, 'configuration.yaml');
    const bad = writeText(
      '# TYPE istio_requests_total counter\nistio_requests_total{reporter="source" 3\n',
      'bad.prom',
    );
    const run = runKfmesh(['explain', config, '--metrics', bad]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /bad\.prom:2:\d+: .*expected , or \}/);
    assert.doesNotMatch(run.stderr, /\n\s+at /);
    assert.equal(runKfmesh(['explain', config]).code, 2);
  });
});

/**
 * `kfmesh explain -o json` of the example platform as the README's walkthrough leaves it (the example, then
 * KServe before 0.14's VirtualServices, Istio 1.20: what npm start serves) with its metrics.
 */
const explainExample = () =>
  runKfmesh([
    'explain',
    ...exampleBeforeKserve014().map((d, i) => writeText(d.text, `example-${i}.yaml`)),
    '--istio-version',
    ExampleIstioVersion,
    '--metrics',
    join(projectRoot, 'examples/metrics/example.prom'),
    '-o',
    'json',
  ]);

describe('the example platform and its metrics (examples/metrics/example.prom, what npm start serves)', () => {
  test("every series is the example's but the one written as drift: mTLS where it sends plaintext", () => {
    const run = explainExample();
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as Report;
    assert.deepEqual(
      { ...report.summary, otherSamples: undefined },
      { explained: 12, drift: 1, untraced: 0, otherSamples: undefined },
      'regenerate with node scripts/example-metrics.mjs when the example changes',
    );
    assert.deepEqual(
      report.drift[0]?.nearest?.differences.map((d) => [d.label, d.observed, d.configured]),
      [
        ['source_principal', 'spiffe://cluster.local/ns/ml-team/sa/default', 'unknown'],
        ['connection_security_policy', 'mutual_tls', 'none'],
      ],
    );
  });

  test("series on a service's own ports (ml-pipeline's 8887 and 8888, KFAM's 8081) are found there", () => {
    const run = explainExample();
    const report = JSON.parse(run.stdout) as { causes: { series: { request: string }[] }[] };
    const requests = report.causes.flatMap((c) => c.series.map((s) => s.request));
    // Both of ml-pipeline's ports give the same labels: the first found stands for them.
    assert.ok(requests.some((r) => /ml-pipeline\.kubeflow\.svc\.cluster\.local:888[78]\//.test(r)));
    assert.ok(requests.some((r) => r.includes('profiles-kfam.kubeflow.svc.cluster.local:8081/')));
  });
});

describe('the Istio version explain simulates', () => {
  test("with no Istio image in the input, the one the metrics' istio_build reports, said on stderr", () => {
    const input = writeManifest([
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'apps', labels: { 'istio-injection': 'enabled' } },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'apps' },
        spec: {
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
          },
        },
      },
    ]);
    const metrics = writeText('istio_build{component="pilot",tag="1.26.3"} 1\n', 'metrics.prom');
    const run = runKfmesh(['explain', input, '--metrics', metrics, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal((JSON.parse(run.stdout) as { istioVersion: string }).istioVersion, '1.26');
    assert.match(run.stderr, /simulating Istio 1\.26 \(the metrics' istio_build \(pilot 1\.26\.3\)\)/);
    const given = runKfmesh([
      'explain',
      input,
      '--metrics',
      metrics,
      '-o',
      'json',
      '--istio-version',
      '1.30',
    ]);
    assert.equal((JSON.parse(given.stdout) as { istioVersion: string }).istioVersion, '1.30');
  });
});

/** `kfmesh analyze` through the real program: the seed misconfiguration found by tracing, exit codes, JSON. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runKfmesh, writeText } from '../cli-process.ts';

const example = writeText(runKfmesh(['example']).stdout, 'platform.yaml');
const before = writeText(runKfmesh(['render', example, '--no-mesh-gateway']).stdout, 'before.yaml');

describe('kfmesh analyze', () => {
  test('the example platform (KServe with the mesh binding): no findings, exit 0', () => {
    const run = runKfmesh(['analyze', example]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^0 findings: 0 errors, 0 warnings, 0 infos\n$/);
  });

  test('KServe without mesh (the seed misconfiguration): KFM101 for each InferenceService, with the trace', () => {
    const run = runKfmesh(['analyze', example, before]);
    assert.equal(run.code, 0, run.stderr);
    const headers =
      run.stdout.match(/^.*before\.yaml:\d+:3: warning KFM101: VirtualService \S+ spec\.gateways$/gm) ?? [];
    assert.deepEqual(
      headers.map((h) => h.replace(/^.*KFM101: VirtualService (\S+) .*$/, '$1')),
      [
        'kubeflow-user-example-com/sklearn-iris',
        'ml-team/fraud-scorer',
        'ml-team/income',
        'ml-team/sentiment',
      ],
    );
    assert.match(
      run.stdout,
      /trace: the same at Istio 1\.20: sidecar kubeflow-user-example-com\/curl-inside-mesh \[PassthroughCluster\]/,
    );
    assert.match(run.stdout, /fix: add "mesh" to spec\.gateways/);
    assert.equal(runKfmesh(['analyze', example, before, '--fail-on', 'warning']).code, 1);
  });

  test('-o json: a summary, the rules, the findings with their locations', () => {
    const run = runKfmesh(['analyze', example, before, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as {
      summary: { findings: number; warning: number };
      rules: { code: string }[];
      findings: { code: string; location: string; evidence: string[] }[];
    };
    assert.equal(result.summary.findings, 4);
    assert.equal(result.summary.warning, 4);
    assert.deepEqual(
      result.rules.map((r) => r.code),
      ['KFM101', 'KFM201', 'KFM202', 'KFM203', 'KFM401'],
    );
    assert.match(result.findings[0]?.location ?? '', /before\.yaml:\d+:3$/);
    assert.equal(result.findings[0]?.evidence.length, 2);
  });

  test('usage: bad --fail-on, and SARIF not yet: exit 2', () => {
    const bad = runKfmesh(['analyze', example, '--fail-on', 'sometimes']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--fail-on must be one of error, warning, never/);
    const sarif = runKfmesh(['analyze', example, '-o', 'sarif']);
    assert.equal(sarif.code, 2);
    assert.match(sarif.stderr, /-o sarif is not available in this version yet/);
  });
});

/**
 * `kfmesh analyze` judged by istioctl's own analyzers (`analyzers.AllCombined()` of the pinned Istio, run by
 * the oracle; test/oracle/istio-analyze.ts): on Istio's published analyzer test data and the 16 further
 * cases of ../shared/upstream-tests, the built-in example, the real Kubeflow platforms, the platforms
 * `migrate --to ambient` makes of them, and generated platforms. Every message istioctl gives must be
 * answered by a kfmesh finding naming that analyzer and code on the same object, or be of an analyzer or
 * code src/analyze/istio-analyzers.ts lists with a reason; every istioctl counterpart kfmesh claims must be
 * one istioctl gives. The counts are printed.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { rules } from '../../src/analyze/analyze.ts';
import {
  divergences,
  notApplicable,
  outsideIstioctl,
  uncoveredCodes,
} from '../../src/analyze/istio-analyzers.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { projectRoot } from '../conformance/cases.ts';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import { partTestOptions } from '../kube-apiserver.ts';
import { generatedPlatforms } from './generate.ts';
import { istioAnalyze, judge, type AnalysisComparison } from './istio-analyze.ts';
import { oracleTestOptions } from './istio-oracle.ts';

const shared = resolve(projectRoot, '../shared');
const suites = [
  join(shared, 'conformance/istio-analyzers'),
  join(shared, 'upstream-tests/istio-analyzers-more'),
];

interface IstioCase {
  name: string;
  analyzer: string;
  inputs: string[];
  meshConfig: string | null;
}

/** The mesh configuration a platform holds (ConfigMap istio-system/istio, key mesh) as a file. */
function meshConfigOf(objects: readonly KubeObject[]): string | undefined {
  const map = objects.find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === 'istio' && o.metadata.namespace === 'istio-system',
  );
  const mesh = (map?.['data'] as Record<string, unknown> | undefined)?.['mesh'];
  if (typeof mesh !== 'string') return undefined;
  const path = join(mkdtempSync(join(tmpdir(), 'kfmesh-mesh-')), 'mesh.yaml');
  writeFileSync(path, mesh);
  return path;
}

/** Which divergences some input showed: each listed one must occur (checked at the end). */
const divergencesSeen = new Set<number>();

/** Prints the counts and fails on any difference, writing them all to a file named in the failure. */
function report(name: string, results: readonly AnalysisComparison[]): void {
  const sum = (f: (r: AnalysisComparison) => number) => results.reduce((n, r) => n + f(r), 0);
  for (const r of results) for (const d of r.diverged) divergencesSeen.add(d);
  const missing = results.flatMap((r) => r.missing);
  const extra = results.flatMap((r) => r.extra);
  console.log(
    `${name}: ${sum((r) => r.agreed)} istioctl messages answered, ${sum((r) => r.explained)} of analyzers or codes that do not apply, ` +
      `${sum((r) => r.diverged.length)} where kfmesh parts from istioctl on purpose, ` +
      `${missing.length} missing, ${extra.length} extra`,
  );
  const differences = [...missing.map((m) => `missing ${m}`), ...extra.map((e) => `extra ${e}`)];
  if (differences.length === 0) return;
  // Every difference, in a file: node's assertion output cuts long lists.
  const texts = new Map(results.flatMap((r) => [...r.texts]));
  const file = join(
    mkdtempSync(join(tmpdir(), 'kfmesh-analyzer-differences-')),
    `${name.replace(/\W+/g, '-')}.txt`,
  );
  writeFileSync(
    file,
    differences.map((d) => `${d}${texts.has(d.slice(8)) ? ` (${texts.get(d.slice(8))})` : ''}`).join('\n') +
      '\n',
  );
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, `every difference: ${file}`);
}

function objectsOf(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

describe("kfmesh analyze judged by istioctl's analyzers", oracleTestOptions(), () => {
  test('every analyzer istioctl runs is answered by a kfmesh rule or listed with a reason', () => {
    const istio = istioAnalyze([writeManifest([])]);
    const names = [...new Set(istio.analyzers.map((a) => a.type))];
    assert.ok(names.length >= 37, `${names.length} analyzers`);
    const answered = new Set(rules.flatMap((r) => (r.istio ?? []).map((c) => c.analyzer)));
    const listed = new Set([
      ...notApplicable.map((a) => a.analyzer),
      ...uncoveredCodes.map((c) => c.analyzer),
    ]);
    const unaccounted = names.filter((n) => !answered.has(n) && !listed.has(n));
    assert.deepEqual(unaccounted, [], 'analyzers with neither a kfmesh rule nor a reason');
    // Names kfmesh gives that istioctl does not have are stale.
    const known = new Set([...names, ...outsideIstioctl.map((a) => a.analyzer)]);
    const stale = [...answered, ...listed].filter((n) => !known.has(n)).sort();
    assert.deepEqual(stale, [], 'analyzer names istioctl does not have');
    // Every code claimed is one of Istio's message codes.
    const codes = new Set(istio.catalogue.map((c) => c.code));
    const claimedCodes = rules.flatMap((r) => (r.istio ?? []).map((c) => c.code));
    assert.deepEqual(
      claimedCodes.filter((c) => !codes.has(c)),
      [],
    );
  });

  for (const suite of suites) {
    const file = join(suite, 'cases.yaml');
    const missing = existsSync(file) ? undefined : `${file} is missing`;
    test(
      `Istio's analyzer test data: ${suite.split('/').slice(-2).join('/')}`,
      partTestOptions('../shared', missing),
      async () => {
        // Cases of analyzers that do not apply (src/analyze/istio-analyzers.ts) are left out: some of their
        // inputs are not Kubernetes objects (a MeshNetworks file).
        const inapplicable = new Set(notApplicable.map((a) => a.analyzer));
        const cases = (parse(readFileSync(file, 'utf8')) as IstioCase[]).filter(
          (c) => !inapplicable.has(c.analyzer),
        );
        const results: AnalysisComparison[] = [];
        for (const c of cases)
          results.push(
            await judge(
              `${suite.split('/').pop()}/${c.name}: `,
              c.inputs.map((f) => join(suite, 'testdata', f)),
              c.meshConfig ? join(suite, 'testdata', c.meshConfig) : undefined,
            ),
          );
        const name = suite.split('/').pop() ?? '';
        report(`${cases.length} cases of ${name}`, results);
      },
    );
  }

  test('the built-in example, and migrated to ambient', async () => {
    const example = writeManifest(objectsOf(runKfmesh(['example']).stdout), 'example.yaml');
    const migrated = runKfmesh(['migrate', '--to', 'ambient', example]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const after = writeManifest(objectsOf(migrated.stdout), 'migrated.yaml');
    report('the example and its migration', [
      await judge('example: ', [example]),
      await judge('migrated: ', [after]),
    ]);
  });

  const platforms = {
    'kubeflow-manifests': 'kubeflow-manifests/platform.yaml',
    'kubeflow-v1.10.2': 'releases/kubeflow-v1.10.2.yaml',
    'kubeflow-v1.11.0': 'releases/kubeflow-v1.11.0.yaml',
    'kubeflow-26.03': 'releases/kubeflow-26.03.yaml',
    'kubeflow-26.03-ambient': 'releases/kubeflow-26.03-ambient.yaml',
  };
  for (const [name, file] of Object.entries(platforms)) {
    const path = join(shared, 'real', file);
    test(
      `the real platform ${name}, and migrated to ambient`,
      partTestOptions('the real platforms', existsSync(path) ? undefined : `${path} is missing`),
      async () => {
        const objects = objectsOf(readFileSync(path, 'utf8'));
        const mesh = meshConfigOf(objects);
        const migrated = runKfmesh(['migrate', '--to', 'ambient', path]);
        assert.ok(migrated.code === 0 || migrated.code === 1, migrated.stderr);
        const after = writeManifest(objectsOf(migrated.stdout), `${name}-migrated.yaml`);
        report(name, [
          await judge(`${name}: `, [path], mesh),
          await judge(`${name} migrated: `, [after], mesh),
        ]);
      },
    );
  }

  after(() => {
    // A divergence no input shows is stale (run only when every input ran).
    if (
      !process.env['KFMESH_SHARED_CONFORMANCE'] &&
      existsSync(join(shared, 'real')) &&
      divergencesSeen.size > 0
    )
      assert.deepEqual(
        divergences
          .map((d, i) => (divergencesSeen.has(i) ? undefined : `${d.analyzer} ${d.code}`))
          .filter(Boolean),
        [],
        'divergences that no input shows',
      );
  });

  test('generated platforms', async () => {
    const { objects } = generatedPlatforms(20261207, 100);
    report('100 generated platforms', [
      await judge('generated: ', [writeManifest(objects, 'generated.yaml')]),
    ]);
  });
});

/**
 * istioctl's conventions in `kfmesh analyze`, judged by istioctl's own code (the oracle): the analyzer
 * names `--analyzer` takes are istioctl's, and suppressing a code on an object (by `--suppress` as istioctl
 * spells the resource, by a glob, by the object's `galley.istio.io/analyze-suppress` annotation) drops the
 * same messages on both sides, leaving the rest in agreement.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { rules } from '../../src/analyze/analyze.ts';
import { istioctlNames, schemaValidation } from '../../src/analyze/istio-analyzers.ts';
import { selectRules } from '../../src/analyze/select.ts';
import { parseSuppression } from '../../src/analyze/suppress.ts';
import { loadPaths } from '../../src/load/files.ts';
import type { Finding } from '../../src/model/finding.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { Annotation } from '../../src/model/vocabulary.ts';
import { projectRoot } from '../conformance/cases.ts';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import {
  asStored,
  compareAnalysis,
  istioAnalyze,
  kfmeshAnalyze,
  type IstioMessage,
} from './istio-analyze.ts';
import type { AnalyzeOptions } from '../../src/analyze/analyze.ts';
import { oracleTestOptions } from './istio-oracle.ts';
import { join } from 'node:path';

/** The example platform and the KFM420 example: messages of several codes on objects of the input. */
function inputObjects(): KubeObject[] {
  const example = runKfmesh(['example']).stdout;
  const rule = runKfmesh(['analyze', '-o', 'json', join(projectRoot, 'examples/rules/KFM420.yaml')]);
  assert.ok(rule.code === 0 || rule.code === 1, rule.stderr);
  return parseAllDocuments(example)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null)
    .concat(
      (
        parseAllDocuments(runKfmesh(['render', join(projectRoot, 'examples/rules/KFM420.yaml')]).stdout).map(
          (d) => d.toJS(),
        ) as (KubeObject | null)[]
      ).filter((o): o is KubeObject => o !== null),
    );
}

/** Both sides on the objects, kfmesh with `options`, istioctl with `suppress`; their comparison and outputs. */
async function bothSides(
  objects: readonly KubeObject[],
  options: AnalyzeOptions,
  suppress: readonly string[],
) {
  const loaded = await loadPaths([writeManifest(objects, 'input.yaml')]);
  const { findings, standIns } = await kfmeshAnalyze(loaded, options);
  const istio = istioAnalyze(
    [asStored(loaded.map((l) => l.object)), writeManifest(standIns, 'stand-ins.yaml')],
    {
      suppress,
    },
  );
  return { comparison: compareAnalysis(istio, findings, '', standIns), istio, findings };
}

const on = (m: IstioMessage) => `${m.code} ${m.kind} ${m.namespace ?? ''}/${m.name}`;
const onFinding = (f: Finding, code: string) =>
  `${code} ${f.object.kind} ${f.object.namespace ?? ''}/${f.object.name}`;

describe("istioctl's conventions, judged by istioctl", oracleTestOptions(), () => {
  test("--analyzer takes istioctl's names of the analyzers kfmesh's rules answer", () => {
    const istio = istioAnalyze([writeManifest([])]);
    const answered = new Set(rules.flatMap((r) => (r.istio ?? []).map((c) => c.analyzer)));
    let checked = 0;
    for (const a of istio.analyzers) {
      if (a.type === schemaValidation.type) assert.ok(a.name.startsWith(schemaValidation.prefix), a.name);
      else assert.equal(istioctlNames[a.type] ?? a.type, a.name, `istioctl's name of ${a.type}`);
      if (!answered.has(a.type)) continue;
      const selected = selectRules(rules, [a.name]).rules;
      assert.ok(selected.length > 0, a.name);
      for (const r of selected)
        assert.ok(
          (r.istio ?? []).some((c) => c.analyzer === a.type),
          `${r.code} ${a.name}`,
        );
      checked++;
    }
    assert.ok(checked >= 20, `${checked} analyzer names checked`);
  });

  test('a code suppressed on an object, by flag, glob or annotation, is dropped on both sides', async () => {
    const objects = inputObjects();
    const base = await bothSides(objects, {}, []);
    assert.deepEqual([base.comparison.missing, base.comparison.extra], [[], []]);
    const input = new Set(objects.map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`));
    // One answered message per code, on an object of the input (not a stand-in pod).
    const answered = new Set(base.findings.flatMap((f) => (f.istio ?? []).map((c) => onFinding(f, c.code))));
    const chosen = new Map<string, IstioMessage>();
    for (const m of base.istio.messages)
      if (answered.has(on(m)) && input.has(`${m.kind} ${m.namespace ?? ''}/${m.name}`) && !chosen.has(m.code))
        chosen.set(m.code, m);
    assert.ok(chosen.size >= 3, `${chosen.size} codes to suppress`);
    console.log(`suppressed ${[...chosen.keys()].join(', ')}, each by flag, glob and annotation`);
    for (const m of chosen.values()) {
      const resource = `${m.kind} ${m.namespace ? `${m.namespace}/` : ''}${m.name}`;
      const annotated = objects.map((o) =>
        o.kind === m.kind &&
        o.metadata.name === m.name &&
        (o.metadata.namespace ?? '') === (m.namespace ?? '')
          ? {
              ...o,
              metadata: {
                ...o.metadata,
                annotations: { ...o.metadata.annotations, [Annotation.AnalyzeSuppress]: m.code },
              },
            }
          : o,
      );
      const ways = [
        { how: `--suppress ${m.code}=${resource}`, objects, flag: [`${m.code}=${resource}`] },
        { how: `--suppress ${m.code}=${m.kind} *`, objects, flag: [`${m.code}=${m.kind} *`] },
        { how: `annotation ${m.code} on ${resource}`, objects: annotated, flag: [] },
      ];
      for (const way of ways) {
        const run = await bothSides(way.objects, { suppress: way.flag.map(parseSuppression) }, way.flag);
        assert.deepEqual([run.comparison.missing, run.comparison.extra], [[], []], way.how);
        assert.ok(!run.istio.messages.some((x) => on(x) === on(m)), `istioctl still reports it: ${way.how}`);
        assert.ok(
          !run.findings.some((f) => (f.istio ?? []).some((c) => onFinding(f, c.code) === on(m))),
          `kfmesh still reports it: ${way.how}`,
        );
      }
    }
  });
});

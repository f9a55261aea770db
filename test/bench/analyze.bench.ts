/**
 * Analyzer benchmark: every rule over a Kubeflow platform in sidecar mode of about 10,000 and 50,000
 * objects (Profiles with their owner policy and a notebook, InferenceServices with a predictor, a policy
 * and an ingress route). Reports, from one run, parsing and analysis times, peak memory, and the growth
 * from 10,000 to 50,000 objects (goal: at most 6x). Then the real Kubeflow platform (../shared/real), read
 * from its text and analyzed, against js-yaml reading the same text alone (the YAML floor).
 */
import { existsSync, readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import { toYaml } from '../../src/load/serialize.ts';
import { parseManifests } from '../../src/load/parse.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { analyze } from '../../src/analyze/analyze.ts';
import { medianMs, peakRssMiB, printTable } from './harness.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';

function measure(profiles: number, models: number) {
  const text = toYaml(kubeflowBenchPlatform(profiles, models));
  const load = (): Snapshot => new Snapshot(parseManifests({ name: 'bench.yaml', text }));
  const parseMs = medianMs(load, 3);
  const snapshot = load();
  let findings = 0;
  const analyzeMs = medianMs(() => {
    findings = analyze(snapshot).length;
  }, 3);
  return { objects: snapshot.all().length, findings, parseMs, analyzeMs };
}

const small = measure(540, 1_350);
const large = measure(2_700, 6_750);
printTable(
  'kfmesh analyze: every rule over a Kubeflow platform (median ms)',
  ['objects', 'findings', 'parse + snapshot', 'analyze', 'whole'],
  [small, large].map((m) => [m.objects, m.findings, m.parseMs, m.analyzeMs, m.parseMs + m.analyzeMs]),
);
console.log(
  `\ngrowth of the analysis from ${small.objects} to ${large.objects} objects: ${(large.analyzeMs / small.analyzeMs).toFixed(1)}x`,
);
console.log(
  `growth of the whole run: ${((large.parseMs + large.analyzeMs) / (small.parseMs + small.analyzeMs)).toFixed(1)}x`,
);
console.log(`peak RSS: ${peakRssMiB().toFixed(0)} MiB`);

const realPlatform = new URL('../../../../shared/real/kubeflow-manifests/platform.yaml', import.meta.url);
if (existsSync(realPlatform)) {
  const text = readFileSync(realPlatform, 'utf8');
  const wholeMs = medianMs(() => analyze(new Snapshot(parseManifests({ name: 'platform.yaml', text }))), 5);
  const floorMs = medianMs(() => loadAll(text), 5);
  printTable(
    'kfmesh analyze of the real Kubeflow platform (median ms)',
    ['input MB', 'whole analyze', 'js-yaml load', 'whole / js-yaml load'],
    [[text.length / 1e6, wholeMs, floorMs, wholeMs / floorMs]],
  );
} else console.log(`\n(the real Kubeflow platform is absent: ${realPlatform.pathname})`);

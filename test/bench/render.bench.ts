/**
 * Render benchmark: N InferenceServices (predictor, transformer, explainer; Serverless with a path template,
 * and RawDeployment with HTTPRoutes) in one snapshot. Reports, from one run, the time of the whole render
 * (parse the manifest text, build the snapshot, generate, serialize), the time to serialize the same output
 * alone, their ratio, the YAML floor (js-yaml reading the same input and writing the same output, with no
 * positions, checks or canonical order) and the whole render's ratio to it, peak memory, and the growth
 * from 1,000 to 10,000 objects.
 */
import { dump, loadAll } from 'js-yaml';
import { serialize, toYaml } from '../../src/load/serialize.ts';
import { parseManifests } from '../../src/load/parse.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';
import { medianMs, peakRssMiB, printTable } from './harness.ts';
import { benchPlatform } from './platform.ts';

interface Measure {
  count: number;
  outputObjects: number;
  wholeMs: number;
  serializeMs: number;
  generateMs: number;
  parseMs: number;
  floorMs: number;
}

/** Times each phase with only its own inputs alive, so one phase's data does not tax another's garbage collection. */
function measure(count: number): Measure {
  const text = toYaml(benchPlatform(count));
  const repeats = count >= 10_000 ? 3 : 5;
  const load = (): Snapshot => new Snapshot(parseManifests({ name: 'bench.yaml', text }));
  const wholeMs = medianMs(
    () => serialize(desiredState(load(), { mode: 'sidecar' }).objects, 'yaml'),
    repeats,
  );
  const parseMs = medianMs(load, repeats);
  let snapshot: Snapshot | undefined = load();
  const generateMs = medianMs(() => desiredState(snapshot as Snapshot, { mode: 'sidecar' }), repeats);
  const output = desiredState(snapshot, { mode: 'sidecar' }).objects;
  snapshot = undefined;
  const serializeMs = medianMs(() => serialize(output, 'yaml'), repeats);
  const floorMs = medianMs(() => [loadAll(text), output.map((o) => dump(o)).join('---\n')], repeats);
  return { count, outputObjects: output.length, wholeMs, serializeMs, generateMs, parseMs, floorMs };
}

const small = measure(1_000);
const large = measure(10_000);
printTable(
  'kfmesh render: InferenceServices rendered to YAML (median ms)',
  [
    'InferenceServices',
    'objects out',
    'parse + snapshot',
    'generate',
    'serialize',
    'whole render',
    'whole / serialize',
    'js-yaml floor',
    'whole / floor',
  ],
  [small, large].map((m) => [
    m.count,
    m.outputObjects,
    m.parseMs,
    m.generateMs,
    m.serializeMs,
    m.wholeMs,
    m.wholeMs / m.serializeMs,
    m.floorMs,
    m.wholeMs / m.floorMs,
  ]),
);
printTable(
  'Growth and memory',
  ['measure', 'value'],
  [
    ['whole render 10,000 / 1,000', large.wholeMs / small.wholeMs],
    ['generate only 10,000 / 1,000', large.generateMs / small.generateMs],
    ['peak RSS (MiB)', peakRssMiB()],
  ],
);

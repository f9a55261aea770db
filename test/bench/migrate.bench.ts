/**
 * Migration benchmark: a Kubeflow platform in sidecar mode with P Profiles and M InferenceServices,
 * migrated to ambient mode from YAML text to YAML text. Reports, from one run, the time of each phase
 * (parse and snapshot, migrate, serialize), the whole, the ratio of the whole to reading and writing the
 * same objects, peak memory, and the growth from a tenth of the size to the full size.
 */
import { toYaml } from '../../src/load/serialize.ts';
import { parseManifests } from '../../src/load/parse.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { medianMs, peakRssMiB, printTable } from './harness.ts';
import { kubeflowBenchPlatform } from './kubeflow-platform.ts';

interface Measure {
  profiles: number;
  models: number;
  objectsIn: number;
  objectsOut: number;
  parseMs: number;
  migrateMs: number;
  serializeMs: number;
  wholeMs: number;
}

function measure(profiles: number, models: number, repeats: number): Measure {
  const text = toYaml(kubeflowBenchPlatform(profiles, models));
  const load = (): Snapshot => new Snapshot(parseManifests({ name: 'bench.yaml', text }));
  const wholeMs = medianMs(() => toYaml(migrateToAmbient(load()).objects), repeats);
  const parseMs = medianMs(load, repeats);
  const snapshot = load();
  const migrateMs = medianMs(() => migrateToAmbient(snapshot), repeats);
  const output = migrateToAmbient(snapshot).objects;
  const serializeMs = medianMs(() => toYaml(output), repeats);
  return {
    profiles,
    models,
    objectsIn: snapshot.all().length,
    objectsOut: output.length,
    parseMs,
    migrateMs,
    serializeMs,
    wholeMs,
  };
}

const small = measure(200, 500, 3);
const large = measure(2_000, 5_000, 3);
printTable(
  'kfmesh migrate --to ambient: a Kubeflow platform, YAML in to YAML out (median ms)',
  [
    'Profiles',
    'InferenceServices',
    'objects in',
    'objects out',
    'parse + snapshot',
    'migrate',
    'serialize',
    'whole',
    'whole / (parse + serialize)',
  ],
  [small, large].map((m) => [
    m.profiles,
    m.models,
    m.objectsIn,
    m.objectsOut,
    m.parseMs,
    m.migrateMs,
    m.serializeMs,
    m.wholeMs,
    m.wholeMs / (m.parseMs + m.serializeMs),
  ]),
);
console.log(
  `\ngrowth of the whole from ${small.objectsIn} to ${large.objectsIn} objects: ${(large.wholeMs / small.wholeMs).toFixed(1)}x`,
);
console.log(`peak RSS: ${peakRssMiB().toFixed(0)} MiB`);

/**
 * The folder layers are enforced by lint: fed an import a layer does not allow, or a file cycle, ESLint
 * (with the project's own configuration) reports it; the table itself allows no folder cycle.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ESLint } from 'eslint';
import { projectRoot } from '../conformance/cases.ts';

interface Layer {
  folder: string;
  may: string[];
}

const { layers } = (await import(join(projectRoot, 'scripts/layers.mjs'))) as { layers: Layer[] };
const eslint = new ESLint({ cwd: projectRoot });

/** The rule ids ESLint reports for `code` as if it were the file at `path` (relative to the project). */
async function ruleIds(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(projectRoot, path) });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

test('the layer table lists each folder once, and a folder may only name folders listed before it', () => {
  const seen = new Set<string>();
  for (const { folder, may } of layers) {
    assert.ok(!seen.has(folder), `${folder} twice`);
    for (const m of may)
      assert.ok(seen.has(m.split('/')[0] ?? m), `${folder} may import ${m}, listed after it`);
    seen.add(folder);
  }
});

test('an import a layer does not allow fails lint', async () => {
  // The simulator may not reach up into the migration, nor the page into the simulator.
  assert.ok(
    (
      await ruleIds(
        'src/mesh/probe.ts',
        "import { migrateToAmbient } from '../ambient/migrate.ts';\nexport const f = migrateToAmbient;\n",
      )
    ).includes('import-x/no-restricted-paths'),
  );
  assert.ok(
    (
      await ruleIds(
        'src/ui/probe.ts',
        "import { traceRequest } from '../mesh/trace.ts';\nexport const f = traceRequest;\n",
      )
    ).includes('import-x/no-restricted-paths'),
  );
  // Allowed ones pass: mesh reads the snapshot; the page reads the wire types.
  assert.deepEqual(
    await ruleIds(
      'src/mesh/probe.ts',
      "import { Snapshot } from '../load/snapshot.ts';\nexport const f = Snapshot;\n",
    ),
    [],
  );
  assert.deepEqual(
    await ruleIds(
      'src/ui/probe.ts',
      "import type { MeshGraph } from '../console/wire.ts';\nexport type G = MeshGraph;\n",
    ),
    [],
  );
});

test('an import cycle between files fails lint', async () => {
  // services.ts as it is, plus an import of a module that imports services.ts.
  const path = 'src/mesh/services.ts';
  const text = readFileSync(join(projectRoot, path), 'utf8');
  assert.deepEqual(await ruleIds(path, text), []);
  const cyclic = `import { traceRequest } from './trace.ts';\nexport const cycle = traceRequest;\n${text}`;
  assert.ok((await ruleIds(path, cyclic)).includes('import-x/no-cycle'));
});

test('a cycle of type-only imports fails lint too (ESLint skips those; scripts/import-cycles.mjs does not)', async () => {
  const { importsOf, cyclesOf, importGraph } = (await import(
    join(projectRoot, 'scripts/import-cycles.mjs')
  )) as {
    importsOf: (path: string, text: string) => string[];
    cyclesOf: (graph: Map<string, string[]>) => string[][];
    importGraph: (root: string) => Map<string, string[]>;
  };
  const graph = importGraph(projectRoot);
  assert.deepEqual(cyclesOf(graph), []);
  // services.ts importing a type from a module that (through others) imports services.ts.
  const path = 'src/mesh/services.ts';
  const text = readFileSync(join(projectRoot, path), 'utf8');
  graph.set(path, importsOf(path, `import type { Mesh } from './compiled.ts';\n${text}`));
  assert.ok(cyclesOf(graph).some((cycle) => cycle.includes(path) && cycle.includes('src/mesh/compiled.ts')));
  // ESLint alone does not see it.
  assert.deepEqual(
    await ruleIds(path, `import type { Mesh } from './compiled.ts';\nexport type M = Mesh;\n${text}`),
    [],
  );
});

test('a label key written as a literal outside the vocabulary fails lint', async () => {
  const code =
    "export const waypoint = (labels: Record<string, string>) => labels['istio.io/use-waypoint'];\n";
  assert.ok((await ruleIds('src/mesh/probe.ts', code)).includes('no-restricted-syntax'));
  assert.deepEqual(await ruleIds('src/mesh/probe.ts', "export const v = 'networking.istio.io/v1';\n"), []);
});

test("a Kubernetes object's spec, status or data read untyped fails lint; typed reads pass", async () => {
  const head =
    "import type { KubeObject } from '../model/object.ts';\nimport { specOf } from '../model/specs.ts';\n";
  for (const read of ["o['spec']", 'o.status', "o?.['data']", '(o.spec as { host?: string }).host'])
    assert.ok(
      (await ruleIds('src/mesh/probe.ts', `${head}export const f = (o: KubeObject) => ${read};\n`)).includes(
        'kfmesh/typed-fields',
      ),
      read,
    );
  // Through the accessor, or a typed spec's own `template.spec`: no complaint.
  assert.deepEqual(
    await ruleIds(
      'src/mesh/probe.ts',
      `${head}export const f = (o: KubeObject) => specOf(o, 'apps/Deployment').template?.spec;\n`,
    ),
    [],
  );
});

test('a YAML library imported anywhere but the façade fails lint', async () => {
  for (const path of ['src/mesh/probe.ts', 'src/cli/probe.ts'])
    for (const library of ['yaml', 'js-yaml'])
      assert.ok(
        (await ruleIds(path, `import * as y from '${library}';\nexport const f = y;\n`)).includes(
          'no-restricted-imports',
        ),
        `${library} in ${path}`,
      );
  assert.deepEqual(
    await ruleIds(
      'src/mesh/probe.ts',
      "import { parseYaml } from '../load/yaml.ts';\nexport const f = parseYaml;\n",
    ),
    [],
  );
});

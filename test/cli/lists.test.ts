/**
 * Inputs as kubectl writes them, and outputs that read back: a JSON array, a `kind: List` and YAML
 * documents are the same input; `-o json` of render and migrate is a `v1` `List` that every command
 * reads, through a pipe as well as from a file.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { kfmeshBin, listItems, runKfmesh, writeText } from '../cli-process.ts';

const example = writeText(runKfmesh(['example']).stdout, 'platform.yaml');
const dir = dirname(example);

test('a JSON array, a List and YAML documents of the same objects render the same', () => {
  const objects = listItems(runKfmesh(['render', example, '-o', 'json']).stdout);
  assert.ok(objects.length > 10);
  const fromYaml = runKfmesh(['render', example, '-o', 'json']).stdout;
  const asArray = join(dir, 'array.json');
  const input: unknown[] = parseAllDocuments(runKfmesh(['example']).stdout).map((d) =>
    Array.isArray(d) ? d : d.toJS(),
  );
  writeFileSync(asArray, JSON.stringify(input, null, 1));
  const asList = join(dir, 'list.json');
  writeFileSync(asList, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: input }));
  for (const file of [asArray, asList]) {
    const run = runKfmesh(['render', file, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, fromYaml, file);
  }
});

test('migrate -o json reads back: through a file into verify, through a pipe into analyze', () => {
  const migrated = runKfmesh(['migrate', example, '--to', 'ambient', '-o', 'json']);
  assert.equal(migrated.code, 0, migrated.stderr);
  const file = join(dir, 'migrated.json');
  writeFileSync(file, migrated.stdout);
  const verify = runKfmesh(['verify', '--equivalence', example, file]);
  assert.notEqual(verify.code, 2, verify.stderr);
  assert.match(verify.stdout, /requests/);
  // The same through a shell pipe, as a user writes it.
  const piped = spawnSync(
    'sh',
    [
      '-c',
      `"${process.execPath}" "${kfmeshBin}" migrate "${example}" --to ambient -o json | "${process.execPath}" "${kfmeshBin}" analyze - -o json`,
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  assert.notEqual(piped.status, 2, piped.stderr);
  const direct = runKfmesh(['analyze', file, '-o', 'json']);
  const codes = (stdout: string) =>
    (JSON.parse(stdout) as { findings: { code: string; message: string }[] }).findings.map(
      (f) => `${f.code} ${f.message}`,
    );
  assert.deepEqual(codes(piped.stdout), codes(direct.stdout));
});

test('an array item that is not an object is refused at its own line', () => {
  const bad = writeText(
    '[\n  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},\n  42\n]\n',
    'bad.json',
  );
  const run = runKfmesh(['render', bad]);
  assert.equal(run.code, 2);
  assert.match(run.stderr, /bad\.json:3:\d+: expected a Kubernetes object/);
});

/**
 * The fast YAML reader and writer against the full parser and the library's writer: the same values,
 * positions and errors from every manifest kfmesh is tested with (the real Kubeflow platform, the CRDs,
 * the conformance cases, the test data), and the same values and bytes for random documents built from
 * the scalars YAML 1.1 reads as something other than a string.
 */
import assert from 'node:assert/strict';
import looseAssert from 'node:assert';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { parseManifests, parseWithPositions, type FieldPath } from '../../src/load/parse.ts';
import { splitDocuments } from '../../src/load/documents.ts';
import { writeYaml, yamlWriteOptions } from '../../src/load/yaml-writer.ts';

/** `../shared` beside the project (this file runs from dist/test/property). */
const shared = resolve(fileURLToPath(import.meta.url), '../../../../../shared');

function manifestFiles(folder: string, out: string[] = []): string[] {
  if (!existsSync(folder)) return out;
  for (const entry of readdirSync(folder).sort()) {
    const path = join(folder, entry);
    if (statSync(path).isDirectory()) manifestFiles(path, out);
    else if (/\.(ya?ml|json)$/.test(entry)) out.push(path);
  }
  return out;
}

/** Whether a YAML text reads back (YAML 1.1) as the value (prototypes aside: generated records have none). */
function readsBack(text: string, value: unknown): boolean {
  try {
    looseAssert.deepEqual(parse(text, { version: '1.1' }), value);
    return true;
  } catch {
    return false;
  }
}

/** Every field path of a value, the value's own first. */
function fieldPaths(value: unknown, prefix: FieldPath = [], out: FieldPath[] = []): FieldPath[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => fieldPaths(v, [...prefix, i], out));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) fieldPaths(v, [...prefix, k], out);
  return out;
}

/** Reads a text both ways; the same objects, object positions and field positions, or the same error. */
function assertReadAlike(name: string, text: string, pathsPerObject = 300): void {
  const read = (parse: typeof parseManifests) => {
    try {
      return { objects: parse({ name, text }) };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const fast = read(parseManifests);
  const full = read(parseWithPositions);
  assert.equal(fast.error, full.error, name);
  if (!fast.objects || !full.objects) return;
  assert.equal(fast.objects.length, full.objects.length, name);
  fast.objects.forEach((object, i) => {
    const other = full.objects[i];
    assert.ok(other);
    assert.deepStrictEqual(object.object, other.object, `${name} object ${i}`);
    assert.deepStrictEqual(object.location, other.location, `${name} object ${i}`);
    for (const path of fieldPaths(object.object).slice(0, pathsPerObject))
      assert.deepStrictEqual(
        object.locate(path),
        other.locate(path),
        `${name} object ${i} ${path.join('.')}`,
      );
  });
}

/** Plain scalars that YAML 1.1 reads as null, booleans, numbers, dates or the merge key, and near misses. */
const resolvingScalars = [
  '~',
  'null',
  'Null',
  'NULL',
  'nULL',
  '',
  'y',
  'Y',
  'yes',
  'Yes',
  'YES',
  'yEs',
  'n',
  'N',
  'no',
  'NO',
  'on',
  'On',
  'ON',
  'oN',
  'off',
  'OFF',
  'true',
  'True',
  'TRUE',
  'tRue',
  'false',
  'False',
  'FALSE',
  '0',
  '-0',
  '+12',
  '0755',
  '0o17',
  '0b101',
  '0x1F',
  '0xG',
  '1_000',
  '08',
  '1:20',
  '190:20:30',
  '1:20.5',
  '.5',
  '-.5',
  '1.',
  '1e3',
  '1E-3',
  '6.02e+23',
  '.inf',
  '-.Inf',
  '+.INF',
  '.nan',
  '.NaN',
  '1.2.3',
  '2001-12-14',
  '2001-12-14t21:59:43.10-05:00',
  '2001-12-14 21:59:43.10 -5',
  '2001-1-1',
  '12:30:45',
  '10.0.0.1',
  '10.0.0.0/8',
  '8080',
  '1Gi',
  '100m',
  'v1',
  'istio-system',
  'a b',
  'x:y',
  'http://h:80/p',
];
// prettier-ignore
const awkwardStrings = [
  ' lead', 'trail ', 'a: b', 'a #b', '#c', '- x', '-', '?', '? x', ':x', 'x:', '*.example.com', '&a',
  '!t', '|', '>', "'q'", '"q"', '%p', '@a', '`b', ',', '[', ']', '{', '}', '---', '--- x', '...',
  'a\nb', 'a\n\nb\n', '\n', 'x\n', 'x\n\n', '  x\ny', 'x\n  ', 'tab\tin', '\t', 'ü', '日本', 'é\u0085',
  '\u0007bell', 'a'.repeat(1100), 'line\r\nbreak', '- a\n- b', 'k: v\nk2: v2',
];

const scalar = fc.oneof(
  fc.constantFrom(...resolvingScalars, ...awkwardStrings),
  fc.string(),
  fc.string({ unit: fc.constantFrom('a', ' ', ':', '-', '#', '\n', "'", '"', '0', '.', '*', '\t') }),
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);
const key = fc.oneof(fc.constantFrom(...resolvingScalars, ...awkwardStrings), fc.string());
const value = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(key, tie('node'), { maxKeys: 4 }),
  ),
})).node;

describe('the fast YAML writer', () => {
  test('writes every value byte for byte as the library does', () => {
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 6 }), (object) => {
        const library = stringify(object, yamlWriteOptions);
        // The writer departs from the library only to quote a string the library would write as a
        // block it does not read back as written: the library's text then does not read back, and the
        // writer's does.
        const written = writeYaml(object);
        if (written !== library) {
          assert.ok(!readsBack(library, object), `the library's text reads back:\n${library}`);
          assert.ok(readsBack(written, object), written);
        }
      }),
      { numRuns: 3000 },
    );
  });

  test('quotes a string the library writes as a block its own parser refuses or misreads', () => {
    const refused = { data: { '': [{ '': ' \n\t\n' }] } };
    assert.throws(() => parse(stringify(refused, yamlWriteOptions), { version: '1.1' }));
    assert.equal(writeYaml(refused), 'data:\n  "":\n  - "": " \\n\\t\\n"\n');
    const misread = { a: ' \n' };
    assert.ok(!readsBack(stringify(misread, yamlWriteOptions), misread), 'the library reads it as "\\n"');
    assert.equal(writeYaml(misread), 'a: " \\n"\n');
    for (const object of [refused, misread]) assert.ok(readsBack(writeYaml(object), object));
  });
});

describe('the fast YAML reader', () => {
  test('reads every manifest kfmesh is tested with as the full parser does', (t) => {
    if (!existsSync(shared)) {
      if (process.env['CI'] === 'true') assert.fail(`${shared} is missing`);
      t.skip(`${shared} is missing (../shared beside the project)`);
      return;
    }
    const files = [...manifestFiles(shared), ...manifestFiles('test/data')];
    assert.ok(files.length > 100, `found ${files.length} manifests`);
    let fast = 0;
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      if (splitDocuments(text)?.every((d) => d.read)) fast++;
      assertReadAlike(file, text);
    }
    // The pin: the fast reader is not silently declining everything.
    assert.ok(fast > files.length * 0.9, `${fast} of ${files.length} read the fast way`);
  });

  test('reads plain scalars as YAML 1.1 does, as keys and values, in block and flow style', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...resolvingScalars), fc.constantFrom(...resolvingScalars)), {
          minLength: 1,
          maxLength: 8,
        }),
        (pairs) => {
          const keys = new Set<string>();
          const unique = pairs.filter(([k]) => !keys.has(k) && keys.add(k));
          const block = unique.map(([k, v]) => `  ${k || '""'}: ${v}`).join('\n');
          const flow = unique.map(([, v]) => v).join(', ');
          const text = `apiVersion: v1\nkind: ConfigMap\ndata:\n${block}\nlist: [${flow}]\nitems:\n- ${unique[0]?.[1]}\n`;
          assertReadAlike('in.yaml', text);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('reads what the writer wrote as the full parser does, across documents', () => {
    fc.assert(
      fc.property(
        fc.array(fc.dictionary(key, value, { maxKeys: 5 }), { minLength: 1, maxLength: 4 }),
        (objects) => {
          const text = objects
            .map((o, i) =>
              writeYaml({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` }, data: o }),
            )
            .join('---\n');
          assertReadAlike('in.yaml', text);
          // Copied through JSON as a large input's documents are: the same values.
          assert.deepStrictEqual(
            splitDocuments(text, 0)?.map((d) => d.value),
            splitDocuments(text, Infinity)?.map((d) => d.value),
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  test('copies the documents of a large input through JSON only when that keeps every value', () => {
    const text = [
      'a: 1\nb: [x, "y", on, 0755, 1.5]\nc: {d: null, e: ""}\n',
      'zero: -0\n',
      'n: .nan\ni: -.inf\n',
      'when: 2001-12-14\n',
    ].join('---\n');
    const copied = splitDocuments(text, 0);
    const kept = splitDocuments(text, Infinity);
    assert.ok(copied && kept);
    assert.deepStrictEqual(
      copied.map((d) => d.value),
      kept.map((d) => d.value),
    );
    assert.ok(Object.is((copied[1]?.value as { zero: number }).zero, -0));
  });

  test('leaves aliases, merge keys and directives to the full parser, which limits and reports them', () => {
    const laughs = 'a: &a [x, x]\nb: &b [*a, *a]\n';
    assert.equal(splitDocuments(laughs)?.[0]?.read, false);
    assert.equal(splitDocuments('a: &a {x: 1}\nb:\n  <<: *a\n')?.[0]?.read, false);
    assert.equal(splitDocuments('%YAML 1.1\n---\na: 1\n'), undefined);
    // Markdown emphasis in a description is no alias: the document is read the fast way.
    assert.equal(splitDocuments('description: it does *not* apply && is *new*\n')?.[0]?.read, true);
  });
});

/**
 * Every kind kfmesh reads, with a field of the wrong type, a number just outside its bounds (a port of
 * 0 or 65536, an int32 past 2^31) or an empty list item: whatever the field (chosen among all the fields
 * each kind's schema types, down to five levels) and whatever the command, kfmesh exits 2 and names the
 * position, object and field, and never fails with an internal error (exit 70). The seed is printed;
 * KFMESH_PROPERTY_SEED and KFMESH_FUZZ_RUNS choose another seed and more runs.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { main } from '../../src/cli/main.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { kindsWithSchemas, resolveSchema, schemaOf, type TypeSchema } from '../../src/load/schema.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { projectRoot } from '../conformance/cases.ts';

type Step = string | number;

/** The typed fields of a schema, breadth first, at most `limit` of them, `depth` mappings deep. */
function typedPaths(root: TypeSchema, depth = 5, limit = 400): { path: Step[]; schema: TypeSchema }[] {
  const out: { path: Step[]; schema: TypeSchema }[] = [];
  let level: { path: Step[]; schema: TypeSchema }[] = [{ path: [], schema: root }];
  for (let d = 0; d < depth && level.length > 0 && out.length < limit; d++) {
    const next: { path: Step[]; schema: TypeSchema }[] = [];
    for (const { path, schema } of level) {
      const s = resolveSchema(schema);
      const children: [Step[], TypeSchema][] = [];
      for (const [key, sub] of Object.entries(s.properties ?? {}))
        if (!(path.length === 0 && (key === 'apiVersion' || key === 'kind'))) children.push([[key], sub]);
      if (s.additionalProperties) children.push([['some-key'], s.additionalProperties]);
      for (const [steps, sub] of children) {
        let p = [...path, ...steps];
        let c = resolveSchema(sub);
        if (c.any) continue;
        out.push({ path: p, schema: c });
        if (c.type === 'array' && c.items) {
          p = [...p, 0];
          c = resolveSchema(c.items);
          if (c.any) continue;
          out.push({ path: p, schema: c });
        }
        if (c.type === 'object') next.push({ path: p, schema: c });
      }
    }
    level = next;
  }
  return out.slice(0, limit);
}

/** Values of every type but the schema's, and numbers just outside its bounds. */
function wrongValues(schema: TypeSchema): unknown[] {
  const all: unknown[] = ['text', 7, 1.5, true, ['x'], { k: 'v' }];
  const outside = [schema.minimum, schema.maximum]
    .map((bound, i) => (bound === undefined ? undefined : i === 0 ? bound - 1 : bound + 1))
    .filter((v): v is number => v !== undefined && Number.isSafeInteger(v));
  return [...outside, ...all.filter((v) => wrongType(schema, v))];
}

function wrongType(schema: TypeSchema, v: unknown): boolean {
  if (schema.intOrString) return !(typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v)));
  switch (schema.type) {
    case 'string':
      return typeof v !== 'string';
    case 'integer':
      return !(typeof v === 'number' && Number.isInteger(v));
    case 'number':
      return typeof v !== 'number';
    case 'boolean':
      return typeof v !== 'boolean';
    case 'array':
      return !Array.isArray(v);
    case 'object':
      return typeof v !== 'object' || Array.isArray(v);
    default:
      return false;
  }
}

/** A copy of the object with `value` at `path`, creating the mappings and lists on the way. */
function withValue(object: KubeObject, path: Step[], value: unknown): KubeObject {
  const copy = structuredClone(object) as unknown as Record<string, unknown>;
  let at: Record<string | number, unknown> = copy;
  path.forEach((step, i) => {
    if (i === path.length - 1) {
      at[step] = value;
      return;
    }
    const wantsList = typeof path[i + 1] === 'number';
    const current = at[step];
    const fits = wantsList
      ? Array.isArray(current)
      : typeof current === 'object' && current !== null && !Array.isArray(current);
    if (!fits) at[step] = wantsList ? [] : {};
    at = at[step] as Record<string | number, unknown>;
    if (wantsList && (at as unknown as unknown[]).length === 0) (at as unknown as unknown[]).push({});
  });
  return copy as unknown as KubeObject;
}

const platform = examplePlatform();
/** One object of every kind with a schema: the example's where it has one, else a bare one. */
const seeds: KubeObject[] = kindsWithSchemas().map((key) => {
  const kind = key.slice(key.lastIndexOf('/') + 1);
  const apiVersion = key.slice(0, key.lastIndexOf('/'));
  return (
    platform.find((o) => o.apiVersion === apiVersion && o.kind === kind) ?? {
      apiVersion,
      kind,
      metadata: { name: 'seeded', namespace: 'kubeflow-user-example-com' },
    }
  );
});

/** The example platform as YAML without one object (kept per object: stringifying is most of a run). */
const others = new Map<KubeObject, string>();
function othersText(seed: KubeObject): string {
  let text = others.get(seed);
  if (text === undefined) {
    text = platform
      .filter((o) => o !== seed)
      .map((o) => stringify(o))
      .join('---\n');
    others.set(seed, text);
  }
  return text;
}

const commands: string[][] = [
  ['render', '-'],
  ['render', '-', '--mode', 'ambient'],
  ['analyze', '-'],
  ['migrate', '-', '--to', 'ambient'],
  ['trace', '-', '--from', 'external', '--url', 'http://sklearn-iris.kubeflow-user-example-com.example.com/'],
  ['verify', '-', '--cases', join(projectRoot, 'examples/ambient-cases.yaml')],
];

const mutation = fc
  .constantFrom(...seeds)
  .chain((seed) => {
    const schema = schemaOf(seed.apiVersion, seed.kind);
    const paths = schema ? typedPaths(schema) : [];
    return fc.record({
      seed: fc.constant(seed),
      field: fc.constantFrom(...paths),
      pick: fc.nat(),
      command: fc.constantFrom(...commands),
    });
  })
  .map(({ seed, field, pick, command }) => {
    // A list item may also be empty (a `-` with nothing after it), which the API server refuses too.
    const values = [...wrongValues(field.schema), ...(typeof field.path.at(-1) === 'number' ? [null] : [])];
    return { seed, path: field.path, value: values[pick % values.length], command };
  });

describe('wrong-typed fields in every kind kfmesh reads', () => {
  test('every kind has typed fields to try', () => {
    for (const seed of seeds) {
      const schema = schemaOf(seed.apiVersion, seed.kind);
      assert.ok(schema && typedPaths(schema).length > 0, `${seed.apiVersion} ${seed.kind}`);
    }
  });

  const seed = Number(process.env['KFMESH_PROPERTY_SEED'] ?? 20261207);
  const numRuns = Number(process.env['KFMESH_FUZZ_RUNS'] ?? 200);
  test(`exit 2 with file:line:column, object and field; never an internal error (seed ${seed}, ${numRuns} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(mutation, async ({ seed, path, value, command }) => {
        const changed = withValue(seed, path, value);
        const text = `${othersText(seed)}---\n${stringify(changed)}`;
        let stderr = '';
        const code = await main(command, {
          stdout: () => undefined,
          stderr: (t) => (stderr += t),
          readStdin: async () => text,
        });
        assert.equal(
          code,
          2,
          `${command.join(' ')}: ${seed.kind} ${path.join('.')} = ${JSON.stringify(value)}\n${stderr}`,
        );
        assert.match(stderr, /^kfmesh: <stdin>:\d+:\d+: \S+ [^:]*: [^:]+: expected /, stderr);
      }),
      { numRuns, seed },
    );
  });
});

/**
 * The types of the fields of every kind kfmesh reads from files, checked as an object is loaded: a
 * field of the wrong type (a Service's `ports` as a mapping, a DestinationRule's `host: 5`) is an input
 * error at its position, instead of a crash, or a silent misreading, wherever the field is used later.
 *
 * The types come from `schemas.json`, built with the program (scripts/build-schemas.mjs) from the real
 * CRDs and the Kubernetes models of @kubernetes/client-node. What is checked is what Kubernetes' own
 * structural schemas say about types: objects, lists, strings, numbers, integers, booleans,
 * int-or-string, maps, and fields that hold anything; and numbers' bounds (a schema's minimum and
 * maximum, an int32's range, and the port ranges Kubernetes checks in code). Required fields, enums and
 * string formats are not checked here: the readers of the fields do that where it matters. A null field counts as absent, as the
 * API server prunes nulls; a null list item is a problem, as the API server refuses it. Kinds without a schema (Knative, Notebooks) are not checked here.
 *
 * Checked where a snapshot is made (`snapshot.ts`), for every source: files, a cluster, the controller's
 * cache, generated objects. A wrong-typed object is left out of the snapshot and listed in its problems.
 *
 * Written by hand rather than with a JSON Schema validator: the check is a small walk over a small
 * subset of JSON Schema, compiling the InferenceService's 400 KB schema with Ajv cost a CLI run more than
 * all its other work, and the walk gives the failing path as the key list the YAML positions need.
 */
import { readFileSync } from 'node:fs';
import { describeValue, type FieldPath } from './parse.ts';

/** A structural schema: only what it says about types. */
export interface TypeSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, TypeSchema>;
  items?: TypeSchema;
  additionalProperties?: TypeSchema;
  intOrString?: boolean;
  any?: boolean;
  /** Bounds of a number (of the number form of an int-or-string). */
  minimum?: number;
  maximum?: number;
  /** A shared definition, by name. */
  ref?: string;
}

interface Schemas {
  kinds: Record<string, TypeSchema>;
  definitions: Record<string, TypeSchema>;
}

let loaded: Schemas | undefined;

function schemas(): Schemas {
  if (!loaded) {
    const file = new URL('./schemas.json', import.meta.url);
    try {
      loaded = JSON.parse(readFileSync(file, 'utf8')) as Schemas;
    } catch (error) {
      throw new Error(
        `the field types are not built (${file.pathname}): run npm run build (${String(error)})`,
      );
    }
  }
  return loaded;
}

/** The schema of a kind (`apiVersion` as written, `Kind`), or undefined when kfmesh has none. */
/** Every `apiVersion/Kind` that has a schema. */
export function kindsWithSchemas(): string[] {
  return Object.keys(schemas().kinds).sort();
}

export function schemaOf(apiVersion: string, kind: string): TypeSchema | undefined {
  return schemas().kinds[`${apiVersion}/${kind}`];
}

/** The first field of `value` whose type the schema contradicts. */
export interface TypeProblem {
  path: FieldPath;
  message: string;
}

/** Checks an object against its kind's schema; the first field of the wrong type, or undefined. */
export function typeProblem(
  object: Record<string, unknown>,
  apiVersion: string,
  kind: string,
): TypeProblem | undefined {
  const schema = schemaOf(apiVersion, kind);
  return schema ? check(object, schema, []) : undefined;
}

/** A schema with its references followed. */
export function resolveSchema(schema: TypeSchema): TypeSchema {
  let s = schema;
  while (s.ref !== undefined) {
    const next = schemas().definitions[s.ref];
    if (!next) throw new Error(`schemas.json: no definition ${s.ref}`);
    s = next;
  }
  return s;
}

function check(value: unknown, given: TypeSchema, path: (string | number)[]): TypeProblem | undefined {
  if (value === null || value === undefined) return undefined;
  const schema = resolveSchema(given);
  if (schema.any) return undefined;
  if (schema.intOrString) {
    if (typeof value === 'string') return undefined;
    return typeof value === 'number' && Number.isInteger(value)
      ? outOfRange(schema, path, value)
      : wrong(path, 'an integer or a string', value);
  }
  switch (schema.type) {
    case 'string':
      // YAML 1.1 reads an unquoted timestamp (`creationTimestamp: 2024-05-01T10:00:00Z`) as a date.
      return typeof value === 'string' || value instanceof Date ? undefined : wrong(path, 'a string', value);
    case 'boolean':
      return typeof value === 'boolean' ? undefined : wrong(path, 'true or false', value);
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value)
        ? outOfRange(schema, path, value)
        : wrong(path, 'an integer', value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
        ? outOfRange(schema, path, value)
        : wrong(path, 'a number', value);
    case 'array': {
      if (!Array.isArray(value)) return wrong(path, 'a list', value);
      if (!schema.items) return undefined;
      for (let i = 0; i < value.length; i++) {
        // An empty item (a `-` with nothing after it) is not absent: the API server refuses the list.
        if (value[i] === null)
          return { path: [...path, i], message: 'expected a list item, got an empty one (null)' };
        const problem = check(value[i], schema.items, [...path, i]);
        if (problem) return problem;
      }
      return undefined;
    }
    case 'object': {
      if (typeof value !== 'object' || Array.isArray(value)) return wrong(path, 'a mapping', value);
      for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
        const sub = schema.properties?.[key] ?? schema.additionalProperties;
        if (!sub) continue;
        const problem = check(field, sub, [...path, key]);
        if (problem) return problem;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** A number outside its schema's bounds. */
function outOfRange(schema: TypeSchema, path: (string | number)[], value: number): TypeProblem | undefined {
  const { minimum = -Infinity, maximum = Infinity } = schema;
  if (value >= minimum && value <= maximum) return undefined;
  const range =
    minimum === -Infinity
      ? `at most ${maximum}`
      : maximum === Infinity
        ? `at least ${minimum}`
        : `from ${minimum} to ${maximum}`;
  const noun = schema.type === 'number' ? 'a number' : 'an integer';
  return { path, message: `expected ${noun} ${range}, got ${value}` };
}

function wrong(path: (string | number)[], expected: string, value: unknown): TypeProblem {
  return { path, message: `expected ${expected}, got ${describeValue(value)}` };
}

/** A field path as people write it: `spec.ports[0].port`. */
export function formatFieldPath(path: FieldPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/**
 * Deterministic output: `apiVersion`, `kind`, `metadata` (`name`, `namespace` first), `spec`, then the
 * other keys sorted; keys inside sorted; lists keep their order (route order is meaning). The same objects
 * always give the same bytes.
 */
import { compareStrings, isPlainObject, type KubeObject } from '../model/object.ts';
import { writeYaml } from './yaml-writer.ts';

const topOrder = ['apiVersion', 'kind', 'metadata', 'spec', 'data'];
const metadataOrder = ['name', 'namespace'];

/** A copy of the object with keys in canonical order and undefined values left out. */
export function canonicalObject(object: KubeObject): KubeObject {
  return orderKeys(object, topOrder, (key, value) =>
    key === 'metadata' ? orderKeys(value, metadataOrder) : sortDeep(value),
  ) as KubeObject;
}

function orderKeys(
  value: unknown,
  first: readonly string[],
  child: (key: string, value: unknown) => unknown = (_k, v) => sortDeep(v),
): unknown {
  if (!isPlainObject(value)) return sortDeep(value);
  const keys = Object.keys(value).sort((a, b) => {
    const ia = first.indexOf(a);
    const ib = first.indexOf(b);
    if (ia >= 0 || ib >= 0) return (ia < 0 ? first.length : ia) - (ib < 0 ? first.length : ib);
    return compareStrings(a, b);
  });
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const v = value[key];
    if (v === undefined) continue;
    out[key] = child(key, v);
  }
  return out;
}

/** The value as JSON with every object's keys sorted: equal for values that differ only in key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortDeep(value));
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortDeep);
  if (isPlainObject(value)) return orderKeys(value, []);
  return value;
}

/** Output formats of generated objects. */
export const OutputFormat = { Yaml: 'yaml', Json: 'json' } as const;
export type OutputFormat = (typeof OutputFormat)[keyof typeof OutputFormat];

/**
 * YAML that Kubernetes reads back the same: YAML 1.1 quoting (`"on"`, `"0775"`), no line folding
 * (`yaml-writer.ts` writes it as the `yaml` library does, faster).
 */
export function toYaml(objects: readonly KubeObject[]): string {
  return objects.map((o) => writeYaml(canonicalObject(o))).join('---\n');
}

/**
 * A `v1` `List` of the objects, as `kubectl get -o json` prints several (so kubectl, jq scripts and kfmesh
 * itself read it back), two-space indented, with a final newline.
 */
export function toJson(objects: readonly KubeObject[]): string {
  const list = { apiVersion: 'v1', kind: 'List', metadata: {}, items: objects.map(canonicalObject) };
  return `${JSON.stringify(list, null, 2)}\n`;
}

/** Serializes objects in the given format. */
export function serialize(objects: readonly KubeObject[], format: OutputFormat): string {
  return format === OutputFormat.Json ? toJson(objects) : toYaml(objects);
}

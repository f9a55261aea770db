/**
 * The inputs a reader of the platform's settings declares: which ConfigMaps it reads. Each reader
 * (KServe's, Knative's, the notebook and profile controllers', the mesh config, kfmesh's own) exports its
 * declarations and finds its ConfigMap through them, so what a reader reads and what the controller
 * watches for it are one list (docs/semantics.md, Kubeflow).
 */
import { groupOf, type KubeObject } from './object.ts';

/** A ConfigMap a reader reads. */
export interface ConfigMapInput {
  /** Its name, or with `prefix` the start of its name (kustomize appends a hash to generated ConfigMaps). */
  readonly name: string;
  readonly prefix?: boolean;
  /** The namespace whose ConfigMap is read when several match (else the first by namespace and name). */
  readonly namespace: string;
  /** Who reads it, in a few words, for messages and docs. */
  readonly reader: string;
}

/** Is this object the ConfigMap the input names (by name or prefix, in any namespace)? */
export function isConfigMapOf(input: ConfigMapInput, object: KubeObject): boolean {
  if (object.kind !== 'ConfigMap' || groupOf(object.apiVersion) !== '') return false;
  const name = object.metadata.name ?? '';
  return input.prefix ? name.startsWith(input.name) : name === input.name;
}

/** Is this object one of the ConfigMaps any of these inputs names? */
export function isConfigMapOfAny(inputs: readonly ConfigMapInput[], object: KubeObject): boolean {
  return inputs.some((input) => isConfigMapOf(input, object));
}

/** Every ConfigMap of `configMaps` the input names, in their order. */
export function configMapsOf(input: ConfigMapInput, configMaps: readonly KubeObject[]): KubeObject[] {
  return configMaps.filter((c) => isConfigMapOf(input, c));
}

/**
 * The ConfigMap a reader reads: of those the input names, the first in its namespace, else the first
 * (`configMaps` in snapshot order: by namespace, then name).
 */
export function configMapOf(
  input: ConfigMapInput,
  configMaps: readonly KubeObject[],
): KubeObject | undefined {
  const all = configMapsOf(input, configMaps);
  return all.find((c) => c.metadata.namespace === input.namespace) ?? all[0];
}

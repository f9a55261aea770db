/** Names and metadata KServe derives from an InferenceService. */
import type { Component, InferenceService } from '../model/inference-service.ts';
import type { ObjectMeta } from '../model/object.ts';
import { ownerReferenceTo } from '../model/ownership.ts';
import { Annotation } from '../model/vocabulary.ts';

export const ClusterLocalVisibility = 'cluster-local';

/** The Service of a component: `<isvc>-<component>`, or `<isvc>-<name>-predictor` for a named predictor. */
export function componentServiceName(isvc: InferenceService, component: Component): string {
  const name = isvc.metadata.name ?? '';
  if (component === 'predictor' && isvc.spec.predictor?.name)
    return `${name}-${isvc.spec.predictor.name}-predictor`;
  return `${name}-${component}`;
}

/** The component that receives prediction traffic: the transformer when there is one, else the predictor. */
export function entryComponent(isvc: InferenceService): Component {
  return isvc.spec.transformer ? 'transformer' : 'predictor';
}

/** True when the InferenceService carries the stop annotation. */
export function isStopped(isvc: InferenceService): boolean {
  return isvc.metadata.annotations?.[Annotation.Stop] === 'true';
}

/** A copy of a string map without the listed keys (KServe's `utils.Filter` with a disallow list). */
export function withoutKeys(
  map: Readonly<Record<string, string>> | undefined,
  disallowed: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map ?? {})) if (!disallowed.includes(k)) out[k] = v;
  return out;
}

/** Metadata of a generated object in the InferenceService's namespace. */
export function childMeta(
  isvc: InferenceService,
  name: string,
  labels?: Record<string, string>,
  annotations?: Record<string, string>,
): ObjectMeta {
  const meta: ObjectMeta = { name, namespace: isvc.metadata.namespace ?? '' };
  if (labels && Object.keys(labels).length > 0) meta.labels = labels;
  if (annotations && Object.keys(annotations).length > 0) meta.annotations = annotations;
  // KServe sets a controller ownerReference on what it creates (kfmesh can when the input gives the uid).
  const owners = ownerReferenceTo(isvc, isvc.metadata.namespace);
  if (owners) meta.ownerReferences = owners;
  return meta;
}

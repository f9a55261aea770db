/**
 * Which owners a change concerns: the event-to-owner mapping of the controller. An owner is what a
 * group of kfmesh's objects is for (an InferenceService, a Profile, a Notebook, a namespace's labels); a
 * change to anything one reads queues it, and so does a change to one of the objects kfmesh made for it.
 */
import type { KubeObject } from '../model/object.ts';
import { GroupKind } from '../model/vocabulary.ts';
import { ownerKinds, type ObjectCache } from './cache.ts';
import { isManaged, isPlatformConfig, ownerKey, ownerNamespace, ownerOf, type OwnerKey } from './desired.ts';
import type { Renders } from './renders.ts';

/**
 * Every owner kfmesh has or had objects for: the InferenceServices, Profiles and Notebooks, the owners
 * of managed objects, and the owners the last renders have objects for.
 */
export function allOwners(cache: ObjectCache, renders: Renders): OwnerKey[] {
  return [...new Set([...cache.managedOwners(), ...cache.ownersCached(), ...renders.owners()])].sort();
}

/**
 * The owners to reconcile after an object of `kindKey` changed (`inputChanged`: in what the render reads,
 * not only in kfmesh's own output); `all` lists every owner.
 */
export function ownersConcerned(
  kindKey: string,
  object: KubeObject,
  inputChanged: boolean,
  all: () => OwnerKey[],
): OwnerKey[] {
  const inNamespace = (namespace: string) => all().filter((owner) => ownerNamespace(owner) === namespace);
  if (kindKey === '/Namespace') {
    // A namespace's labels concern the owners in it (its mode) and the namespace's own labels.
    const namespace = object.metadata.name ?? '';
    return [...(inputChanged ? inNamespace(namespace) : []), ownerKey('Namespace', undefined, namespace)];
  }
  if (kindKey === '/ConfigMap') return inputChanged && isPlatformConfig(object) ? all() : [];
  const out: OwnerKey[] = [];
  if (ownerKinds.has(kindKey) || kindKey === GroupKind.Notebook)
    out.push(ownerKey(object.kind, object.metadata.namespace, object.metadata.name ?? ''));
  else if (inputChanged && object.metadata.namespace)
    // Something the owners of the namespace are rendered from (a model's predictor Service, a waypoint).
    out.push(...inNamespace(object.metadata.namespace));
  const owner = isManaged(object) ? ownerOf(object) : undefined;
  if (owner) out.push(owner);
  return out;
}

/** Is an object in the namespaces the controller watches (all when `namespaces` is empty)? */
export function inScope(object: KubeObject, namespaces: readonly string[]): boolean {
  if (namespaces.length === 0) return true;
  const ns = object.metadata.namespace ?? (object.kind === 'Namespace' ? object.metadata.name : undefined);
  if (object.kind === 'Profile') return namespaces.includes(object.metadata.name ?? '');
  return ns === undefined || namespaces.includes(ns) || object.kind === 'ConfigMap';
}

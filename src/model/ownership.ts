/**
 * How kfmesh marks what it generates: a controller ownerReference to the source object when the API server
 * allows one (same namespace, or a cluster-scoped owner, and the source's uid is known), and for objects
 * kfmesh itself invents, labels naming kfmesh and the source.
 */
import type { KubeObject, OwnerReference } from './object.ts';
import { Label, ManagedByValue } from './vocabulary.ts';

/** The controller ownerReference to `owner` for a child in `childNamespace`, when one can exist. */
export function ownerReferenceTo(
  owner: KubeObject,
  childNamespace: string | undefined,
): OwnerReference[] | undefined {
  const uid = owner.metadata.uid;
  const ownerNamespace = owner.metadata.namespace;
  if (!uid) return undefined;
  if (ownerNamespace && ownerNamespace !== childNamespace) return undefined;
  return [
    {
      apiVersion: owner.apiVersion,
      kind: owner.kind,
      name: owner.metadata.name ?? '',
      uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ];
}

/** The labels of an object kfmesh invents for `owner`: managed-by and the owner's kind, namespace and name. */
export function managedByLabels(owner: KubeObject): Record<string, string> {
  const labels: Record<string, string> = {
    [Label.ManagedBy]: ManagedByValue,
    [Label.OwnerKind]: owner.kind,
  };
  if (owner.metadata.namespace) labels[Label.OwnerNamespace] = owner.metadata.namespace;
  labels[Label.OwnerName] = owner.metadata.name ?? '';
  return labels;
}

/** Metadata of an object kfmesh invents: its labels, and the ownerReference when one can exist. */
export function inventedMeta(
  owner: KubeObject,
  name: string,
  namespace: string,
  extraLabels: Record<string, string> = {},
): KubeObject['metadata'] {
  const meta: KubeObject['metadata'] = {
    name,
    namespace,
    labels: { ...extraLabels, ...managedByLabels(owner) },
  };
  const owners = ownerReferenceTo(owner, namespace);
  if (owners) meta.ownerReferences = owners;
  return meta;
}

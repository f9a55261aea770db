/**
 * What the controller may do in a cluster, from the same lists its code works from: it lists and
 * watches every kind it reads, applies and prunes only the kinds it renders (Namespaces are only ever
 * labelled, never deleted), writes the status of InferenceServices and Profiles (and may block their
 * deletion on the objects it owns for them, which takes their `finalizers`), records Events, and
 * holds its Lease. The ClusterRole and Role in deploy/ must grant exactly this (a test compares them).
 */
import { clusterKinds } from '../load/cluster.ts';
import { GroupKind } from '../model/vocabulary.ts';

/** The kinds the controller applies (`group/Kind`). */
export const appliedKinds: readonly string[] = [
  '/Namespace',
  '/Service',
  GroupKind.VirtualService,
  GroupKind.AuthorizationPolicy,
  GroupKind.Gateway,
  GroupKind.HTTPRoute,
  GroupKind.Ingress,
];

/** Kinds it applies to existing objects only (labels) and never creates or deletes. */
export const neverDeleted: readonly string[] = ['/Namespace'];

/** The status subresources it writes (`MeshReady`). */
export const statusWritten: readonly string[] = [GroupKind.InferenceService, GroupKind.Profile];

/** One permission: `group/resource` and a verb. */
export interface Permission {
  group: string;
  resource: string;
  verb: string;
  /** Only in the controller's own namespace (the Lease). */
  namespaced?: boolean;
}

/** The resource name of a kind, as RBAC and URLs spell it. */
function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower === 'endpoints') return lower;
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (lower.endsWith('s')) return `${lower}es`;
  return `${lower}s`;
}

/** Every permission the controller uses. */
export function requiredPermissions(): Permission[] {
  const out: Permission[] = [];
  for (const [group, kinds] of Object.entries(clusterKinds))
    for (const kind of kinds) {
      const resource = pluralOf(kind);
      for (const verb of ['list', 'watch']) out.push({ group, resource, verb });
      const key = `${group}/${kind}`;
      if (appliedKinds.includes(key)) {
        // Server-side apply is a patch, and a create when the object doesn't exist yet.
        out.push({ group, resource, verb: 'patch' });
        if (!neverDeleted.includes(key)) {
          out.push({ group, resource, verb: 'create' });
          out.push({ group, resource, verb: 'delete' });
        }
      }
      if (statusWritten.includes(key)) {
        out.push({ group, resource: `${resource}/status`, verb: 'patch' });
        // Owner references with blockOwnerDeletion need the right to set the owner's finalizers.
        out.push({ group, resource: `${resource}/finalizers`, verb: 'update' });
      }
    }
  out.push({ group: '', resource: 'events', verb: 'create' });
  for (const verb of ['get', 'create', 'update'])
    out.push({ group: 'coordination.k8s.io', resource: 'leases', verb, namespaced: true });
  return out;
}

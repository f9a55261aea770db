/**
 * What NetworkPolicy peers admit, as the identities an AuthorizationPolicy can name (docs/semantics.md,
 * The migration): a namespace for a peer that takes a whole namespace, the principals of the service
 * accounts whose every pod a pod selector takes, and IP blocks; and the DENY rule that refuses everyone
 * else. Shared by the phases that move NetworkPolicy decisions to a waypoint (waypoint-sources.ts) and to
 * ztunnel (hbone-ports.ts).
 */
import type { NetworkPolicyPeer } from '../model/specs.ts';
import { Label, GroupKind } from '../model/vocabulary.ts';
import { principalOf, accountOfPrincipal } from '../model/identity.ts';
import type { KubeObject } from '../model/object.ts';
import { Snapshot } from '../load/snapshot.ts';
import { NetworkPolicies } from '../mesh/network-policy.ts';
import type { Step } from './context.ts';
import { action, changed, dropped, type Note } from './migration-report.ts';

/** Who a port admits, as identities a waypoint or ztunnel checks: any of these namespaces, principals or IP blocks. */
export interface Admitted {
  /** Every pod of the cluster (a peer selecting all namespaces and all pods). */
  everyone: boolean;
  namespaces: Set<string>;
  principals: Set<string>;
  ipBlocks: Set<string>;
}

/** A source a pod selector can pick: a pod of the mesh, or a converted gateway's pods. */
export interface Source {
  namespace: string;
  labels: Readonly<Record<string, string>>;
  principal: string;
}

/** The pods of the mesh and the converted gateways' pods, as sources a pod selector may pick. */
export function sourcesOf(m: Step<'input' | 'gateways'>): Source[] {
  const out: Source[] = m.input.mesh.workloads.map((w) => ({
    namespace: w.namespace,
    labels: w.labels,
    principal: principalOf(w, m.input.trustDomain),
  }));
  for (const g of m.gateways.newGateways.values())
    out.push({ namespace: g.namespace, labels: { [Label.GatewayName]: g.name }, principal: g.principal });
  return out;
}

/** The identities a port's peers admit; what identities cannot say is left out, with a note. */
export function identitiesOf(
  policies: NetworkPolicies,
  peers: { policy: string; policyNamespace: string; peer: NetworkPolicyPeer }[],
  sources: readonly Source[],
  note: (policy: string, note: (deny: string) => Note) => void,
): Admitted {
  const admitted: Admitted = {
    everyone: false,
    namespaces: new Set(),
    principals: new Set(),
    ipBlocks: new Set(),
  };
  for (const { policy, policyNamespace, peer } of peers) {
    if (peer.ipBlock) {
      if ((peer.ipBlock.except ?? []).length === 0) admitted.ipBlocks.add(peer.ipBlock.cidr ?? '');
      else
        note(policy, (deny) =>
          dropped(
            'spec.ingress',
            `the ipBlock ${peer.ipBlock?.cidr ?? ''} has exceptions, which AuthorizationPolicy ${deny} cannot state with the other peers: its addresses are refused at the waypoint`,
          ),
        );
      continue;
    }
    const pods = peer.podSelector ?? {};
    if (peer.namespaceSelector && isEmpty(peer.namespaceSelector) && isEmpty(pods)) {
      admitted.everyone = true;
      continue;
    }
    const namespaces = peer.namespaceSelector
      ? policies.namespacesSelected(peer.namespaceSelector)
      : [policyNamespace];
    if (peer.namespaceSelector && !byNameOnly(peer.namespaceSelector))
      note(policy, (deny) =>
        action(
          'spec.ingress',
          `selects namespaces by label; AuthorizationPolicy ${deny} admits the ones labelled so now (${namespaces.join(', ') || 'none yet'}) at the waypoint: add a namespace labelled so later (a new Profile) to its notNamespaces, or the waypoint refuses it`,
        ),
      );
    if (isEmpty(pods)) {
      namespaces.forEach((ns) => admitted.namespaces.add(ns));
      continue;
    }
    // A pod selector: the principals of the service accounts whose every pod it takes.
    const inScope = sources.filter((s) => namespaces.includes(s.namespace));
    for (const principal of new Set(inScope.map((s) => s.principal))) {
      const withIt = inScope.filter((s) => s.principal === principal);
      const taken = withIt.filter((s) => policies.selectorMatches(pods, s.labels));
      if (taken.length === withIt.length) admitted.principals.add(principal);
      else if (taken.length > 0)
        note(policy, (deny) =>
          dropped(
            'spec.ingress',
            `admits only some pods of ${principal}; a waypoint tells sources apart by identity, so AuthorizationPolicy ${deny} refuses that identity (give those pods a service account of their own)`,
          ),
        );
    }
  }
  return admitted;
}

/** Whether a namespace selector names namespaces only (by the name label), so later namespaces cannot join. */
function byNameOnly(selector: NonNullable<NetworkPolicyPeer['namespaceSelector']>): boolean {
  const labels = Object.keys(selector.matchLabels ?? {});
  const expressions = selector.matchExpressions ?? [];
  return (
    labels.every((l) => l === Label.MetadataName) &&
    expressions.every((e) => e.key === Label.MetadataName && e.operator === 'In') &&
    labels.length + expressions.length > 0
  );
}

function isEmpty(selector: NonNullable<NetworkPolicyPeer['podSelector']>): boolean {
  return (
    Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0
  );
}

/** The sources both admit (a principal admitted by one and whose namespace the other admits stays). */
export function intersect(a: Admitted, b: Admitted): Admitted {
  if (a.everyone) return b;
  if (b.everyone) return a;
  const namespaceOf = (principal: string) => accountOfPrincipal(principal)?.namespace ?? '';
  const principals = new Set<string>();
  for (const p of a.principals)
    if (b.principals.has(p) || b.namespaces.has(namespaceOf(p))) principals.add(p);
  for (const p of b.principals) if (a.namespaces.has(namespaceOf(p))) principals.add(p);
  return {
    everyone: false,
    namespaces: new Set([...a.namespaces].filter((n) => b.namespaces.has(n))),
    principals,
    ipBlocks: new Set([...a.ipBlocks].filter((i) => b.ipBlocks.has(i))),
  };
}

/** A DENY rule for these ports: every source outside the admitted ones (all sources when none is). */
export function denyRule(ports: number[], admitted: Admitted) {
  const sorted = (set: Set<string>) => [...set].sort();
  const source = {
    ...(admitted.namespaces.size > 0 ? { notNamespaces: sorted(admitted.namespaces) } : {}),
    ...(admitted.principals.size > 0 ? { notPrincipals: sorted(admitted.principals) } : {}),
    ...(admitted.ipBlocks.size > 0 ? { notIpBlocks: sorted(admitted.ipBlocks) } : {}),
  };
  return {
    ...(Object.keys(source).length > 0 ? { from: [{ source }] } : {}),
    to: [{ operation: { ports: ports.map(String) } }],
  };
}

/** A key that is the same for the same admitted identities. */
export function admittedKey(admitted: Admitted): string {
  const sorted = (set: Set<string>) => [...set].sort();
  return JSON.stringify([
    admitted.everyone,
    sorted(admitted.namespaces),
    sorted(admitted.principals),
    sorted(admitted.ipBlocks),
  ]);
}

/**
 * The NetworkPolicies as the migration leaves them (the converted gateway admitted where the old one
 * was), ready to decide, with the input policies by `ns/name`; undefined when the input has none.
 */
export function convertedNetworkPolicies(
  m: Step<'input'>,
): { policies: NetworkPolicies; byName: ReadonlyMap<string, KubeObject> } | undefined {
  const inputs = m.input.snapshot.list(GroupKind.NetworkPolicy);
  if (inputs.length === 0) return undefined;
  return {
    policies: new NetworkPolicies(
      Snapshot.of([...inputs.map((p) => m.draft.current(p)), ...m.input.snapshot.list(GroupKind.Namespace)]),
    ),
    byName: new Map(inputs.map((p) => [`${p.metadata.namespace ?? 'default'}/${p.metadata.name ?? ''}`, p])),
  };
}

/**
 * The notes `identitiesOf` gives, kept per NetworkPolicy (`ns/name`) without repeats, each naming the
 * AuthorizationPolicy `deny` that could not say what it notes.
 */
export function notesFor(deny: string): {
  notes: Map<string, Note[]>;
  note: (policy: string, note: (deny: string) => Note) => void;
} {
  const notes = new Map<string, Note[]>();
  return {
    notes,
    note: (policy, make) => {
      const n = make(deny);
      const list = notes.get(policy) ?? [];
      if (!list.some((known) => known.message === n.message)) list.push(n);
      notes.set(policy, list);
    },
  };
}

/** Notes on each NetworkPolicy (`ns/name`) of what a phase did for it, and what identities could not say. */
export function noteOnPolicies(
  m: Step<never>,
  byName: ReadonlyMap<string, KubeObject>,
  involved: readonly string[],
  message: string,
  notes: ReadonlyMap<string, Note[]>,
): void {
  for (const policy of involved) {
    const object = byName.get(policy);
    if (!object) continue;
    m.draft.note(object, changed('spec.ingress', message));
    for (const n of notes.get(policy) ?? [])
      if (!m.draft.notesOf(object).some((known) => known.message === n.message)) m.draft.note(object, n);
  }
}

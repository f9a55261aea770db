/**
 * Client classes for the equivalence check: the outcome of one request for every client, from a few
 * traces. Two clients get the same outcome when they route alike (the same proxy kind, namespace labels,
 * annotations, and the same per-namespace configuration: Sidecars, objects exported to only some
 * namespaces, source-based matches, and how NetworkPolicies see them as a source) and every AuthorizationPolicy the request can meet sees their
 * identities alike. The policies it can meet are those of the namespaces its trace visits (hops, their
 * deciding policies, the target, the answering workload) and the root namespace: policies elsewhere
 * apply to no workload on the path.
 *
 * So: clients are grouped by how they route; in a group, one is traced; the members whose identities
 * every policy of the visited namespaces sees as it sees the traced one's take its outcome; the rest form
 * a group of their own, traced in turn. Whether a policy sees two identities alike is decided by
 * evaluating its peer conditions (`peerSignature`), and for policies that name only exact namespaces,
 * principals and service accounts, only clients those names can match are evaluated.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { at } from '../model/checked.ts';
import { fieldsOf, specOf } from '../model/specs.ts';
import type { KubeObject } from '../model/object.ts';
import { peerSignature, policySpec, type Peer } from '../mesh/authorization.ts';
import { isExportedTo } from '../mesh/services.ts';
import type { Workload } from '../mesh/workloads.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { principalOf, accountOfPrincipal } from '../model/identity.ts';

/** A set of clients (indices into the client list), with its splits by namespaces' policies. */
interface ClientSet {
  id: number;
  members: Int32Array;
  splits: Map<string, Split>;
}
type Split = { same: ClientSet; rest?: ClientSet };

/** What one traced request came to, and the namespaces whose policies it could have met. */
export interface TracedOutcome<T> {
  outcome: T;
  namespaces: readonly string[];
}

interface PolicyIndex {
  policy: KubeObject;
  /** Clients whose identity the policy may see unlike an unknown peer's; undefined: every client. */
  candidates: ReadonlySet<string> | undefined;
  /** How the policy sees a peer it names nowhere. */
  unnamed: string;
}

/** The clients of one mesh, grouped once; outcomes of requests for all of them from a few traces. */
export class ClientClasses {
  readonly #mesh: Mesh;
  readonly #groups: ClientSet[];
  readonly #partitions = new Map<string, Int32Array>();
  readonly #clients: readonly string[];
  readonly #peers = new Map<string, Peer>();
  readonly #policiesByNamespace = new Map<string, PolicyIndex[]>();
  readonly #signatures = new Map<string, Map<string, string>>();
  /** Traces made, for the benchmark. */
  traces = 0;

  /** With `exhaustive`, every client is a class of its own: each request is traced for each client. */
  constructor(mesh: Mesh, clients: readonly string[], exhaustive = false) {
    this.#mesh = mesh;
    this.#clients = clients;
    const byView = new Map<string, number[]>();
    const view = new RouteView(mesh);
    clients.forEach((name, index) => {
      const w = mesh.workloadByName.get(name);
      if (!w) throw new Error(`client ${name} is not a workload of the mesh`);
      this.#peers.set(name, {
        principal: principalOf(w, mesh.config.trustDomain),
        ip: w.ip,
      });
      const key = view.keyOf(w);
      const group = byView.get(key) ?? [];
      group.push(index);
      byView.set(key, group);
    });
    const groups = exhaustive ? [...byView.values()].flat().map((c) => [c]) : [...byView.values()];
    this.#groups = groups.map((members) => this.#set(Int32Array.from(members)));
    this.#indexPolicies(clients);
  }

  /** How many routing groups the clients fall into. */
  get groups(): number {
    return this.#groups.length;
  }

  /**
   * The outcome of one request for every client, tracing one client per class: the distinct outcomes, and
   * the partition of the clients they belong to (`partition` names it; `membership` gives, for each client
   * by its index in the list given to the constructor, the index of its outcome). Splitting a set of
   * clients by the policies of some namespaces is done once per set and namespaces, and requests to the
   * same namespace mostly meet the same policies, so after the first few requests a request costs its
   * traces and not a pass over every client.
   */
  outcomes<T>(trace: (client: string) => TracedOutcome<T>): { outcomes: T[]; partition: string } {
    const outcomes: T[] = [];
    const sets: number[] = [];
    for (const group of this.#groups) {
      const pending: ClientSet[] = [group];
      for (let set = pending.pop(); set; set = pending.pop()) {
        const traced = at(this.#clients, set.members[0] as number);
        const { outcome, namespaces } = trace(traced);
        this.traces++;
        const key = [...new Set([...namespaces, this.#mesh.config.rootNamespace])].sort().join(',');
        const split = this.#split(set, key);
        outcomes.push(outcome);
        sets.push(split.same.id);
        if (split.rest) pending.push(split.rest);
      }
    }
    return { outcomes, partition: sets.join(',') };
  }

  /** For each client, the index of its class in a partition that `outcomes` returned. */
  membership(partition: string): Int32Array {
    const known = this.#partitions.get(partition);
    if (known) return known;
    const out = new Int32Array(this.#clients.length);
    partition.split(',').forEach((id, index) => {
      for (const m of this.#byId.get(Number(id))?.members ?? []) out[m] = index;
    });
    this.#partitions.set(partition, out);
    return out;
  }

  /** Every set made, by id (a partition names its sets by id). */
  readonly #byId = new Map<number, ClientSet>();

  #set(members: Int32Array): ClientSet {
    const set: ClientSet = { id: this.#byId.size, members, splits: new Map() };
    this.#byId.set(set.id, set);
    return set;
  }

  /** The members whose identities these namespaces' policies see as they see the first member's, and the rest. */
  #split(set: ClientSet, key: string): Split {
    const known = set.splits.get(key);
    if (known) return known;
    const signatures = this.#signaturesFor(key);
    const own = signatures.get(at(this.#clients, set.members[0] as number)) ?? '';
    const same: number[] = [];
    const rest: number[] = [];
    for (const m of set.members) ((signatures.get(at(this.#clients, m)) ?? '') === own ? same : rest).push(m);
    const split: Split =
      rest.length === 0
        ? { same: set }
        : { same: this.#set(Int32Array.from(same)), rest: this.#set(Int32Array.from(rest)) };
    set.splits.set(key, split);
    return split;
  }

  /** Clients whose identities the policies of these namespaces see otherwise than an unnamed peer's. */
  #signaturesFor(key: string): Map<string, string> {
    const cached = this.#signatures.get(key);
    if (cached) return cached;
    const policies = key.split(',').flatMap((ns) => this.#policiesByNamespace.get(ns) ?? []);
    const out = new Map<string, string>();
    policies.forEach((p, i) => {
      for (const client of p.candidates ?? this.#peers.keys()) {
        const peer = this.#peers.get(client);
        if (!peer) continue;
        const signature = peerSignature(p.policy, peer);
        if (signature !== p.unnamed) out.set(client, `${out.get(client) ?? ''}${i}:${signature};`);
      }
    });
    this.#signatures.set(key, out);
    return out;
  }

  #indexPolicies(clients: readonly string[]): void {
    const byNamespace = new Map<string, string[]>();
    for (const name of clients) {
      const ns = name.split('/')[0] ?? '';
      byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), name]);
    }
    const nowhere: Peer = {
      principal: principalOf({ namespace: '§', serviceAccount: '§' }, this.#mesh.config.trustDomain),
      ip: '',
    };
    for (const policy of this.#mesh.snapshot.list(GroupKind.AuthorizationPolicy)) {
      const ns = policy.metadata.namespace ?? 'default';
      const named = namedNamespaces(policy);
      const candidates =
        named === undefined ? undefined : new Set(named.flatMap((n) => byNamespace.get(n) ?? []));
      const list = this.#policiesByNamespace.get(ns) ?? [];
      list.push({ policy, candidates, unnamed: peerSignature(policy, nowhere) });
      this.#policiesByNamespace.set(ns, list);
    }
  }
}

/**
 * The namespaces a policy's peer conditions name, when they name peers only by exact namespaces,
 * principals and service accounts (so no other peer can match them); undefined otherwise (wildcards,
 * negations, IP blocks: every client is evaluated).
 */
function namedNamespaces(policy: KubeObject): string[] | undefined {
  const own = policy.metadata.namespace ?? 'default';
  const out: string[] = [];
  for (const rule of policySpec(policy).rules ?? []) {
    for (const { source } of rule.from ?? []) {
      for (const [field, values] of Object.entries(source ?? {})) {
        if (field === 'requestPrincipals' || field === 'notRequestPrincipals') continue;
        if (!Array.isArray(values)) return undefined;
        for (const v of values) {
          if (typeof v !== 'string' || v.includes('*')) return undefined;
          if (field === 'namespaces') out.push(v);
          else if (field === 'principals') {
            const account = accountOfPrincipal(v);
            if (!account) return undefined;
            out.push(account.namespace);
          } else if (field === 'serviceAccounts') out.push(v.includes('/') ? (v.split('/')[0] ?? '') : own);
          else return undefined;
        }
      }
    }
    for (const when of rule.when ?? []) {
      const k = when.key ?? '';
      if (k.startsWith('source.') || k === 'remote.ip') return undefined;
    }
  }
  return out;
}

/**
 * What decides how a client's requests are routed, as a key: its proxy, its namespace's labels, its
 * annotations, which of the label selectors of routes and Sidecars pick it, and its namespace where that
 * namespace sees configuration others don't (a Sidecar, an object exported to only some namespaces, a
 * route matching by source namespace).
 */
class RouteView {
  readonly #mesh: Mesh;
  /** Label selectors some route or Sidecar picks clients by (a Sidecar's only in its own namespace). */
  readonly #selectors: { namespace?: string; labels: Record<string, string> }[];
  readonly #bySourceNamespace: boolean;
  readonly #limited: { namespace: string; exportTo: readonly string[] }[];
  readonly #private = new Map<string, boolean>();

  constructor(mesh: Mesh) {
    this.#mesh = mesh;
    const matches = mesh.virtualServices.flatMap((vs) => vs.http.flatMap((r) => r.match ?? []));
    const sidecars = mesh.snapshot.list(GroupKind.Sidecar);
    this.#selectors = [
      ...matches.flatMap((m) => (m.sourceLabels ? [{ labels: m.sourceLabels }] : [])),
      ...sidecars.flatMap((s) => {
        const selector = specOf(s, 'networking.istio.io/Sidecar').workloadSelector?.labels;
        return selector ? [{ namespace: s.metadata.namespace ?? 'default', labels: selector }] : [];
      }),
    ];
    this.#bySourceNamespace = matches.some((m) => m.sourceNamespace !== undefined);
    const exported = (o: KubeObject, fallback: readonly string[]) => {
      const exportTo = fieldsOf(o, 'spec')['exportTo'];
      const list = Array.isArray(exportTo) ? exportTo.filter((e) => typeof e === 'string') : [];
      return list.length > 0 ? list : fallback;
    };
    const defaults = mesh.config.defaultExportTo;
    this.#limited = [
      ...mesh.virtualServices.map((v) => ({ namespace: v.namespace, exportTo: v.exportTo })),
      ...mesh.services.map((s) => ({ namespace: s.namespace, exportTo: s.exportTo })),
      ...mesh.snapshot.list(GroupKind.DestinationRule).map((d) => ({
        namespace: d.metadata.namespace ?? 'default',
        exportTo: exported(d, defaults.destinationRule),
      })),
      ...mesh.snapshot
        .list(GroupKind.ServiceEntry)
        .map((e) => ({ namespace: e.metadata.namespace ?? 'default', exportTo: exported(e, ['*']) })),
      ...sidecars.map((s) => ({ namespace: s.metadata.namespace ?? 'default', exportTo: ['.'] })),
    ].filter((o) => !o.exportTo.includes('*'));
  }

  keyOf(w: Workload): string {
    const ns = this.#mesh.snapshot.get(GroupKind.Namespace, '', w.namespace);
    return JSON.stringify([
      w.proxy,
      ns?.metadata.labels ?? {},
      w.annotations,
      this.#selectors
        .map((sel) =>
          (sel.namespace === undefined || sel.namespace === w.namespace) &&
          Object.entries(sel.labels).every(([k, v]) => w.labels[k] === v)
            ? '1'
            : '0',
        )
        .join(''),
      this.#bySourceNamespace || this.#isPrivate(w.namespace) ? w.namespace : '',
      this.#mesh.networkPolicies.sourceView(w),
    ]);
  }

  #isPrivate(namespace: string): boolean {
    let known = this.#private.get(namespace);
    if (known === undefined) {
      known = this.#limited.some((o) => isExportedTo(o.exportTo, o.namespace, namespace));
      this.#private.set(namespace, known);
    }
    return known;
  }
}

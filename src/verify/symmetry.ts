/**
 * Namespaces alike up to renaming (docs/semantics.md, "Namespaces alike up to renaming"). A Kubeflow
 * platform stamps every Profile namespace from one template, so the requests to one of them fare as the
 * requests to another, with the names changed: the equivalence check traces the requests of one namespace
 * of each class and takes every other member's outcomes from them, renamed.
 *
 * A namespace's names are its own name, the names of its objects and its pods' addresses; a name is its
 * own when no object of another namespace (or of the cluster) mentions it. Two namespaces are alike when
 * their objects, in both configurations, are the same once each own name is replaced by its place of first
 * appearance: swapping the two namespaces' names then maps each configuration onto itself. Since the
 * simulator compares names only whole (except where `mesh/patterns.ts` says it does not), the swap maps each request's outcome to the swapped request's
 * outcome, except where a name is compared by a part of it or by order; a namespace is left out of every
 * class (traced as itself) where that can happen:
 * - a pattern (a `*`, a prefix match) cuts into one of its names;
 * - a route or rule of its own bound to the mesh claims a host that names none of its own names
 *   (hosts every namespace claims are ordered by name, and the swap would change that order);
 * - its name is mentioned outside it;
 * - an IP block holds some of its pods and not the other member's matching ones.
 * Any regular expression in either configuration turns the symmetry off: it can tell names apart by any
 * part of them.
 */
import { at, got } from '../model/checked.ts';
import { fieldsOf, isKind, statusOf } from '../model/specs.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { KubeObject } from '../model/object.ts';
import { isPlainObject } from '../model/object.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { ipInBlock } from '../mesh/authorization.ts';
import { anyRegularExpression, isPrefixField, Wildcard } from '../mesh/patterns.ts';
import type { Workload } from '../mesh/workloads.ts';

/** A swap of two namespaces of a class: names in texts, and clients by index. */
export interface Swap {
  /** A text with the two namespaces' names swapped (texts recur: the last few are remembered). */
  text(s: string): string;
  /** The index of the client the swap makes of a client (by index). */
  client(index: number): number;
}

const nameShape = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
const maxNameLength = 253;
/** Texts a swap remembers having renamed (requests' parts and outcomes' texts recur). */
const maxRemembered = 256;

/**
 * Calls `visit` with every part of a text that could be a whole name: a run of letters, digits, dots and
 * dashes, from its start or a dot or dash, to its end or a dot or dash (lower-cased). Without `dots`, only
 * the parts without a dot (when no name looked for has one).
 */
function eachNameIn(text: string, visit: (name: string) => void, dots = true): void {
  const s = text.toLowerCase();
  for (const run of s.match(dots ? /[a-z0-9][a-z0-9.-]*/g : /[a-z0-9][a-z0-9-]*/g) ?? []) {
    const starts: number[] = [0];
    const ends: number[] = [];
    for (let i = 0; i < run.length; i++) {
      const c = run[i] as string;
      if (c === '.' || c === '-') {
        if (i + 1 < run.length && run[i + 1] !== '.' && run[i + 1] !== '-') starts.push(i + 1);
      } else if (i + 1 === run.length || run[i + 1] === '.' || run[i + 1] === '-') ends.push(i + 1);
    }
    for (const start of starts)
      for (const end of ends) if (end > start && end - start <= maxNameLength) visit(run.slice(start, end));
  }
}

/** Every string of an object, keys and values. */
function eachString(value: unknown, visit: (s: string) => void): void {
  if (typeof value === 'string') visit(value);
  else if (Array.isArray(value)) for (const v of value) eachString(v, visit);
  else if (isPlainObject(value))
    for (const [k, v] of Object.entries(value)) {
      visit(k);
      eachString(v, visit);
    }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A regular expression matching any of the names whole (not inside a longer run of letters and digits). */
function namesPattern(names: Iterable<string>): RegExp {
  const sorted = [...names].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
  return new RegExp(`(?<![a-z0-9])(?:${sorted.map(escape).join('|')})(?![a-z0-9])`, 'gi');
}

interface Member {
  namespace: string;
  /** Its own names, in the order they first appear in its template. */
  names: string[];
  template: string;
}

/** The classes of namespaces alike up to renaming, and the swaps that map one member onto another. */
export class NamespaceSymmetry {
  /** Each class of two or more namespaces, its members in order. */
  readonly classes: readonly (readonly string[])[];
  readonly #members = new Map<string, Member>();
  /** Each member's class. */
  readonly #classOf = new Map<string, readonly string[]>();
  /** Each own name of a member of a class, and its namespace. */
  readonly #memberOfName = new Map<string, string>();
  readonly #swaps = new Map<string, Swap | undefined>();
  /** Whether some own name has a dot (a pod's address). */
  readonly #dotted: boolean;
  readonly #clients: readonly string[];
  readonly #clientIndex: Map<string, number>;
  /** Clients (by index) and workloads (with their configuration's mesh) of each member. */
  readonly #clientsOf = new Map<string, number[]>();
  readonly #workloadsOf = new Map<string, { mesh: Mesh; workload: Workload }[]>();

  constructor(meshes: readonly [Mesh, Mesh], clients: readonly string[]) {
    const snapshots = [meshes[0].snapshot, meshes[1].snapshot] as const;
    const byTemplate = new Map<string, string[]>();
    if (!snapshots.some(hasRegularExpression))
      for (const member of templates(meshes)) {
        this.#members.set(member.namespace, member);
        const list = byTemplate.get(member.template) ?? [];
        list.push(member.namespace);
        byTemplate.set(member.template, list);
      }
    const classes = [...byTemplate.values()].filter((c) => c.length > 1).map((c) => c.sort());
    this.classes = classes.sort((a, b) => (at(a, 0) < at(b, 0) ? -1 : 1));
    for (const members of this.classes)
      for (const ns of members) {
        this.#classOf.set(ns, members);
        for (const name of this.#members.get(ns)?.names ?? []) this.#memberOfName.set(name, ns);
      }
    this.#dotted = [...this.#memberOfName.keys()].some((name) => name.includes('.'));
    this.#clients = clients;
    this.#clientIndex = new Map(clients.map((c, i) => [c, i]));
    for (const ns of this.#classOf.keys()) [this.#clientsOf, this.#workloadsOf].forEach((m) => m.set(ns, []));
    clients.forEach((client, i) => this.#clientsOf.get(client.split('/')[0] ?? '')?.push(i));
    for (const mesh of meshes)
      for (const workload of mesh.workloads)
        this.#workloadsOf.get(workload.namespace)?.push({ mesh, workload });
  }

  /** The namespaces of classes whose own names the parts of a text mention (each part's remembered). */
  mentioned(parts: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const part of parts) {
      let found = this.#mentions.get(part);
      if (found === undefined) {
        const names = new Set<string>();
        eachNameIn(
          part,
          (name) => {
            const ns = this.#memberOfName.get(name);
            if (ns !== undefined) names.add(ns);
          },
          this.#dotted,
        );
        found = [...names];
        if (this.#mentions.size < maxRemembered * 1000) this.#mentions.set(part, found);
      }
      for (const ns of found) out.add(ns);
    }
    return out;
  }

  /** The members each part of a text mentions (parts recur from request to request). */
  readonly #mentions = new Map<string, readonly string[]>();

  /**
   * A swap that takes a text one step toward the first members of classes: of a namespace it mentions with
   * an earlier member of its class that it does not mention (the first such). Undefined when none: each
   * namespace it mentions is the first of its class the text leaves unmentioned.
   */
  swapFor(parts: readonly string[]): Swap | undefined {
    const mentioned = this.mentioned(parts);
    for (const ns of [...mentioned].sort()) {
      const members = got(this.#classOf, ns);
      const target = members.find((m) => !mentioned.has(m) || m === ns);
      const swap = target !== undefined && target !== ns ? this.#swap(ns, target) : undefined;
      if (swap) return swap;
    }
    return undefined;
  }

  /**
   * The swap of two members; undefined when a client of one has no counterpart among the clients of the
   * other (the matrix keeps one client of workloads alike, chosen by name, and renaming can change which).
   */
  #swap(ns: string, representative: string): Swap | undefined {
    const key = `${ns} ${representative}`;
    if (this.#swaps.has(key)) return this.#swaps.get(key);
    const [a, b] = [got(this.#members, ns), got(this.#members, representative)];
    const counterpart = new Map<string, string>();
    a.names.forEach((name, i) => {
      counterpart.set(name, at(b.names, i));
      counterpart.set(at(b.names, i), name);
    });
    const rename = (s: string, pattern: RegExp) =>
      s.replace(pattern, (m) => counterpart.get(m.toLowerCase()) ?? m);
    const names = namesPattern(counterpart.keys());
    // Pods' addresses the simulator gave them are not in the configuration: matched by the pods' names.
    for (const { mesh, workload: w } of this.#workloadsOf.get(ns) ?? []) {
      const other = mesh.workloadByName.get(rename(`${w.namespace}/${w.name}`, names));
      if (other && !counterpart.has(w.ip) && !counterpart.has(other.ip)) {
        counterpart.set(w.ip, other.ip);
        counterpart.set(other.ip, w.ip);
      }
    }
    const pattern = namesPattern(counterpart.keys());
    const moved = new Map<number, number>();
    for (const i of [...(this.#clientsOf.get(ns) ?? []), ...(this.#clientsOf.get(representative) ?? [])]) {
      const client = at(this.#clients, i);
      const other = this.#clientIndex.get(rename(client, names));
      if (other === undefined) {
        this.#swaps.set(key, undefined);
        return undefined;
      }
      moved.set(i, other);
    }
    const texts = new Map<string, string>();
    const swap: Swap = {
      text: (s) => {
        let out = texts.get(s);
        if (out === undefined) {
          out = rename(s, pattern);
          if (texts.size < maxRemembered) texts.set(s, out);
        }
        return out;
      },
      client: (i) => moved.get(i) ?? i,
    };
    this.#swaps.set(key, swap);
    return swap;
  }
}

/** Whether a configuration matches anything by a regular expression. */
function hasRegularExpression(snapshot: Snapshot): boolean {
  return snapshot.all().some((o) => anyRegularExpression(fieldsOf(o, 'spec')));
}

/** The namespace an object belongs to: its own, or for a cluster object, the namespace it is named after. */
function ownerOf(o: KubeObject, namespaces: ReadonlySet<string>): string | undefined {
  const ns = o.metadata.namespace;
  if (ns !== undefined) return ns;
  const name = o.metadata.name ?? '';
  return namespaces.has(name) ? name : undefined;
}

/** Addresses of a pod object (from its status). */
function podAddresses(o: KubeObject): string[] {
  if (!isKind(o, '/Pod')) return [];
  const status = statusOf(o, '/Pod');
  return [
    ...(status.podIP !== undefined ? [status.podIP] : []),
    ...(status.podIPs ?? []).flatMap((p) => (p.ip !== undefined ? [p.ip] : [])),
  ];
}

// Why long: one pass over both configurations finds each namespace's own names, then its template, then
// the reasons to leave it out of every class, each a few lines.
/** The template of every namespace that may join a class (its own name is its own). */
function templates(meshes: readonly [Mesh, Mesh]): Member[] {
  const snapshots = [meshes[0].snapshot, meshes[1].snapshot];
  const namespaces = new Set<string>();
  for (const s of snapshots)
    for (const o of s.all()) {
      if (o.metadata.namespace !== undefined) namespaces.add(o.metadata.namespace);
      if (o.kind === 'Namespace' && o.metadata.name) namespaces.add(o.metadata.name);
    }
  // Candidate names: a namespace's name, its objects' names, its pods' addresses (null: of two namespaces).
  const candidate = new Map<string, string | null>();
  const propose = (name: string, ns: string) => {
    if (!nameShape.test(name) || /^[0-9]+$/.test(name)) return;
    const known = candidate.get(name);
    candidate.set(name, known === undefined || known === ns ? ns : null);
  };
  const owned = new Map<string, { tag: number; object: KubeObject }[]>();
  snapshots.forEach((s, tag) => {
    for (const o of s.all()) {
      const ns = ownerOf(o, namespaces);
      if (ns === undefined) continue;
      propose(ns, ns);
      propose((o.metadata.name ?? '').toLowerCase(), ns);
      for (const ip of podAddresses(o)) propose(ip, ns);
      const list = owned.get(ns) ?? [];
      list.push({ tag, object: o });
      owned.set(ns, list);
    }
  });
  // A name is its namespace's own when no object of another namespace or of the cluster mentions it.
  for (const s of snapshots)
    for (const o of s.all()) {
      const ns = ownerOf(o, namespaces) ?? '';
      eachString(o, (text) =>
        eachNameIn(text, (name) => {
          const owner = candidate.get(name);
          if (owner !== undefined && owner !== ns) candidate.set(name, null);
        }),
      );
    }
  const names = new Map<string, string[]>();
  for (const [name, ns] of candidate) {
    if (ns === null) continue;
    const list = names.get(ns) ?? [];
    list.push(name);
    names.set(ns, list);
  }
  const edges = patternEdges(snapshots);
  const blocks = ipBlocks(snapshots);
  const out: Member[] = [];
  for (const [ns, own] of names) {
    if (!own.includes(ns)) continue;
    if (own.some((name) => edges.some((edge) => name.includes(edge)))) continue;
    const pattern = namesPattern(own);
    const objects = owned.get(ns) ?? [];
    if (objects.some(({ object }) => claimsForeignHost(object, pattern))) continue;
    const order: string[] = [];
    const places = new Map<string, number>();
    const abstract = (s: string) =>
      s.replace(pattern, (m) => {
        const name = m.toLowerCase();
        let place = places.get(name);
        if (place === undefined) {
          place = order.length;
          places.set(name, place);
          order.push(name);
        }
        return `§${place}§`;
      });
    const sortKey = ({ tag, object }: { tag: number; object: KubeObject }) =>
      `${tag}|${object.apiVersion}|${object.kind}|${(object.metadata.name ?? '').replace(pattern, '§')}`;
    const sorted = objects
      .map((o) => ({ key: sortKey(o), o }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const parts = sorted.map(({ o }) => `${o.tag}:${canonical(o.object, abstract)}`);
    // Which IP blocks hold each of its pods (pods in the order of their names, renamed).
    if (blocks.length > 0)
      meshes.forEach((mesh, tag) => {
        const pods = mesh.workloads
          .filter((w) => w.namespace === ns)
          .map((w) => ({ name: w.name.replace(pattern, '§'), w }))
          .sort((a, b) => (a.name < b.name ? -1 : 1));
        for (const { w } of pods)
          parts.push(
            `ip${tag}:${abstract(w.name)}:${blocks.map((b) => (ipInBlock(w.ip, b) ? 1 : 0)).join('')}`,
          );
      });
    const member: Member = { namespace: ns, names: order, template: parts.join('\n') };
    // Every own name has a place (an object's name appears in it), so the order lists them all.
    if (order.length === own.length) out.push(member);
  }
  return out;
}

/** A value as text, with keys in order and every string passed through `text`. */
function canonical(value: unknown, text: (s: string) => string): string {
  if (typeof value === 'string') return JSON.stringify(text(value));
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v, text)).join(',')}]`;
  if (isPlainObject(value))
    return `{${Object.entries(value)
      .map(([k, v]) => [JSON.stringify(text(k)), canonical(v, text)] as const)
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([k, v]) => `${k}:${v}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/**
 * The letters and digits next to every place a pattern cuts a text: either side of each `*`, and the end
 * of a prefix match. A name that holds one of them could be cut by the pattern.
 */
function patternEdges(snapshots: readonly Snapshot[]): string[] {
  const edges = new Set<string>();
  const add = (run: string | undefined) => {
    const trimmed = (run ?? '').toLowerCase().replace(/^[.-]+|[.-]+$/g, '');
    if (trimmed) edges.add(trimmed);
  };
  // The name characters next to the cut, with dots (for names with dots) and without (for the others:
  // in `*-3.svc`, the cut falls inside a name ending in `-3`).
  const edge = (text: string, side: 'start' | 'end') => {
    const [dotted, plain] =
      side === 'start' ? [/^[a-zA-Z0-9.-]*/, /^[a-zA-Z0-9-]*/] : [/[a-zA-Z0-9.-]*$/, /[a-zA-Z0-9-]*$/];
    add(dotted.exec(text)?.[0]);
    add(plain.exec(text)?.[0]);
  };
  const visit = (value: unknown, key: string, parent: Record<string, unknown> | undefined): void => {
    if (typeof value === 'string') {
      if (value.includes(Wildcard))
        value.split(Wildcard).forEach((part, i, all) => {
          if (i > 0) edge(part, 'start');
          if (i < all.length - 1) edge(part, 'end');
        });
      if (isPrefixField(key, parent)) edge(value, 'end');
    } else if (Array.isArray(value)) for (const v of value) visit(v, key, parent);
    else if (isPlainObject(value)) for (const [k, v] of Object.entries(value)) visit(v, k, value);
  };
  for (const s of snapshots) for (const o of s.all()) visit(fieldsOf(o, 'spec'), '', undefined);
  return [...edges];
}

/** IP blocks and addresses the configurations name (outside pods' own status). */
function ipBlocks(snapshots: readonly Snapshot[]): string[] {
  const out = new Set<string>();
  for (const s of snapshots)
    for (const o of s.all())
      eachString(fieldsOf(o, 'spec'), (text) => {
        if (/^\d{1,3}(\.\d{1,3}){3}(\/\d{1,2})?$/.test(text)) out.add(text);
      });
  return [...out].sort();
}

/**
 * Whether an object of a namespace claims, for requests inside the mesh, a host that names none of the
 * namespace's own names (its order among other namespaces' claims would then decide).
 */
function claimsForeignHost(o: KubeObject, own: RegExp): boolean {
  const spec = fieldsOf(o, 'spec');
  let hosts: unknown[] = [];
  if (o.kind === 'VirtualService') {
    const gateways = Array.isArray(spec['gateways']) ? spec['gateways'] : [];
    if (gateways.length === 0 || gateways.includes('mesh'))
      hosts = Array.isArray(spec['hosts']) ? spec['hosts'] : [];
  } else if (o.kind === 'DestinationRule') hosts = [spec['host']];
  else if (o.kind === 'ServiceEntry') hosts = Array.isArray(spec['hosts']) ? spec['hosts'] : [];
  return hosts.some((h) => typeof h !== 'string' || h.includes(Wildcard) || h.replace(own, '') === h);
}

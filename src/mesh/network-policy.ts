/**
 * Kubernetes NetworkPolicy as the CNI enforces it (docs/semantics.md, NetworkPolicy): on the connection
 * as it is on the wire, at the sending pod (egress) and at the receiving pod (ingress). A pod selected by
 * a policy of a type is isolated for that direction, and then a connection passes only if some rule of
 * one of those policies admits its peer and port; a pod no policy selects is open.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { InputError } from '../model/errors.ts';
import { namespaceLabels, refOf, type KubeObject } from '../model/object.ts';
import {
  specOf,
  type LabelSelector,
  type NetworkPolicyPeer,
  type NetworkPolicyPort,
} from '../model/specs.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { Workload } from './workloads.ts';

/** One end of a connection: a pod of the mesh, or an address outside it (its IP when known). */
export interface Peer {
  workload: Workload | undefined;
  ip: string | undefined;
}

/** What the policies of one direction decided: open (no policy selects the pod), admitted or refused. */
export type PolicyVerdict =
  | { isolated: false }
  | { isolated: true; allowed: true; by: string }
  | { isolated: true; allowed: false; by: string[] };

/** A NetworkPolicy, checked and ready to match. */
interface CompiledPolicy {
  name: string;
  namespace: string;
  selector: Selector;
  ingress: Rule[] | undefined;
  egress: Rule[] | undefined;
}

interface Rule {
  peers: CompiledPeer[] | undefined;
  ports: CompiledPort[] | undefined;
}

type Selector = (labels: Readonly<Record<string, string>>) => boolean;

type CompiledPeer =
  | { kind: 'pods'; pods: Selector; namespaces: Selector | undefined; source: NetworkPolicyPeer }
  | { kind: 'ip'; cidr: Cidr; except: Cidr[]; source: NetworkPolicyPeer };

/**
 * What admits connections to an isolated pod on one port: the peers of the rules that admit the port, each
 * with the NetworkPolicy it is in. `open`: the pod is not isolated, or a rule admits every peer there.
 */
export type AdmittedPeers =
  | {
      open: true;
      /** The policies that isolate the pod (`ns/name`); none when it is not isolated. */
      by: string[];
    }
  | {
      open: false;
      /** The policies that isolate the pod (`ns/name`). */
      by: string[];
      peers: { policy: string; policyNamespace: string; peer: NetworkPolicyPeer }[];
    };

interface CompiledPort {
  protocol: string;
  port: number | string | undefined;
  endPort: number | undefined;
}

interface Cidr {
  base: number;
  bits: number;
}

/** The NetworkPolicies of a snapshot, and the labels of its namespaces, ready to decide connections. */
export class NetworkPolicies {
  readonly #policies: CompiledPolicy[];
  /** The policies of each namespace (a policy selects only pods of its own). */
  readonly #byNamespace = new Map<string, CompiledPolicy[]>();
  /** Each namespace's labels with the name label the API server sets, made once per namespace. */
  readonly #namespaceLabels = new Map<string, Readonly<Record<string, string>>>();

  /** Reads every NetworkPolicy; one that is malformed is an InputError naming the field. */
  constructor(snapshot: Snapshot) {
    this.#policies = snapshot.list(GroupKind.NetworkPolicy).map((policy) => compilePolicy(snapshot, policy));
    for (const policy of this.#policies)
      this.#byNamespace.set(policy.namespace, [...(this.#byNamespace.get(policy.namespace) ?? []), policy]);
    for (const ns of snapshot.list(GroupKind.Namespace)) {
      const name = ns.metadata.name ?? '';
      this.#namespaceLabels.set(name, namespaceLabels(ns.metadata.labels ?? {}, name));
    }
  }

  get empty(): boolean {
    return this.#policies.length === 0;
  }

  /** Whether `to` admits a connection from `from` on `port` (the port on the wire at the pod). */
  ingress(from: Peer, to: Workload, port: number, protocol = 'TCP'): PolicyVerdict {
    return this.#decide('ingress', to, from, to, port, protocol);
  }

  /** Whether `from`'s policies let it open a connection to `to` on `port`. */
  egress(from: Workload, to: Peer, port: number, protocol = 'TCP'): PolicyVerdict {
    return this.#decide('egress', from, to, to.workload, port, protocol);
  }

  /**
   * How the policies see a pod as the source of connections: which egress policies select it and which
   * peers of every rule match it. Pods with the same view are refused and admitted alike, wherever they
   * send (the equivalence check groups clients by it).
   */
  sourceView(w: Workload): string {
    if (this.#policies.length === 0) return '';
    const peer: Peer = { workload: w, ip: w.ip };
    let out = '';
    for (const policy of this.#policies) {
      out +=
        policy.egress !== undefined && policy.namespace === w.namespace && policy.selector(w.labels)
          ? 'e'
          : '-';
      for (const rule of policy.ingress ?? [])
        out += this.#peerMatches(rule, peer, policy.namespace) ? '1' : '0';
    }
    return out;
  }

  /**
   * The peers admitted to a pod on a port, as its policies state them (docs/semantics.md, NetworkPolicy):
   * for rules written elsewhere in these terms (the migration's sources at a waypoint).
   */
  admittedPeers(pod: Workload, port: number, protocol = 'TCP'): AdmittedPeers {
    const selecting = this.#selecting('ingress', pod);
    const by = selecting.map((p) => `${p.namespace}/${p.name}`);
    if (selecting.length === 0) return { open: true, by };
    const peers: Extract<AdmittedPeers, { open: false }>['peers'] = [];
    for (const policy of selecting)
      for (const rule of policy.ingress ?? []) {
        if (!portMatches(rule, pod, port, protocol)) continue;
        if (rule.peers === undefined) return { open: true, by };
        const name = `${policy.namespace}/${policy.name}`;
        for (const p of rule.peers)
          peers.push({ policy: name, policyNamespace: policy.namespace, peer: p.source });
      }
    return { open: false, by, peers };
  }

  /**
   * The ports the ingress rules of a pod's policies name (named ports resolved on the pod), single and as
   * ranges (`endPort`); empty when no rule limits ports.
   */
  ingressPorts(pod: Workload): { ports: number[]; ranges: [number, number][] } {
    const ports = new Set<number>();
    const ranges: [number, number][] = [];
    for (const policy of this.#selecting('ingress', pod))
      for (const rule of policy.ingress ?? [])
        for (const p of rule.ports ?? []) {
          const number =
            typeof p.port === 'number' ? p.port : p.port ? pod.containerPorts.get(p.port) : undefined;
          if (number === undefined) continue;
          if (p.endPort === undefined) ports.add(number);
          else ranges.push([number, p.endPort]);
        }
    return { ports: [...ports].sort((a, b) => a - b), ranges };
  }

  /** The namespaces (of the snapshot) a peer's namespaceSelector selects. */
  namespacesSelected(selector: LabelSelector): string[] {
    const matches = compileSelector(selector, [], malformed);
    return [...this.#namespaceLabels].filter(([, labels]) => matches(labels)).map(([name]) => name);
  }

  /** Whether a selector of these (checked) policies selects these labels. */
  selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
    return compileSelector(selector, [], malformed)(labels);
  }

  #selecting(direction: 'ingress' | 'egress', pod: Workload): CompiledPolicy[] {
    return (this.#byNamespace.get(pod.namespace) ?? []).filter(
      (p) => p[direction] !== undefined && p.selector(pod.labels),
    );
  }

  #decide(
    direction: 'ingress' | 'egress',
    pod: Workload,
    peer: Peer,
    destination: Workload | undefined,
    port: number,
    protocol: string,
  ): PolicyVerdict {
    const selecting = this.#selecting(direction, pod);
    if (selecting.length === 0) return { isolated: false };
    for (const policy of selecting)
      for (const rule of policy[direction] ?? [])
        if (this.#peerMatches(rule, peer, pod.namespace) && portMatches(rule, destination, port, protocol))
          return { isolated: true, allowed: true, by: `${policy.namespace}/${policy.name}` };
    return { isolated: true, allowed: false, by: selecting.map((p) => `${p.namespace}/${p.name}`) };
  }

  #peerMatches(rule: Rule, peer: Peer, policyNamespace: string): boolean {
    if (rule.peers === undefined) return true;
    return rule.peers.some((p) => {
      if (p.kind === 'ip') {
        const ip = peer.ip === undefined ? undefined : parseIp(peer.ip);
        // An address outside the cluster whose IP is not known matches only a block of every address.
        if (ip === undefined) return p.cidr.bits === 0 && p.except.length === 0;
        return inCidr(ip, p.cidr) && !p.except.some((e) => inCidr(ip, e));
      }
      const w = peer.workload;
      return w !== undefined && podPeerMatches(p, policyNamespace, w, this.#labelsOfNamespace(w.namespace));
    });
  }

  /** A namespace's labels, with the name label the API server sets on every namespace. */
  #labelsOfNamespace(namespace: string): Readonly<Record<string, string>> {
    let labels = this.#namespaceLabels.get(namespace);
    if (!labels) {
      labels = namespaceLabels({}, namespace);
      this.#namespaceLabels.set(namespace, labels);
    }
    return labels;
  }
}

function portMatches(rule: Rule, destination: Workload | undefined, port: number, protocol: string): boolean {
  if (rule.ports === undefined) return true;
  return rule.ports.some((p) => {
    if (p.protocol !== protocol) return false;
    if (p.port === undefined) return true;
    // A named port is the destination pod's container port of that name.
    const number = typeof p.port === 'number' ? p.port : destination?.containerPorts.get(p.port);
    if (number === undefined) return false;
    return p.endPort === undefined ? port === number : port >= number && port <= p.endPort;
  });
}

/** Checks and compiles one NetworkPolicy; a malformed one is an InputError at its field. */
function compilePolicy(snapshot: Snapshot, policy: KubeObject): CompiledPolicy {
  const spec = specOf(policy, 'networking.k8s.io/NetworkPolicy');
  const fail = (path: (string | number)[], message: string): never => {
    throw new InputError(
      {
        location: snapshot.locate(policy, ['spec', ...path]),
        object: refOf(policy),
        field: ['spec', ...path]
          .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
          .join('')
          .slice(1),
      },
      message,
    );
  };
  const types = spec.policyTypes ?? ['Ingress', ...(spec.egress !== undefined ? ['Egress'] : [])];
  types.forEach((t, i) => {
    if (t !== 'Ingress' && t !== 'Egress')
      fail(['policyTypes', i], `expected Ingress or Egress, got ${JSON.stringify(t)}`);
  });
  const rules = (
    list: { from?: NetworkPolicyPeer[]; to?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }[] | undefined,
    field: 'ingress' | 'egress',
    peersField: 'from' | 'to',
  ): Rule[] =>
    (list ?? []).map((rule, r) => {
      const peers = rule[peersField];
      return {
        peers:
          peers === undefined || peers.length === 0
            ? undefined
            : peers.map((peer, i) => compilePeer(peer, [field, r, peersField, i], fail)),
        ports:
          rule.ports === undefined || rule.ports.length === 0
            ? undefined
            : rule.ports.map((port, i) => compilePort(port, [field, r, 'ports', i], fail)),
      };
    });
  return {
    name: policy.metadata.name ?? '',
    namespace: policy.metadata.namespace ?? 'default',
    selector: compileSelector(spec.podSelector ?? {}, ['podSelector'], fail),
    ingress: types.includes('Ingress') ? rules(spec.ingress, 'ingress', 'from') : undefined,
    egress: types.includes('Egress') ? rules(spec.egress, 'egress', 'to') : undefined,
  };
}

type Fail = (path: (string | number)[], message: string) => never;

/** For selectors of policies already checked at load: a malformed one cannot reach here. */
const malformed: Fail = () => {
  throw new Error('malformed selector of a checked NetworkPolicy');
};

function compilePeer(peer: NetworkPolicyPeer, path: (string | number)[], fail: Fail): CompiledPeer {
  if (peer.ipBlock) {
    if (peer.podSelector || peer.namespaceSelector)
      fail(path, 'ipBlock cannot be combined with podSelector or namespaceSelector');
    const cidr =
      parseCidr(peer.ipBlock.cidr ?? '') ??
      fail([...path, 'ipBlock', 'cidr'], 'expected a CIDR such as 10.0.0.0/16');
    const except = (peer.ipBlock.except ?? []).map((e, i) => {
      const block =
        parseCidr(e) ?? fail([...path, 'ipBlock', 'except', i], 'expected a CIDR such as 10.0.1.0/24');
      if (block.bits < cidr.bits || !inCidr(block.base, cidr))
        fail([...path, 'ipBlock', 'except', i], `${e} is not inside ${peer.ipBlock?.cidr ?? ''}`);
      return block;
    });
    return { kind: 'ip', cidr, except, source: peer };
  }
  if (!peer.podSelector && !peer.namespaceSelector)
    fail(path, 'a peer needs podSelector, namespaceSelector or ipBlock');
  return {
    kind: 'pods',
    pods: compileSelector(peer.podSelector ?? {}, [...path, 'podSelector'], fail),
    namespaces: peer.namespaceSelector
      ? compileSelector(peer.namespaceSelector, [...path, 'namespaceSelector'], fail)
      : undefined,
    source: peer,
  };
}

function compilePort(port: NetworkPolicyPort, path: (string | number)[], fail: Fail): CompiledPort {
  const protocol = port.protocol ?? 'TCP';
  if (!['TCP', 'UDP', 'SCTP'].includes(protocol))
    fail([...path, 'protocol'], `expected TCP, UDP or SCTP, got ${JSON.stringify(protocol)}`);
  // The range of port and endPort (1-65535) is the schema's (load/schema.ts).
  if (typeof port.port === 'string' && !/^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(port.port))
    fail([...path, 'port'], `expected a port name (IANA_SVC_NAME), got ${JSON.stringify(port.port)}`);
  if (port.endPort !== undefined) {
    if (port.port === undefined) fail([...path, 'endPort'], 'endPort needs port');
    if (typeof port.port !== 'number') fail([...path, 'endPort'], 'endPort needs a numeric port');
    if (port.endPort < port.port)
      fail([...path, 'endPort'], `expected a port from ${String(port.port)} to 65535, got ${port.endPort}`);
  }
  return { protocol, port: port.port, endPort: port.endPort };
}

/**
 * Whether one peer of a NetworkPolicy in `policyNamespace` matches a pod (namespace labels as the
 * namespace has them). Malformed selectors match nothing (loading refuses them before).
 */
export function peerMatchesPod(
  peer: NetworkPolicyPeer,
  policyNamespace: string,
  pod: Workload,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (peer.ipBlock || (!peer.podSelector && !peer.namespaceSelector)) return false;
  try {
    const compiled = {
      pods: compileSelector(peer.podSelector ?? {}, [], malformed),
      namespaces: peer.namespaceSelector ? compileSelector(peer.namespaceSelector, [], malformed) : undefined,
    };
    return podPeerMatches(compiled, policyNamespace, pod, namespaceLabels(labels, pod.namespace));
  } catch {
    return false;
  }
}

/**
 * A pod peer against a pod: a namespaceSelector picks the pod's namespace by its labels (`labels`, with
 * the name label), none means the policy's own namespace; then the podSelector picks the pod.
 */
function podPeerMatches(
  peer: { pods: Selector; namespaces: Selector | undefined },
  policyNamespace: string,
  pod: Workload,
  labels: Readonly<Record<string, string>>,
): boolean {
  const namespaceOk =
    peer.namespaces === undefined ? pod.namespace === policyNamespace : peer.namespaces(labels);
  return namespaceOk && peer.pods(pod.labels);
}

/** A label selector (matchLabels and matchExpressions, all of them); empty selects everything. */
function compileSelector(selector: LabelSelector, path: (string | number)[], fail: Fail): Selector {
  const labels = Object.entries(selector.matchLabels ?? {});
  const expressions = (selector.matchExpressions ?? []).map((e, i) => {
    const at = [...path, 'matchExpressions', i];
    if (!e.key) fail([...at, 'key'], 'required');
    const key = e.key ?? '';
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) fail([...at, 'values'], `${e.operator} needs at least one value`);
        return e.operator === 'In'
          ? (l: Readonly<Record<string, string>>) => l[key] !== undefined && values.includes(l[key])
          : (l: Readonly<Record<string, string>>) => l[key] === undefined || !values.includes(l[key]);
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) fail([...at, 'values'], `${e.operator} takes no values`);
        return e.operator === 'Exists'
          ? (l: Readonly<Record<string, string>>) => l[key] !== undefined
          : (l: Readonly<Record<string, string>>) => l[key] === undefined;
      default:
        return fail(
          [...at, 'operator'],
          `expected In, NotIn, Exists or DoesNotExist, got ${JSON.stringify(e.operator)}`,
        );
    }
  });
  return (l) => labels.every(([k, v]) => l[k] === v) && expressions.every((matches) => matches(l));
}

/** An IPv4 address as a number, or undefined. */
function parseIp(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let out = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    out = out * 256 + Number(part);
  }
  return out;
}

/** An IPv4 CIDR, or undefined (IPv6 blocks are not modelled). */
function parseCidr(text: string): Cidr | undefined {
  const [address = '', bitsText] = text.split('/');
  const base = parseIp(address);
  const bits = Number(bitsText);
  if (base === undefined || bitsText === undefined || !/^\d{1,2}$/.test(bitsText) || bits > 32)
    return undefined;
  return { base, bits };
}

function inCidr(ip: number, cidr: Cidr): boolean {
  if (cidr.bits === 0) return true;
  const size = 2 ** (32 - cidr.bits);
  return Math.floor(ip / size) === Math.floor(cidr.base / size);
}

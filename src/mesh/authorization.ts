/**
 * AuthorizationPolicy on sidecars and gateways (docs/semantics.md, Authorization on sidecars and gateways): attachment by selector
 * (policies with targetRefs are ignored except on Gateway API gateways), then CUSTOM, DENY, ALLOW.
 */
import { accountOfPrincipal } from '../model/identity.ts';
import {
  isKind,
  specOf,
  type AuthorizationPolicySpec,
  type AuthorizationRule,
  type PolicyTargetRef,
} from '../model/specs.ts';
import { addTo } from '../model/multimap.ts';
import { GatewayClass, GroupKind } from '../model/vocabulary.ts';
import { compareStrings, orderKey, type KubeObject } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import type { Workload } from './workloads.ts';

/** What a rule is checked against. */
export interface AuthzRequest {
  /** Peer principal without `spiffe://` (only with mTLS). */
  principal: string | undefined;
  sourceIp: string;
  /** `iss/sub` of a validated JWT. */
  requestPrincipal: string | undefined;
  host: string;
  method: string;
  path: string;
  port: number;
  headers: Readonly<Record<string, string>>;
  destinationIp: string;
}

/** The decision and the policy behind it. */
export interface AuthzDecision {
  allowed: boolean;
  /** `allow`, `deny`: as the JSON reports it. */
  decision: 'allow' | 'deny';
  policy?: string;
  reason: string;
  /** CUSTOM providers consulted (their answer is outside the configuration; the trace assumes allow). */
  custom?: string[];
}

/** One rule of an AuthorizationPolicy. */
export type AuthzRule = AuthorizationRule;
type Source = NonNullable<NonNullable<AuthzRule['from']>[number]['source']>;
type Operation = NonNullable<NonNullable<AuthzRule['to']>[number]['operation']>;
type Condition = NonNullable<AuthzRule['when']>[number];

/** The spec of a policy. */
export function policySpec(policy: KubeObject): AuthorizationPolicySpec {
  return specOf(policy, 'security.istio.io/AuthorizationPolicy');
}

/** A policy's `selector.matchLabels`, for either kind (undefined: no selector). */
function selectorOf(policy: KubeObject): Record<string, string> | undefined {
  return isKind(policy, 'security.istio.io/RequestAuthentication')
    ? specOf(policy, 'security.istio.io/RequestAuthentication').selector?.matchLabels
    : policySpec(policy).selector?.matchLabels;
}

/**
 * The objects a policy targets: `targetRefs`, else the older single `targetRef` (Istio rejects both at once).
 * A policy with targets is enforced only by the Gateway API gateways and waypoints it names, never by
 * selector.
 */
export function targetRefsOf(policy: KubeObject): PolicyTargetRef[] {
  const spec = isKind(policy, 'security.istio.io/RequestAuthentication')
    ? specOf(policy, 'security.istio.io/RequestAuthentication')
    : policySpec(policy);
  if (spec.targetRefs && spec.targetRefs.length > 0) return spec.targetRefs;
  return spec.targetRef ? [spec.targetRef] : [];
}

/**
 * The AuthorizationPolicies (or RequestAuthentications) of the mesh, indexed by namespace, and which of
 * them each proxy takes: both kinds attach to proxies by the same rules (docs/semantics.md, Authorization
 * on sidecars and gateways, Waypoints).
 */
export class MeshPolicies {
  readonly #byNamespace = new Map<string, KubeObject[]>();
  /** `inNamespaces` answers, by the namespaces asked for. */
  readonly #byNamespaces = new Map<string, readonly KubeObject[]>();
  readonly #rootNamespace: string;
  /** `forWorkload` answers, by workload and Gateway API name. */
  readonly #byWorkload = new Map<Workload, Map<string | undefined, readonly KubeObject[]>>();

  constructor(
    snapshot: Snapshot,
    rootNamespace: string,
    kind:
      | typeof GroupKind.AuthorizationPolicy
      | typeof GroupKind.RequestAuthentication = GroupKind.AuthorizationPolicy,
  ) {
    this.#rootNamespace = rootNamespace;
    const all = [...snapshot.list(kind)].sort((a, b) => compareStrings(orderKey(a), orderKey(b)));
    for (const p of all) {
      const ns = p.metadata.namespace ?? 'default';
      addTo(this.#byNamespace, ns, p);
    }
  }

  /** The policies of these namespaces, in evaluation order (oldest first, then by name). */
  inNamespaces(...namespaces: string[]): readonly KubeObject[] {
    const key = namespaces.join('\n');
    const cached = this.#byNamespaces.get(key);
    if (cached) return cached;
    const found = [...new Set(namespaces)].flatMap((ns) => this.#byNamespace.get(ns) ?? []);
    const sorted = found.sort((a, b) => compareStrings(orderKey(a), orderKey(b)));
    this.#byNamespaces.set(key, sorted);
    return sorted;
  }

  /** The policies a sidecar or legacy gateway enforces: by selector from its namespace and the root namespace. */
  forWorkload(workload: Workload, gatewayApiName?: string): readonly KubeObject[] {
    let byName = this.#byWorkload.get(workload);
    if (!byName) this.#byWorkload.set(workload, (byName = new Map()));
    let found = byName.get(gatewayApiName);
    if (!found) byName.set(gatewayApiName, (found = this.#select(workload, gatewayApiName)));
    return found;
  }

  #select(workload: Workload, gatewayApiName: string | undefined): readonly KubeObject[] {
    const root = this.#byNamespace.get(this.#rootNamespace);
    const own =
      workload.namespace === this.#rootNamespace ? undefined : this.#byNamespace.get(workload.namespace);
    if (!root && !own) return [];
    const applies = (p: KubeObject): boolean => {
      const refs = targetRefsOf(p);
      if (refs.length > 0) {
        // Only a Gateway API gateway takes policies that target it.
        return (
          gatewayApiName !== undefined &&
          p.metadata.namespace === workload.namespace &&
          refs.some((r) => r.kind === 'Gateway' && r.name === gatewayApiName)
        );
      }
      const labels = selectorOf(p);
      return labels === undefined || labelsMatch(workload.labels, labels);
    };
    return [...(root ?? []), ...(own ?? [])].filter(applies);
  }

  /**
   * The policies a waypoint enforces (docs/semantics.md, Waypoints): those whose targetRefs name it (in
   * its namespace), the Service a request is addressed to (in the Service's namespace; none for requests
   * addressed to pods), or the waypoint GatewayClass (in the root namespace).
   */
  forWaypoint(
    waypoint: { namespace: string; name: string },
    service: { namespace: string; name: string } | undefined,
  ): readonly KubeObject[] {
    const root = this.#rootNamespace;
    const candidates = this.inNamespaces(waypoint.namespace, service?.namespace ?? waypoint.namespace, root);
    return candidates.filter((p) => {
      const ns = p.metadata.namespace;
      return targetRefsOf(p).some(
        (r) =>
          (r.kind === 'Gateway' && r.name === waypoint.name && ns === waypoint.namespace) ||
          (service !== undefined &&
            r.kind === 'Service' &&
            r.name === service.name &&
            ns === service.namespace) ||
          (r.kind === 'GatewayClass' && r.name === GatewayClass.Waypoint && ns === root),
      );
    });
  }

  /** Evaluates the policies in Envoy's order: CUSTOM, DENY, then ALLOW (no ALLOW policy → allow). */
  evaluate(policies: readonly KubeObject[], request: AuthzRequest): AuthzDecision {
    const split = byAction(policies);
    let customNames: string[] | undefined;
    for (const p of split.custom)
      if (anyRuleMatches(p, request))
        (customNames ??= []).push(`${named(p)} (provider ${policySpec(p).provider?.name ?? '?'})`);
    const decision = decide(split, request);
    return customNames ? { ...decision, custom: customNames } : decision;
  }
}

/** The DENY and ALLOW steps of `evaluate`; the decisions are the ones `byAction` made up front. */
function decide(split: ByAction, request: AuthzRequest): AuthzDecision {
  for (let i = 0; i < split.deny.length; i++)
    if (anyRuleMatches(split.deny[i] as KubeObject, request)) return split.denied[i] as AuthzDecision;
  if (split.allow.length === 0) return NoAllowPolicy;
  for (let i = 0; i < split.allow.length; i++)
    if (anyRuleMatches(split.allow[i] as KubeObject, request)) return split.allowed[i] as AuthzDecision;
  return split.noAllowMatches;
}

const NoAllowPolicy: AuthzDecision = Object.freeze({
  allowed: true,
  decision: 'allow',
  reason: 'no ALLOW policy applies',
});

/** `namespace/name` of a policy, as decisions name it. */
function named(p: KubeObject): string {
  return `${p.metadata.namespace}/${p.metadata.name}`;
}

/**
 * A list of policies split by action, in order, with the decision each DENY and ALLOW policy makes when it
 * matches (kept per list: the lists are built once per mesh, and every request they decide reuses them).
 */
interface ByAction {
  custom: readonly KubeObject[];
  deny: readonly KubeObject[];
  denied: readonly AuthzDecision[];
  allow: readonly KubeObject[];
  allowed: readonly AuthzDecision[];
  noAllowMatches: AuthzDecision;
}

const byActionCache = new WeakMap<readonly KubeObject[], ByAction>();

function byAction(policies: readonly KubeObject[]): ByAction {
  let split = byActionCache.get(policies);
  if (!split) {
    const of = (action: string) => policies.filter((p) => (policySpec(p).action ?? 'ALLOW') === action);
    const deny = of('DENY');
    const allow = of('ALLOW');
    const decision = (allowed: boolean, reason: string, policy?: KubeObject): AuthzDecision =>
      Object.freeze({
        allowed,
        decision: allowed ? 'allow' : 'deny',
        ...(policy ? { policy: named(policy) } : {}),
        reason,
      });
    split = {
      custom: of('CUSTOM'),
      deny,
      denied: deny.map((p) => decision(false, `DENY policy ${named(p)} matches`, p)),
      allow,
      allowed: allow.map((p) => decision(true, `ALLOW policy ${named(p)} matches`, p)),
      noAllowMatches: decision(false, `no rule of the ALLOW policies ${allow.map(named).join(', ')} matches`),
    };
    byActionCache.set(policies, split);
  }
  return split;
}

function anyRuleMatches(policy: KubeObject, request: AuthzRequest): boolean {
  const spec = policySpec(policy);
  const namespace = policy.metadata.namespace ?? 'default';
  // DENY/CUSTOM with no rules never match; ALLOW with no rules allows nothing.
  for (const rule of spec.rules ?? []) if (ruleMatches(rule, request, namespace)) return true;
  return false;
}

/** Does one rule match: some `from`, some `to`, every `when`? (Plain loops: this runs for every request a policy sees.) */
export function ruleMatches(rule: AuthzRule, request: AuthzRequest, policyNamespace: string): boolean {
  if (rule.from && rule.from.length > 0) {
    let any = false;
    for (const f of rule.from)
      if (sourceMatches(f.source ?? {}, request, policyNamespace)) {
        any = true;
        break;
      }
    if (!any) return false;
  }
  if (rule.to && rule.to.length > 0) {
    let any = false;
    for (const t of rule.to)
      if (operationMatches(t.operation ?? {}, request)) {
        any = true;
        break;
      }
    if (!any) return false;
  }
  for (const c of rule.when ?? []) if (!conditionMatches(c, request)) return false;
  return true;
}

/** A peer as policies see it: its principal (with mTLS) and its address. */
export interface Peer {
  principal: string;
  ip: string;
}

/**
 * How the peer conditions of a policy's rules see a peer: one character per `from` source and per `when`
 * on the peer (`source.*`, `remote.ip`), evaluated with the principal and again without it (plaintext).
 * Two peers with the same signature are decided alike by every rule of the policy, whatever the request.
 */
export function peerSignature(policy: KubeObject, peer: Peer): string {
  const spec = policySpec(policy);
  const namespace = policy.metadata.namespace ?? 'default';
  const requests = [peerRequest(peer), peerRequest({ ...peer, principal: undefined })];
  let out = '';
  for (const rule of spec.rules ?? []) {
    for (const f of rule.from ?? [])
      for (const r of requests) out += peerSourceMatches(f.source ?? {}, r, namespace) ? '1' : '0';
    for (const c of rule.when ?? [])
      if (c.key?.startsWith('source.') || c.key === 'remote.ip')
        for (const r of requests) out += conditionMatches(c, r) ? '1' : '0';
    out += '|';
  }
  return out;
}

/**
 * Whether some rule of the policy can admit a request from this peer: its `from` takes the peer (with
 * mTLS), whatever the rule says of the request (`to`, `when`), which the peer's requests may meet.
 */
export function admitsPeer(policy: KubeObject, peer: Peer): boolean {
  const namespace = policy.metadata.namespace ?? 'default';
  const request = peerRequest(peer);
  return (policySpec(policy).rules ?? []).some(
    (rule) =>
      (rule.from ?? []).length === 0 ||
      (rule.from ?? []).some((f) => peerSourceMatches(f.source ?? {}, request, namespace)),
  );
}

/** A request that says only who sends it (with mTLS when it has a principal). */
function peerRequest(peer: { principal: string | undefined; ip: string }): AuthzRequest {
  return {
    principal: peer.principal,
    sourceIp: peer.ip,
    requestPrincipal: undefined,
    host: '',
    method: '',
    path: '',
    port: 0,
    headers: {},
    destinationIp: '',
  };
}

/** A source's peer fields against a peer: its request principals are the request's, not the peer's. */
function peerSourceMatches(source: Source, request: AuthzRequest, namespace: string): boolean {
  const { requestPrincipals: _rp, notRequestPrincipals: _nrp, ...peerFields } = source;
  return sourceMatches(peerFields, request, namespace);
}

/** A test of one value of a policy field against the request. */
type FieldTest = (value: string, request: AuthzRequest, policyNamespace: string) => boolean;

/** A field and its `not` twin: some value of the field passes the test (when set), no value of the twin does. */
function fieldMatches(
  values: readonly string[] | undefined,
  notValues: readonly string[] | undefined,
  test: FieldTest,
  request: AuthzRequest,
  policyNamespace = '',
): boolean {
  if (values !== undefined) {
    let any = false;
    for (const v of values)
      if (test(v, request, policyNamespace)) {
        any = true;
        break;
      }
    if (!any) return false;
  }
  if (notValues !== undefined) for (const v of notValues) if (test(v, request, policyNamespace)) return false;
  return true;
}

/** Istio string matching: exact, `prefix*`, `*suffix`, `*` (any non-empty value). */
export function wildcardMatches(pattern: string, value: string | undefined, ignoreCase = false): boolean {
  if (value === undefined || value === '') return false;
  const p = ignoreCase ? pattern.toLowerCase() : pattern;
  const v = ignoreCase ? value.toLowerCase() : value;
  if (p === '*') return true;
  if (p.endsWith('*')) return v.startsWith(p.slice(0, -1));
  if (p.startsWith('*')) return v.endsWith(p.slice(1));
  return v === p;
}

function namespaceOfPrincipal(principal: string | undefined): string | undefined {
  return accountOfPrincipal(principal)?.namespace;
}

const principalTest: FieldTest = (p, r) => wildcardMatches(p, r.principal);
const namespaceTest: FieldTest = (n, r) => wildcardMatches(n, namespaceOfPrincipal(r.principal));
const serviceAccountTest: FieldTest = (entry, r, policyNamespace) => {
  const full = entry.includes('/') ? entry : `${policyNamespace}/${entry}`;
  const [namespace = '', serviceAccount = ''] = full.split('/');
  const account = accountOfPrincipal(r.principal);
  return account?.namespace === namespace && account.serviceAccount === serviceAccount;
};
const ipTest: FieldTest = (block, r) => ipInBlock(r.sourceIp, block);
const requestPrincipalTest: FieldTest = (p, r) => wildcardMatches(p, r.requestPrincipal);
const hostTest: FieldTest = (h, r) => wildcardMatches(h, r.host, true);
const portTest: FieldTest = (p, r) => p === String(r.port);
const methodTest: FieldTest = (m, r) => wildcardMatches(m, r.method);
const pathTest: FieldTest = (p, r) => pathMatches(p, r.path);

function sourceMatches(s: Source, r: AuthzRequest, policyNamespace: string): boolean {
  return (
    fieldMatches(s.principals, s.notPrincipals, principalTest, r) &&
    fieldMatches(s.namespaces, s.notNamespaces, namespaceTest, r) &&
    fieldMatches(s.serviceAccounts, s.notServiceAccounts, serviceAccountTest, r, policyNamespace) &&
    fieldMatches(s.ipBlocks, s.notIpBlocks, ipTest, r) &&
    fieldMatches(s.remoteIpBlocks, s.notRemoteIpBlocks, ipTest, r) &&
    fieldMatches(s.requestPrincipals, s.notRequestPrincipals, requestPrincipalTest, r)
  );
}

function operationMatches(o: Operation, r: AuthzRequest): boolean {
  return (
    fieldMatches(o.hosts, o.notHosts, hostTest, r) &&
    fieldMatches(o.ports, o.notPorts, portTest, r) &&
    fieldMatches(o.methods, o.notMethods, methodTest, r) &&
    fieldMatches(o.paths, o.notPaths, pathTest, r)
  );
}

/** Path matching: wildcards as for strings, plus `{*}` (one segment) and `{**}` (any rest) templates. */
function pathMatches(pattern: string, path: string): boolean {
  if (!pattern.includes('{')) return wildcardMatches(pattern, path);
  const source = pattern
    .split('/')
    .map((seg) =>
      seg === '{*}' ? '[^/]+' : seg === '{**}' ? '.+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${source}$`).test(path);
}

function conditionMatches(c: Condition, r: AuthzRequest): boolean {
  // Istio's validation refuses a condition without a key; such a condition matches no value here.
  const key = c.key ?? '';
  const value = conditionValue(key, r);
  const test: FieldTest = key.endsWith('.ip')
    ? (v) => value !== undefined && ipInBlock(value, v)
    : (v) => wildcardMatches(v, value);
  return fieldMatches(c.values, c.notValues, test, r);
}

function conditionValue(key: string, r: AuthzRequest): string | undefined {
  const header = /^request\.headers\[(.+)\]$/.exec(key);
  if (header) return r.headers[(header[1] ?? '').toLowerCase()];
  switch (key) {
    case 'source.ip':
    case 'remote.ip':
      return r.sourceIp;
    case 'source.namespace':
      return namespaceOfPrincipal(r.principal);
    case 'source.principal':
      return r.principal;
    case 'source.serviceAccount': {
      const account = accountOfPrincipal(r.principal);
      return account ? `${account.namespace}/${account.serviceAccount}` : undefined;
    }
    case 'request.auth.principal':
      return r.requestPrincipal;
    case 'destination.ip':
      return r.destinationIp;
    case 'destination.port':
      return String(r.port);
    default:
      return undefined;
  }
}

/** Is an IPv4 address inside a CIDR block (or equal to an address)? */
export function ipInBlock(ip: string, block: string): boolean {
  const [base, bitsText] = block.split('/');
  const toNumber = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
  if (!base || !/^\d+\.\d+\.\d+\.\d+$/.test(ip) || !/^\d+\.\d+\.\d+\.\d+$/.test(base)) return ip === block;
  const bits = bitsText === undefined ? 32 : Number(bitsText);
  const mask = bits === 0 ? 0 : Math.pow(2, 32) - Math.pow(2, 32 - bits);
  return (toNumber(ip) & mask) >>> 0 === (toNumber(base) & mask) >>> 0;
}

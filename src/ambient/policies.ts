/**
 * AuthorizationPolicy rules in ambient mode (docs/semantics.md, Ambient enrollment and waypoints): ztunnel evaluates L4
 * attributes only (principals, namespaces, IP blocks, ports, and the `source.*`/`destination.*`
 * conditions on them); anything HTTP (request principals, methods, paths, hosts, headers) needs a
 * waypoint. These helpers classify rules, rename principals, and split a policy into the part ztunnel
 * keeps and the part a waypoint enforces, so that nothing is allowed that was denied before.
 */
import { L4Attributes, l7AttributesOf, waypointReasonsOf } from '../mesh/ambient.ts';
import type {
  AuthorizationPolicySpec,
  AuthorizationRule,
  PolicyTargetRef,
  RequestAuthenticationSpec,
} from '../model/specs.ts';

type Spec = AuthorizationPolicySpec;
/** A policy the migration moves: an AuthorizationPolicy, or a RequestAuthentication (no rules). */
type AnyPolicySpec = AuthorizationPolicySpec | RequestAuthenticationSpec;
type Rule = AuthorizationRule;
type Source = NonNullable<NonNullable<Rule['from']>[number]['source']>;
type Operation = NonNullable<NonNullable<Rule['to']>[number]['operation']>;

/** The rules of a policy spec. */
function rulesOf(spec: Spec): Rule[] {
  return spec.rules ?? [];
}

/** True when ztunnel cannot enforce the policy whole: some rule uses an L7 attribute, or its action is CUSTOM or AUDIT. */
export function needsWaypoint(spec: Spec): boolean {
  return waypointReasonsOf(spec).length > 0;
}

/**
 * Renames principals in `principals`, `notPrincipals` and `source.principal` conditions: each old
 * principal becomes its replacements (an Istio ingress gateway's identity becomes the Gateway API
 * gateways'). Returns the new spec and the renames made.
 */
export function renamePrincipals(
  spec: Spec,
  renames: ReadonlyMap<string, readonly string[]>,
): { spec: Spec; renamed: string[] } {
  const renamed = new Set<string>();
  if (renames.size === 0) return { spec, renamed: [] };
  const next = mapRuleValues(
    spec,
    { source: ['principals', 'notPrincipals'], when: 'source.principal' },
    (p) => {
      const replacement = renames.get(p);
      if (replacement) renamed.add(p);
      return replacement ?? [p];
    },
  );
  if (renamed.size === 0) return { spec, renamed: [] };
  return { spec: next, renamed: [...renamed].sort() };
}

/**
 * A spec whose rules have every value of some fields replaced by what `replace` gives for it (duplicates
 * dropped): `source` fields of `from`, `operation` fields of `to`, and the values of one `when` key.
 */
function mapRuleValues(
  spec: Spec,
  fields: {
    source?: readonly (keyof Source)[];
    operation?: readonly (keyof Operation)[];
    when: string;
  },
  replace: (value: string) => readonly string[],
): Spec {
  if (!spec.rules) return spec;
  const map = (list: readonly string[]): string[] => {
    const out: string[] = [];
    for (const v of list) for (const r of replace(v)) if (!out.includes(r)) out.push(r);
    return out;
  };
  const edit = <T extends Partial<Record<K, string[]>>, K extends keyof T>(
    record: T,
    names: readonly K[] = [],
  ): T => {
    const copy = { ...record };
    for (const name of names) {
      const values = copy[name];
      if (values !== undefined) copy[name] = map(values) as T[K];
    }
    return copy;
  };
  const rules = spec.rules.map((rule): Rule => {
    const next: Rule = { ...rule };
    if (rule.from)
      next.from = rule.from.map((f) => (f.source ? { ...f, source: edit(f.source, fields.source) } : f));
    if (rule.to)
      next.to = rule.to.map((t) =>
        t.operation ? { ...t, operation: edit(t.operation, fields.operation) } : t,
      );
    if (rule.when)
      next.when = rule.when.map((w) => {
        if (w.key !== fields.when) return w;
        const c = { ...w };
        if (c.values) c.values = map(c.values);
        if (c.notValues) c.notValues = map(c.notValues);
        return c;
      });
    return next;
  });
  return { ...spec, rules };
}

/**
 * The part of a selector-based policy ztunnel keeps when the waypoint in front of the selected pods
 * enforces the whole policy.
 *
 * - ALLOW: the rules ztunnel can enforce whole, plus one admitting the waypoint. A rule with HTTP
 *   conditions is left to the waypoint whole: keeping only its L4 part would admit its sources without
 *   the HTTP condition.
 * - DENY: every rule, reduced to its L4 part (a broader deny) and not applied to the waypoint's own
 *   connections, which the waypoint has already judged by the whole rule. Connections that skip the
 *   waypoint (straight to a pod, or to pods no waypoint serves) are denied on the L4 part alone: fail closed.
 *
 * Undefined when nothing is left for ztunnel (CUSTOM, whose provider only a proxy can call).
 */
export function ztunnelPart(spec: Spec, waypointPrincipals: readonly string[]): Spec | undefined {
  const action = spec.action ?? 'ALLOW';
  const rules = rulesOf(spec);
  const { rules: _rules, ...rest } = spec;
  if (action === 'ALLOW') {
    const l4 = rules.filter((r) => l7AttributesOf(r).length === 0);
    if (waypointPrincipals.length > 0)
      l4.push({ from: [{ source: { principals: [...waypointPrincipals] } }] });
    return { ...rest, rules: l4 };
  }
  if (action === 'DENY' && rules.length > 0)
    return {
      ...rest,
      rules: rules.map((r) =>
        l7AttributesOf(r).length === 0 ? r : exceptFrom(l4PartOf(r), waypointPrincipals),
      ),
    };
  return undefined;
}

/** A rule without its L7 attributes (what ztunnel would still match on). */
function l4PartOf(rule: Rule): Rule {
  const out: Rule = {};
  const from = (rule.from ?? [])
    .map((f) => ({ source: keep(f.source ?? {}, L4Attributes.source) }))
    .filter((f) => Object.keys(f.source).length > 0);
  // A source left empty matched on L7 attributes alone: the reduced rule takes every source.
  if (from.length > 0 && from.length === (rule.from ?? []).length) out.from = from;
  const to = (rule.to ?? [])
    .map((t) => ({ operation: keep(t.operation ?? {}, L4Attributes.operation) }))
    .filter((t) => Object.keys(t.operation).length > 0);
  if (to.length > 0 && to.length === (rule.to ?? []).length) out.to = to;
  const when = (rule.when ?? []).filter((w) => w.key !== undefined && L4Attributes.when.has(w.key));
  if (when.length > 0) out.when = when;
  return out;
}

/** A rule that no longer matches connections from these principals. */
function exceptFrom(rule: Rule, principals: readonly string[]): Rule {
  if (principals.length === 0) return rule;
  const from = rule.from ?? [{ source: {} }];
  return {
    ...rule,
    from: from.map((f) => {
      const not = f.source?.notPrincipals ?? [];
      return {
        ...f,
        source: { ...f.source, notPrincipals: [...not, ...principals.filter((p) => !not.includes(p))] },
      };
    }),
  };
}

/** The entries of a record whose keys are in the set. */
function keep<T extends object>(record: T, keys: ReadonlySet<string>): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([k]) => keys.has(k))) as Partial<T>;
}

/**
 * A policy's ports as a waypoint sees them. Policies name pod (target) ports; a waypoint judges a request
 * on the Service port it was sent to, so each pod port becomes the Service ports that send to it (kept as
 * it is when no targeted Service does). In `ports`, `notPorts` and `destination.port` conditions.
 */
export function withServicePorts(
  spec: AnyPolicySpec,
  servicePorts: ReadonlyMap<string, readonly string[]>,
): { spec: AnyPolicySpec; changed: string[] } {
  const changed = new Set<string>();
  if (servicePorts.size === 0 || !('rules' in spec)) return { spec, changed: [] };
  const next = mapRuleValues(spec, { operation: ['ports', 'notPorts'], when: 'destination.port' }, (p) => {
    const to = servicePorts.get(p);
    if (to && !(to.length === 1 && to[0] === p)) changed.add(`${p} → ${to.join(', ')}`);
    return to ?? [p];
  });
  if (changed.size === 0) return { spec, changed: [] };
  return { spec: next, changed: [...changed].sort() };
}

/** A policy spec with its selector replaced by targetRefs. */
export function withTargetRefs(spec: AnyPolicySpec, targetRefs: readonly PolicyTargetRef[]): AnyPolicySpec {
  const { selector: _selector, targetRef: _targetRef, ...out } = spec;
  return { targetRefs: [...targetRefs], ...out };
}

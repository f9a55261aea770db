/**
 * AuthorizationPolicy rules in ambient mode (istio-dataplane-semantics.md §5): ztunnel evaluates L4
 * attributes only (principals, namespaces, IP blocks, ports, and the `source.*`/`destination.*`
 * conditions on them); anything HTTP (request principals, methods, paths, hosts, headers) needs a
 * waypoint. These helpers classify rules, rename principals, and split a policy into the part ztunnel
 * keeps and the part a waypoint enforces, so that nothing is allowed that was denied before.
 */
import { isPlainObject } from '../model/object.ts';

type Json = Record<string, unknown>;

/** An AuthorizationPolicy rule, loosely typed (as written by users). */
export interface Rule {
  from?: { source?: Json }[];
  to?: { operation?: Json }[];
  when?: { key?: string; values?: string[]; notValues?: string[] }[];
}

const l7SourceFields = ['requestPrincipals', 'notRequestPrincipals'];
const l7OperationFields = ['hosts', 'notHosts', 'methods', 'notMethods', 'paths', 'notPaths'];
const l4ConditionKeys = new Set([
  'source.ip',
  'remote.ip',
  'source.namespace',
  'source.principal',
  'destination.ip',
  'destination.port',
]);

/** The L7 attributes a rule uses (empty: ztunnel can enforce it whole). */
export function l7AttributesOf(rule: Rule): string[] {
  const found = new Set<string>();
  for (const f of rule.from ?? [])
    for (const field of l7SourceFields) if (f.source?.[field] !== undefined) found.add(`source.${field}`);
  for (const t of rule.to ?? [])
    for (const field of l7OperationFields)
      if (t.operation?.[field] !== undefined) found.add(`operation.${field}`);
  for (const w of rule.when ?? []) if (w.key !== undefined && !l4ConditionKeys.has(w.key)) found.add(w.key);
  return [...found].sort();
}

/** The rules of a policy spec. */
export function rulesOf(spec: Json): Rule[] {
  return Array.isArray(spec['rules']) ? (spec['rules'] as Rule[]) : [];
}

/** True when some rule uses an L7 attribute. */
export function usesL7(spec: Json): boolean {
  return rulesOf(spec).some((r) => l7AttributesOf(r).length > 0);
}

/**
 * Renames principals in `principals`, `notPrincipals` and `source.principal` conditions: each old
 * principal becomes its replacements (an Istio ingress gateway's identity becomes the Gateway API
 * gateways'). Returns the new spec and the renames made.
 */
export function renamePrincipals(
  spec: Json,
  renames: ReadonlyMap<string, readonly string[]>,
): { spec: Json; renamed: string[] } {
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
  spec: Json,
  fields: { source?: readonly string[]; operation?: readonly string[]; when: string },
  replace: (value: string) => readonly string[],
): Json {
  if (!Array.isArray(spec['rules'])) return spec;
  const map = (list: unknown): unknown => {
    if (!Array.isArray(list)) return list;
    const out: string[] = [];
    for (const v of list as string[]) for (const r of replace(String(v))) if (!out.includes(r)) out.push(r);
    return out;
  };
  const edit = (record: Json, names: readonly string[] = []): Json => {
    const copy: Json = { ...record };
    for (const name of names) if (copy[name] !== undefined) copy[name] = map(copy[name]);
    return copy;
  };
  const rules = (spec['rules'] as Rule[]).map((rule): Rule => {
    const next: Rule = { ...rule };
    if (rule.from)
      next.from = rule.from.map((f) =>
        isPlainObject(f.source) ? { ...f, source: edit(f.source, fields.source) } : f,
      );
    if (rule.to)
      next.to = rule.to.map((t) =>
        isPlainObject(t.operation) ? { ...t, operation: edit(t.operation, fields.operation) } : t,
      );
    if (rule.when)
      next.when = rule.when.map((w) => {
        if (w.key !== fields.when) return w;
        const c = { ...w };
        if (c.values) c.values = map(c.values) as string[];
        if (c.notValues) c.notValues = map(c.notValues) as string[];
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
export function ztunnelPart(spec: Json, waypointPrincipals: readonly string[]): Json | undefined {
  const action = (spec['action'] as string | undefined) ?? 'ALLOW';
  const rules = rulesOf(spec);
  const rest: Json = { ...spec };
  delete rest['rules'];
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
    .map((f) => ({ source: omit(f.source ?? {}, l7SourceFields) }))
    .filter((f) => Object.keys(f.source).length > 0);
  // A source left empty matched on L7 attributes alone: the reduced rule takes every source.
  if (from.length > 0 && from.length === (rule.from ?? []).length) out.from = from;
  const to = (rule.to ?? [])
    .map((t) => ({ operation: omit(t.operation ?? {}, l7OperationFields) }))
    .filter((t) => Object.keys(t.operation).length > 0);
  if (to.length > 0 && to.length === (rule.to ?? []).length) out.to = to;
  const when = (rule.when ?? []).filter((w) => w.key !== undefined && l4ConditionKeys.has(w.key));
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
      const source = { ...(f.source ?? {}) };
      const not = Array.isArray(source['notPrincipals']) ? (source['notPrincipals'] as string[]) : [];
      source['notPrincipals'] = [...not, ...principals.filter((p) => !not.includes(p))];
      return { ...f, source };
    }),
  };
}

function omit(record: Json, keys: readonly string[]): Json {
  return Object.fromEntries(Object.entries(record).filter(([k]) => !keys.includes(k)));
}

/**
 * A policy's ports as a waypoint sees them. Policies name pod (target) ports; a waypoint judges a request
 * on the Service port it was sent to, so each pod port becomes the Service ports that send to it (kept as
 * it is when no targeted Service does). In `ports`, `notPorts` and `destination.port` conditions.
 */
export function withServicePorts(
  spec: Json,
  servicePorts: ReadonlyMap<string, readonly string[]>,
): { spec: Json; changed: string[] } {
  const changed = new Set<string>();
  if (servicePorts.size === 0) return { spec, changed: [] };
  const next = mapRuleValues(spec, { operation: ['ports', 'notPorts'], when: 'destination.port' }, (p) => {
    const to = servicePorts.get(p);
    if (to && !(to.length === 1 && to[0] === p)) changed.add(`${p} → ${to.join(', ')}`);
    return to ?? [p];
  });
  if (changed.size === 0) return { spec, changed: [] };
  return { spec: next, changed: [...changed].sort() };
}

/** A policy spec with its selector replaced by targetRefs. */
export function withTargetRefs(spec: Json, targetRefs: readonly Json[]): Json {
  const out: Json = { ...spec };
  delete out['selector'];
  delete out['targetRef'];
  return { targetRefs: [...targetRefs], ...out };
}

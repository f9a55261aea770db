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
  const rename = (list: unknown): unknown => {
    if (!Array.isArray(list)) return list;
    const out: string[] = [];
    for (const p of list as string[]) {
      const replacement = renames.get(p);
      if (replacement) {
        renamed.add(p);
        for (const r of replacement) if (!out.includes(r)) out.push(r);
      } else if (!out.includes(p)) out.push(p);
    }
    return out;
  };
  if (renames.size === 0 || !Array.isArray(spec['rules'])) return { spec, renamed: [] };
  const rules = (spec['rules'] as Rule[]).map((rule): Rule => {
    const next: Rule = { ...rule };
    if (rule.from)
      next.from = rule.from.map((f) => {
        if (!isPlainObject(f.source)) return f;
        const source: Json = { ...f.source };
        for (const field of ['principals', 'notPrincipals'])
          if (source[field] !== undefined) source[field] = rename(source[field]);
        return { ...f, source };
      });
    if (rule.when)
      next.when = rule.when.map((w) => {
        if (w.key !== 'source.principal') return w;
        const c = { ...w };
        if (c.values) c.values = rename(c.values) as string[];
        if (c.notValues) c.notValues = rename(c.notValues) as string[];
        return c;
      });
    return next;
  });
  if (renamed.size === 0) return { spec, renamed: [] };
  return { spec: { ...spec, rules }, renamed: [...renamed].sort() };
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
  const changedPorts = new Set<string>();
  const map = (list: unknown): unknown => {
    if (!Array.isArray(list)) return list;
    const out: string[] = [];
    for (const p of list as string[]) {
      const to = servicePorts.get(String(p));
      if (to && !(to.length === 1 && to[0] === String(p))) changedPorts.add(`${p} → ${to.join(', ')}`);
      for (const q of to ?? [String(p)]) if (!out.includes(q)) out.push(q);
    }
    return out;
  };
  if (servicePorts.size === 0 || !Array.isArray(spec['rules'])) return { spec, changed: [] };
  const rules = (spec['rules'] as Rule[]).map((rule): Rule => {
    const next: Rule = { ...rule };
    if (rule.to)
      next.to = rule.to.map((t) => {
        if (!isPlainObject(t.operation)) return t;
        const operation: Json = { ...t.operation };
        for (const field of ['ports', 'notPorts'])
          if (operation[field] !== undefined) operation[field] = map(operation[field]);
        return { ...t, operation };
      });
    if (rule.when)
      next.when = rule.when.map((w) => {
        if (w.key !== 'destination.port') return w;
        const c = { ...w };
        if (c.values) c.values = map(c.values) as string[];
        if (c.notValues) c.notValues = map(c.notValues) as string[];
        return c;
      });
    return next;
  });
  if (changedPorts.size === 0) return { spec, changed: [] };
  return { spec: { ...spec, rules }, changed: [...changedPorts].sort() };
}

/** A policy spec with its selector replaced by targetRefs. */
export function withTargetRefs(spec: Json, targetRefs: readonly Json[]): Json {
  const out: Json = { ...spec };
  delete out['selector'];
  delete out['targetRef'];
  return { targetRefs: [...targetRefs], ...out };
}

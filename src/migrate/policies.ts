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
 * The part of a selector-based policy ztunnel keeps when the selected pods sit behind a waypoint that
 * enforces the whole policy: for ALLOW, the rules ztunnel can enforce whole plus one admitting the
 * waypoint (a rule with HTTP conditions is left to the waypoint whole: keeping only its L4 part at ztunnel
 * would admit its sources without the HTTP condition); for DENY, the rules ztunnel can enforce whole.
 * Undefined when nothing is left for ztunnel.
 */
export function ztunnelPart(spec: Json, waypointPrincipals: readonly string[]): Json | undefined {
  const action = (spec['action'] as string | undefined) ?? 'ALLOW';
  const l4 = rulesOf(spec).filter((r) => l7AttributesOf(r).length === 0);
  const rest: Json = { ...spec };
  delete rest['rules'];
  if (action === 'ALLOW') {
    const rules: Rule[] = [...l4];
    if (waypointPrincipals.length > 0)
      rules.push({ from: [{ source: { principals: [...waypointPrincipals] } }] });
    return { ...rest, rules };
  }
  if (action === 'DENY' && l4.length > 0) return { ...rest, rules: l4 };
  return undefined;
}

/** A policy spec with its selector replaced by targetRefs. */
export function withTargetRefs(spec: Json, targetRefs: readonly Json[]): Json {
  const out: Json = { ...spec };
  delete out['selector'];
  delete out['targetRef'];
  return { targetRefs: [...targetRefs], ...out };
}

/**
 * Matching an HTTP request against VirtualService rules as Envoy does with Istio's translation
 * (docs/semantics.md, Sidecar outbound): matches OR'd, conditions AND'd, first rule wins; regexes are RE2
 * full matches; `:authority` is the raw Host (port included).
 */
import { labelsMatch } from '../load/snapshot.ts';
import type { HttpMatch, HttpRule, StringMatch } from './virtual-services.ts';

/** The request as a proxy sees it. */
export interface HttpRequest {
  method: string;
  scheme: string;
  /** Host header as sent (may carry `:port`). */
  authority: string;
  /** Path without the query. */
  path: string;
  query: Readonly<Record<string, string>>;
  /** Header names lower-case. */
  headers: Readonly<Record<string, string>>;
}

/** Who evaluates the rules: the gateway names (`mesh` for sidecars), the listener port, the client proxy's labels. */
export interface MatchContext {
  gateways: readonly string[];
  port: number;
  sourceLabels: Readonly<Record<string, string>>;
  sourceNamespace: string;
}

const regexCache = new Map<string, RegExp | null>();

/** An RE2 pattern as a JavaScript full-match RegExp (null when it does not compile). `(?i)` becomes the i flag. */
export function fullMatchRegex(pattern: string): RegExp | null {
  const cached = regexCache.get(pattern);
  if (cached !== undefined) return cached;
  let source = pattern;
  let flags = '';
  if (source.startsWith('(?i)')) {
    source = source.slice(4);
    flags = 'i';
  }
  let compiled: RegExp | null;
  try {
    compiled = new RegExp(`^(?:${source})$`, flags);
  } catch {
    compiled = null;
  }
  regexCache.set(pattern, compiled);
  return compiled;
}

/** Does the string match (`regex: "*"` is Istio's presence match)? */
export function stringMatches(match: StringMatch, value: string | undefined, ignoreCase = false): boolean {
  if (value === undefined) return false;
  const v = ignoreCase ? value.toLowerCase() : value;
  if (match.exact !== undefined) return v === (ignoreCase ? match.exact.toLowerCase() : match.exact);
  if (match.prefix !== undefined) return v.startsWith(ignoreCase ? match.prefix.toLowerCase() : match.prefix);
  if (match.pathSeparatedPrefix !== undefined) {
    const p = match.pathSeparatedPrefix;
    return v === p || v.startsWith(`${p}/`);
  }
  if (match.regex !== undefined) {
    if (match.regex === '*') return true;
    const re = fullMatchRegex(match.regex);
    return re !== null && re.test(value);
  }
  return true;
}

/** Is this match entry generated for this proxy at all (per-match gateways, port, source labels/namespace)? */
export function matchApplies(match: HttpMatch, context: MatchContext): boolean {
  if (
    match.gateways &&
    match.gateways.length > 0 &&
    !match.gateways.some((g) => context.gateways.includes(g))
  )
    return false;
  if (match.port !== undefined && match.port !== context.port) return false;
  if (match.sourceLabels !== undefined && !labelsMatch(context.sourceLabels, match.sourceLabels))
    return false;
  if (match.sourceNamespace !== undefined && match.sourceNamespace !== context.sourceNamespace) return false;
  return true;
}

/** Does the request meet every condition of one match entry? */
export function requestMatches(match: HttpMatch, request: HttpRequest): boolean {
  if (match.uri && !stringMatches(match.uri, request.path, match.ignoreUriCase === true)) return false;
  if (match.scheme && !stringMatches(match.scheme, request.scheme)) return false;
  if (match.method && !stringMatches(match.method, request.method)) return false;
  if (match.authority && !stringMatches(match.authority, request.authority)) return false;
  // `for…in` over the (plain, parsed) condition maps: no entry arrays on this hot path.
  const { headers, withoutHeaders, queryParams } = match;
  if (headers !== undefined)
    for (const name in headers)
      if (!stringMatches(headers[name] as StringMatch, request.headers[name.toLowerCase()])) return false;
  if (withoutHeaders !== undefined)
    for (const name in withoutHeaders)
      if (stringMatches(withoutHeaders[name] as StringMatch, request.headers[name.toLowerCase()]))
        return false;
  if (queryParams !== undefined)
    for (const name in queryParams)
      if (!stringMatches(queryParams[name] as StringMatch, request.query[name])) return false;
  return true;
}

/** A rule a request took: the rule, its index, and the match entry that matched (none for a match-less rule). */
export interface MatchedRule {
  rule: HttpRule;
  index: number;
  match?: HttpMatch;
}

/** The first rule the request takes, among the rules this proxy got; first match wins. */
export function firstMatchingRule(
  rules: readonly HttpRule[],
  request: HttpRequest,
  context: MatchContext,
): MatchedRule | undefined {
  for (let index = 0; index < rules.length; index++) {
    const rule = rules[index] as HttpRule;
    if (!rule.match || rule.match.length === 0) return { rule, index };
    // A rule whose matches were all filtered out for this proxy produces no route here.
    for (const match of rule.match)
      if (matchApplies(match, context) && requestMatches(match, request)) return { rule, index, match };
  }
  return undefined;
}

/** Is the rule a catch-all (no match, or a match on `/` prefix or `.*` alone)? Used to order merged gateway routes. */
export function isCatchAllRule(rule: HttpRule): boolean {
  if (!rule.match || rule.match.length === 0) return true;
  return rule.match.some((m) => {
    const keys = Object.keys(m).filter(
      (k) => !['name', 'gateways', 'port', 'sourceLabels', 'sourceNamespace'].includes(k),
    );
    if (keys.length === 0) return true;
    if (keys.length !== 1 || !m.uri) return false;
    return m.uri.prefix === '/' || m.uri.regex === '.*' || m.uri.regex === '/.*';
  });
}

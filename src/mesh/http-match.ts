/**
 * Matching an HTTP request against VirtualService rules as Envoy does with Istio's translation
 * (docs/semantics.md, Sidecar outbound): matches OR'd, conditions AND'd, first rule wins; regexes are RE2
 * full matches (`regex.ts`); `:authority` is the raw Host (port included).
 */
import { at } from '../model/checked.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { fullMatch } from './regex.ts';
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
    return fullMatch(match.regex, value);
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
    for (const name in headers) {
      const condition = headers[name];
      if (condition && !stringMatches(condition, request.headers[name.toLowerCase()])) return false;
    }
  if (withoutHeaders !== undefined)
    for (const name in withoutHeaders) {
      const refused = withoutHeaders[name];
      if (refused && stringMatches(refused, request.headers[name.toLowerCase()])) return false;
    }
  if (queryParams !== undefined)
    for (const name in queryParams) {
      const condition = queryParams[name];
      if (condition && !stringMatches(condition, request.query[name])) return false;
    }
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
    const rule = at(rules, index);
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

/**
 * Does every value that `later` accepts also meet `earlier` (docs/semantics.md, Rules that can never
 * apply)? Only what can be shown from the two patterns: a regex covers an exact value it matches, or the
 * same regex; nothing else about regexes is decided.
 */
function stringMatchCovers(earlier: StringMatch, later: StringMatch, ignoreCase = false): boolean {
  const fold = (s: string) => (ignoreCase ? s.toLowerCase() : s);
  const value = later.exact;
  if (earlier.regex === '*') return true;
  if (earlier.exact !== undefined) return value !== undefined && fold(value) === fold(earlier.exact);
  if (earlier.prefix !== undefined) {
    const p = fold(earlier.prefix);
    const start = later.exact ?? later.prefix ?? later.pathSeparatedPrefix;
    return start !== undefined && fold(start).startsWith(p);
  }
  if (earlier.pathSeparatedPrefix !== undefined) {
    const p = fold(earlier.pathSeparatedPrefix);
    const under = (s: string) => fold(s).startsWith(`${p}/`);
    if (value !== undefined) return fold(value) === p || under(value);
    if (later.pathSeparatedPrefix !== undefined)
      return fold(later.pathSeparatedPrefix) === p || under(later.pathSeparatedPrefix);
    return later.prefix !== undefined && under(later.prefix);
  }
  if (earlier.regex !== undefined) {
    if (later.regex !== undefined) return later.regex === earlier.regex;
    return value !== undefined && fullMatch(earlier.regex, value);
  }
  return true;
}

/** Every condition of `earlier`'s map met by every request `later` accepts (a header `earlier` requires, `later` requires too). */
function conditionsCover(
  earlier: Readonly<Record<string, StringMatch>> | undefined,
  later: Readonly<Record<string, StringMatch>> | undefined,
): boolean {
  for (const name in earlier ?? {}) {
    const [own, condition] = [earlier?.[name], later?.[name]];
    if (own === undefined || condition === undefined || !stringMatchCovers(own, condition)) return false;
  }
  return true;
}

/** Every header `earlier` refuses, `later` refuses too (it refuses at least the values `earlier` does). */
function refusalsCover(
  earlier: Readonly<Record<string, StringMatch>> | undefined,
  later: Readonly<Record<string, StringMatch>> | undefined,
): boolean {
  for (const name in earlier ?? {}) {
    const [own, refused] = [earlier?.[name], later?.[name]];
    if (own === undefined || refused === undefined || !stringMatchCovers(refused, own)) return false;
  }
  return true;
}

/** Where `earlier` is generated, `later` is too, and no more widely (per-match gateways, port, source). */
function scopeCovers(earlier: HttpMatch, later: HttpMatch): boolean {
  if (earlier.port !== undefined && earlier.port !== later.port) return false;
  if (earlier.sourceNamespace !== undefined && earlier.sourceNamespace !== later.sourceNamespace)
    return false;
  if (earlier.gateways && earlier.gateways.length > 0) {
    if (!later.gateways || later.gateways.length === 0) return false;
    if (!later.gateways.every((g) => earlier.gateways?.includes(g))) return false;
  }
  for (const [key, value] of Object.entries(earlier.sourceLabels ?? {}))
    if (later.sourceLabels?.[key] !== value) return false;
  return true;
}

/**
 * Does `earlier` take every request `later` would (so `later`, checked after it, never matches)? A
 * condition `earlier` sets must be implied by one `later` sets; a condition only `later` sets narrows it
 * further. A field either leaves undecided makes the answer no.
 */
export function matchCovers(earlier: HttpMatch, later: HttpMatch): boolean {
  if (!scopeCovers(earlier, later)) return false;
  if (earlier.uri) {
    if (!later.uri) return false;
    // A case-blind later match accepts spellings a case-sensitive earlier one refuses.
    if (later.ignoreUriCase === true && earlier.ignoreUriCase !== true) return false;
    if (!stringMatchCovers(earlier.uri, later.uri, earlier.ignoreUriCase === true)) return false;
  }
  for (const field of ['scheme', 'method', 'authority'] as const) {
    const condition = earlier[field];
    if (condition === undefined) continue;
    const narrower = later[field];
    if (narrower === undefined || !stringMatchCovers(condition, narrower)) return false;
  }
  return (
    conditionsCover(earlier.headers, later.headers) &&
    conditionsCover(earlier.queryParams, later.queryParams) &&
    refusalsCover(earlier.withoutHeaders, later.withoutHeaders)
  );
}

/**
 * The request with some parts changed, always in one object shape (an object spread here would give the
 * rewritten requests of many routes many hidden classes, and every later read of them would slow down).
 */
export function requestWith(
  r: HttpRequest,
  change: { path?: string; authority?: string; headers?: Readonly<Record<string, string>> },
): HttpRequest {
  return {
    method: r.method,
    scheme: r.scheme,
    authority: change.authority ?? r.authority,
    path: change.path ?? r.path,
    query: r.query,
    headers: change.headers ?? r.headers,
  };
}

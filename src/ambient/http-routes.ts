/**
 * VirtualService HTTP routes → Gateway API HTTPRoute rules (what ingress2gateway's Istio provider does,
 * plus mesh routes and per-destination headers): path, header, query and method matches, prefix and
 * full-path rewrites, authority rewrites, header operations, redirects, mirrors, timeouts and weighted
 * destinations. What Gateway API can't say is left out and noted; a match entry that can't be said is
 * left out whole, so a converted route never matches more requests than the original did.
 */
import { Group } from '../model/vocabulary.ts';
import type { HTTPRouteSpec, VirtualServiceSpec } from '../model/specs.ts';
import { action, changed, dropped, type Note } from './migration-report.ts';

/** A VirtualService's HTTP route and its parts, as its schema types them. */
export type VirtualServiceRoute = NonNullable<VirtualServiceSpec['http']>[number];
type MatchRequest = NonNullable<VirtualServiceRoute['match']>[number];
type Destination = NonNullable<NonNullable<VirtualServiceRoute['route']>[number]['destination']>;
type HeaderOperations = NonNullable<NonNullable<VirtualServiceRoute['headers']>['request']>;
type Redirect = NonNullable<VirtualServiceRoute['redirect']>;

/** An HTTPRoute rule and its parts, as the Gateway API schema types them. */
export type RouteRule = NonNullable<HTTPRouteSpec['rules']>[number];
type RouteMatch = NonNullable<RouteRule['matches']>[number];
type RouteFilter = NonNullable<RouteRule['filters']>[number];
type BackendRef = NonNullable<RouteRule['backendRefs']>[number];
type UrlRewrite = NonNullable<RouteFilter['urlRewrite']>;
type HeaderModifier = NonNullable<RouteFilter['requestHeaderModifier']>;
type RequestRedirect = NonNullable<RouteFilter['requestRedirect']>;
type StringMatchEntry = NonNullable<RouteMatch['headers']>[number];

/** Where a destination host points, for backendRefs. */
export type BackendTarget =
  | { kind: 'service'; name: string; namespace: string; ports: readonly number[] }
  | { kind: 'hostname'; host: string };

/** What the route converter needs to know of the cluster. */
export interface RouteContext {
  /** The VirtualService's namespace (backendRefs in it carry no namespace). */
  namespace: string;
  /** Resolves a destination host (short names already expanded) to a Service or a plain host name. */
  resolve(host: string): BackendTarget | undefined;
  /** Expands a destination host as Istio does (`name` → `name.<vsNs>.svc.<clusterDomain>`). */
  expand(host: string): string;
}

/** Match fields with no Gateway API equivalent: a match entry using one is left out. */
const unsupportedMatchFields: readonly (readonly [keyof MatchRequest, string])[] = [
  ['authority', 'Gateway API matches the host only through the route hostnames'],
  ['scheme', 'Gateway API has no scheme match'],
  ['port', 'Gateway API matches the port through the parent listener, not per match'],
  ['sourceLabels', 'Gateway API has no match on the client workload'],
  ['sourceNamespace', 'Gateway API has no match on the client namespace'],
  ['withoutHeaders', 'Gateway API has no negated header match'],
  ['statPrefix', 'Gateway API has no per-match statistics prefix'],
];

/** Route fields with no Gateway API equivalent: left out, the rest of the route kept. */
const unsupportedRouteFields: readonly (readonly [keyof VirtualServiceRoute, string])[] = [
  ['retries', 'Gateway API HTTPRoute has no retry policy (Istio applies its default of 2 attempts)'],
  ['fault', 'Gateway API has no fault injection'],
  ['corsPolicy', 'Gateway API HTTPRoute has no CORS policy'],
  ['mirrorPercentage', 'Gateway API mirrors every request; the percentage is lost'],
  ['mirrorPercent', 'Gateway API mirrors every request; the percentage is lost'],
  ['mirrors', 'only a single mirror without a percentage is converted'],
];

/** The HTTPRoute rules of a VirtualService's `http` for one parent (matches filtered by their `gateways`). */
export function convertHttpRoutes(
  http: readonly VirtualServiceRoute[],
  parent: string,
  resolveGateway: (name: string) => string,
  context: RouteContext,
  notes: Note[],
): RouteRule[] {
  const rules: RouteRule[] = [];
  http.forEach((route, index) => {
    const field = `spec.http[${index}]`;
    const matches = route.match ?? [];
    const forParent = matches.filter(
      (m) => m.gateways === undefined || m.gateways.map(resolveGateway).includes(parent),
    );
    if (matches.length > 0 && forParent.length === 0) return;
    if (route.delegate !== undefined) {
      notes.push(dropped(`${field}.delegate`, 'Gateway API has no delegation; the route is left out'));
      return;
    }
    if (route.directResponse !== undefined) {
      notes.push(
        dropped(`${field}.directResponse`, 'Gateway API has no direct response; the route is left out'),
      );
      return;
    }
    const convertedMatches: RouteMatch[] = [];
    forParent.forEach((m) => {
      const i = matches.indexOf(m);
      const converted = convertMatch(m, `${field}.match[${i}]`, notes);
      if (converted) convertedMatches.push(converted);
    });
    if (forParent.length > 0 && convertedMatches.length === 0) {
      notes.push(dropped(field, 'none of its matches can be expressed; the route is left out'));
      return;
    }
    for (const [key, reason] of unsupportedRouteFields) {
      const value: unknown = route[key];
      if (
        value === undefined ||
        (typeof value === 'object' && value !== null && Object.keys(value).length === 0)
      )
        continue;
      notes.push(dropped(`${field}.${key}`, reason));
    }
    const shared = routeFilters(route, field, context, notes);
    const base: RouteRule = {};
    if (shared.timeouts) base.timeouts = shared.timeouts;
    if (shared.backendRefs.length > 0) base.backendRefs = shared.backendRefs;
    const uriRewrite = route.rewrite?.uri;
    if (uriRewrite === undefined) {
      rules.push({
        ...(convertedMatches.length > 0 ? { matches: convertedMatches } : {}),
        ...(shared.filters.length > 0 ? { filters: shared.filters } : {}),
        ...base,
      });
      return;
    }
    // A path rewrite depends on the match: prefix matches replace the prefix, the others the whole path.
    // Gateway API ties the rewrite to the rule, so each match becomes a rule of its own.
    const each: RouteMatch[] =
      convertedMatches.length > 0 ? convertedMatches : [{ path: { type: 'PathPrefix', value: '/' } }];
    for (const m of each) {
      const path = m.path;
      const urlRewrite: UrlRewrite = { ...(shared.urlRewrite ?? {}) };
      urlRewrite.path =
        path === undefined || path.type === 'PathPrefix'
          ? { type: 'ReplacePrefixMatch', replacePrefixMatch: uriRewrite }
          : { type: 'ReplaceFullPath', replaceFullPath: uriRewrite };
      const match: RouteMatch = path === undefined ? { ...m, path: { type: 'PathPrefix', value: '/' } } : m;
      const filters = shared.filters.filter((f) => f.type !== 'URLRewrite');
      filters.push({ type: 'URLRewrite', urlRewrite });
      rules.push({ matches: [match], filters, ...base });
    }
  });
  return rules;
}

/** One HTTPMatchRequest → an HTTPRouteMatch; undefined (with a note) when a field can't be said. */
function convertMatch(match: MatchRequest, field: string, notes: Note[]): RouteMatch | undefined {
  for (const [key, reason] of unsupportedMatchFields) {
    if (match[key] === undefined) continue;
    notes.push(dropped(`${field}.${key}`, `${reason}; this match entry is left out`));
    return undefined;
  }
  const out: RouteMatch = {};
  const ignoreCase = match.ignoreUriCase === true;
  const uri = match.uri;
  if (uri) {
    if (ignoreCase) {
      notes.push(
        dropped(
          `${field}.ignoreUriCase`,
          'Gateway API paths match case-sensitively; this match entry is left out',
        ),
      );
      return undefined;
    }
    if (uri.exact !== undefined) out.path = { type: 'Exact', value: uri.exact };
    else if (uri.regex !== undefined) out.path = { type: 'RegularExpression', value: uri.regex };
    else if (uri.prefix !== undefined) {
      const prefix = uri.prefix;
      out.path = { type: 'PathPrefix', value: prefix };
      if (prefix !== '/' && prefix.endsWith('/'))
        notes.push(
          changed(
            `${field}.uri.prefix`,
            `Gateway API prefixes match whole path segments: "${prefix}" now also matches "${prefix.slice(0, -1)}"`,
          ),
        );
      else if (prefix !== '/')
        notes.push(
          changed(
            `${field}.uri.prefix`,
            `Gateway API prefixes match whole path segments: "${prefix}" no longer matches paths that only start with it (such as "${prefix}x")`,
          ),
        );
    }
  }
  const headers = stringMatches(match.headers, `${field}.headers`, notes);
  if (headers === null) return undefined;
  if (headers.length > 0) out.headers = headers;
  const query = stringMatches(match.queryParams, `${field}.queryParams`, notes);
  if (query === null) return undefined;
  if (query.length > 0) out.queryParams = query;
  const method = match.method;
  if (method) {
    if (method.exact === undefined) {
      notes.push(
        dropped(`${field}.method`, 'Gateway API matches one exact method; this match entry is left out'),
      );
      return undefined;
    }
    const upper = method.exact.toUpperCase();
    if (!isGatewayMethod(upper)) {
      notes.push(
        dropped(`${field}.method`, `Gateway API has no method ${upper}; this match entry is left out`),
      );
      return undefined;
    }
    out.method = upper;
  }
  return out;
}

/** Header or query matches → name/type/value entries; null (noted) when one can't be said. */
function stringMatches(
  value: MatchRequest['headers'] | MatchRequest['queryParams'],
  field: string,
  notes: Note[],
): StringMatchEntry[] | null {
  if (!value) return [];
  const out: StringMatchEntry[] = [];
  for (const [name, match] of Object.entries(value)) {
    if (match.exact !== undefined) out.push({ name, type: 'Exact', value: match.exact });
    else if (match.regex !== undefined) out.push({ name, type: 'RegularExpression', value: match.regex });
    else if (match.prefix !== undefined)
      out.push({ name, type: 'RegularExpression', value: `${escapeRegex(match.prefix)}.*` });
    else {
      notes.push(
        dropped(`${field}.${name}`, 'no Gateway API equivalent for this match; the match entry is left out'),
      );
      return null;
    }
  }
  return out.sort((a, b) => ((a.name ?? '') < (b.name ?? '') ? -1 : 1));
}

interface RouteParts {
  filters: RouteFilter[];
  urlRewrite?: UrlRewrite;
  timeouts?: RouteRule['timeouts'];
  backendRefs: BackendRef[];
}

/** The filters, timeouts and backends of one route (shared by every rule it becomes). */
function routeFilters(
  route: VirtualServiceRoute,
  field: string,
  context: RouteContext,
  notes: Note[],
): RouteParts {
  const filters: RouteFilter[] = [];
  const request = headerModifier(route.headers?.request);
  if (request) filters.push({ type: 'RequestHeaderModifier', requestHeaderModifier: request });
  const response = headerModifier(route.headers?.response);
  if (response) filters.push({ type: 'ResponseHeaderModifier', responseHeaderModifier: response });
  let urlRewrite: UrlRewrite | undefined;
  const rewrite = route.rewrite ?? {};
  if (rewrite.authority !== undefined) urlRewrite = { hostname: rewrite.authority };
  if (rewrite.uriRegexRewrite !== undefined)
    notes.push(
      action(
        `${field}.rewrite.uriRegexRewrite`,
        'Gateway API has no regex rewrite; the route is kept without it, so the backend sees the original path: rewrite it by hand',
      ),
    );
  if (urlRewrite && rewrite.uri === undefined) filters.push({ type: 'URLRewrite', urlRewrite });
  const redirect = route.redirect;
  if (redirect)
    filters.push({
      type: 'RequestRedirect',
      requestRedirect: convertRedirect(redirect, `${field}.redirect`, notes),
    });
  const mirror = route.mirror;
  if (mirror && route.mirrorPercentage === undefined && route.mirrorPercent === undefined) {
    const backend = backendRef(mirror, `${field}.mirror`, context, notes, false);
    if (backend) filters.push({ type: 'RequestMirror', requestMirror: { backendRef: backend } });
  }
  const parts: RouteParts = { filters, backendRefs: [] };
  if (urlRewrite) parts.urlRewrite = urlRewrite;
  if (route.timeout !== undefined) {
    const timeout = gatewayDuration(route.timeout);
    if (timeout) parts.timeouts = { request: timeout };
    else notes.push(dropped(`${field}.timeout`, `"${route.timeout}" is not a duration Gateway API accepts`));
  }
  const destinations = route.route ?? [];
  destinations.forEach((d, i) => {
    const where = `${field}.route[${i}]`;
    const ref = backendRef(d.destination, `${where}.destination`, context, notes, destinations.length > 1);
    if (!ref) return;
    if (d.weight !== undefined && destinations.length > 1) ref.weight = d.weight;
    const dFilters: NonNullable<BackendRef['filters']> = [];
    const dRequest = headerModifier(d.headers?.request);
    if (dRequest) dFilters.push({ type: 'RequestHeaderModifier', requestHeaderModifier: dRequest });
    const dResponse = headerModifier(d.headers?.response);
    if (dResponse) dFilters.push({ type: 'ResponseHeaderModifier', responseHeaderModifier: dResponse });
    if (dFilters.length > 0) ref.filters = dFilters;
    parts.backendRefs.push(ref);
  });
  return parts;
}

/** A Destination → a backendRef (Service, or Istio's Hostname kind for other hosts). */
function backendRef(
  destination: Destination | undefined,
  field: string,
  context: RouteContext,
  notes: Note[],
  weighted: boolean,
): BackendRef | undefined {
  if (destination?.host === undefined) return undefined;
  const host = context.expand(destination.host);
  if (destination.subset !== undefined)
    notes.push(
      action(
        `${field}.subset`,
        `Gateway API has no subsets: the backend is the whole Service; give subset "${destination.subset}" a Service of its own and point the route at it`,
      ),
    );
  const port = destination.port?.number;
  const target = context.resolve(host);
  if (target === undefined) {
    notes.push(
      dropped(field, `${host} is neither a Service nor a ServiceEntry host; the backend is left out`),
    );
    return undefined;
  }
  if (target.kind === 'hostname') {
    const ref: BackendRef = { group: Group.IstioNetworking, kind: 'Hostname', name: target.host };
    if (port !== undefined) ref.port = port;
    return ref;
  }
  const ref: BackendRef = { name: target.name };
  if (target.namespace !== context.namespace) ref.namespace = target.namespace;
  if (port !== undefined) ref.port = port;
  else if (target.ports.length === 1) ref.port = target.ports[0];
  else
    notes.push(
      action(
        field,
        `the destination names no port and ${host} has ${target.ports.length} ports: set the backendRef port`,
      ),
    );
  if (weighted && ref.weight === undefined) ref.weight = 1;
  return ref;
}

function convertRedirect(redirect: Redirect, field: string, notes: Note[]): RequestRedirect {
  const out: RequestRedirect = {};
  if (redirect.scheme === 'http' || redirect.scheme === 'https') out.scheme = redirect.scheme;
  else if (redirect.scheme !== undefined)
    notes.push(dropped(`${field}.scheme`, `Gateway API redirects to http or https, not ${redirect.scheme}`));
  if (redirect.authority !== undefined) out.hostname = redirect.authority;
  if (redirect.uri !== undefined) out.path = { type: 'ReplaceFullPath', replaceFullPath: redirect.uri };
  if (redirect.port !== undefined) out.port = redirect.port;
  const code = redirect.redirectCode ?? 301;
  if (code === 301 || code === 302) out.statusCode = code;
  else
    notes.push(
      dropped(`${field}.redirectCode`, `Gateway API redirects with 301 or 302, not ${code}; 301 is used`),
    );
  if (redirect.derivePort !== undefined)
    notes.push(dropped(`${field}.derivePort`, 'Gateway API has no derived redirect port'));
  return out;
}

/** Istio's `headers.request|response` {set, add, remove} → an HTTPHeaderFilter. */
function headerModifier(ops: HeaderOperations | undefined): HeaderModifier | undefined {
  if (!ops) return undefined;
  const out: HeaderModifier = {};
  const pairs = (v: Readonly<Record<string, string>> | undefined) =>
    Object.entries(v ?? {}).map(([name, value]) => ({ name, value }));
  const set = pairs(ops.set);
  const add = pairs(ops.add);
  if (set.length > 0) out.set = set;
  if (add.length > 0) out.add = add;
  if (ops.remove && ops.remove.length > 0) out.remove = [...ops.remove];
  return Object.keys(out).length > 0 ? out : undefined;
}

const durationUnits = new Map([
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
  ['ms', 1],
]);

/** An Istio (protobuf) duration as Gateway API writes it (`300s`, `1500ms`); undefined when it can't be. */
export function gatewayDuration(text: string): string | undefined {
  const m = /^(\d+(?:\.\d+)?)(h|m|s|ms)$/.exec(text.trim());
  if (!m) return undefined;
  const value = Number(m[1]);
  const unitMs = durationUnits.get(m[2] ?? '') ?? 1;
  const ms = Math.round(value * unitMs);
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

const gatewayMethods: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/** A method an HTTPRouteMatch can name. */
function isGatewayMethod(method: string): method is NonNullable<RouteMatch['method']> {
  return gatewayMethods.has(method);
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * VirtualService HTTP routes → Gateway API HTTPRoute rules (what ingress2gateway's Istio provider does,
 * plus mesh routes and per-destination headers): path, header, query and method matches, prefix and
 * full-path rewrites, authority rewrites, header operations, redirects, mirrors, timeouts and weighted
 * destinations. What Gateway API can't say is left out and noted; a match entry that can't be said is
 * left out whole, so a converted route never matches more requests than the original did.
 */
import type { JsonRecord } from '../model/object.ts';
import { isPlainObject } from '../model/object.ts';
import { action, changed, dropped, type Note } from './migration-report.ts';

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
const unsupportedMatchFields: Record<string, string> = {
  authority: 'Gateway API matches the host only through the route hostnames',
  scheme: 'Gateway API has no scheme match',
  port: 'Gateway API matches the port through the parent listener, not per match',
  sourceLabels: 'Gateway API has no match on the client workload',
  sourceNamespace: 'Gateway API has no match on the client namespace',
  withoutHeaders: 'Gateway API has no negated header match',
  statPrefix: 'Gateway API has no per-match statistics prefix',
};

/** Route fields with no Gateway API equivalent: left out, the rest of the route kept. */
const unsupportedRouteFields: Record<string, string> = {
  retries: 'Gateway API HTTPRoute has no retry policy (Istio applies its default of 2 attempts)',
  fault: 'Gateway API has no fault injection',
  corsPolicy: 'Gateway API HTTPRoute has no CORS policy',
  mirrorPercentage: 'Gateway API mirrors every request; the percentage is lost',
  mirrorPercent: 'Gateway API mirrors every request; the percentage is lost',
  mirrors: 'only a single mirror without a percentage is converted',
};

/** The HTTPRoute rules of a VirtualService's `http` for one parent (matches filtered by their `gateways`). */
export function convertHttpRoutes(
  http: readonly JsonRecord[],
  parent: string,
  resolveGateway: (name: string) => string,
  context: RouteContext,
  notes: Note[],
): JsonRecord[] {
  const rules: JsonRecord[] = [];
  http.forEach((route, index) => {
    const field = `spec.http[${index}]`;
    const matches = Array.isArray(route['match']) ? (route['match'] as JsonRecord[]) : [];
    const forParent = matches.filter((m) => {
      const gateways = Array.isArray(m['gateways']) ? (m['gateways'] as string[]) : undefined;
      return gateways === undefined || gateways.map(resolveGateway).includes(parent);
    });
    if (matches.length > 0 && forParent.length === 0) return;
    if (route['delegate'] !== undefined) {
      notes.push(dropped(`${field}.delegate`, 'Gateway API has no delegation; the route is left out'));
      return;
    }
    if (route['directResponse'] !== undefined) {
      notes.push(
        dropped(`${field}.directResponse`, 'Gateway API has no direct response; the route is left out'),
      );
      return;
    }
    const convertedMatches: JsonRecord[] = [];
    forParent.forEach((m) => {
      const i = matches.indexOf(m);
      const converted = convertMatch(m, `${field}.match[${i}]`, notes);
      if (converted) convertedMatches.push(converted);
    });
    if (forParent.length > 0 && convertedMatches.length === 0) {
      notes.push(dropped(field, 'none of its matches can be expressed; the route is left out'));
      return;
    }
    for (const [key, reason] of Object.entries(unsupportedRouteFields)) {
      const value = route[key];
      if (value === undefined || (isPlainObject(value) && Object.keys(value).length === 0)) continue;
      notes.push(dropped(`${field}.${key}`, reason));
    }
    const shared = routeFilters(route, field, context, notes);
    const base: JsonRecord = {};
    if (shared.timeouts) base['timeouts'] = shared.timeouts;
    if (shared.backendRefs.length > 0) base['backendRefs'] = shared.backendRefs;
    const rewrite = isPlainObject(route['rewrite']) ? (route['rewrite'] as JsonRecord) : {};
    const uriRewrite = typeof rewrite['uri'] === 'string' ? rewrite['uri'] : undefined;
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
    const each =
      convertedMatches.length > 0 ? convertedMatches : [{ path: { type: 'PathPrefix', value: '/' } }];
    for (const m of each) {
      const path = m['path'] as { type: string; value: string } | undefined;
      const urlRewrite = { ...(shared.urlRewrite ?? {}) };
      urlRewrite['path'] =
        path === undefined || path.type === 'PathPrefix'
          ? { type: 'ReplacePrefixMatch', replacePrefixMatch: uriRewrite }
          : { type: 'ReplaceFullPath', replaceFullPath: uriRewrite };
      const match = path === undefined ? { ...m, path: { type: 'PathPrefix', value: '/' } } : m;
      const filters = shared.filters.filter((f) => f['type'] !== 'URLRewrite');
      filters.push({ type: 'URLRewrite', urlRewrite });
      rules.push({ matches: [match], filters, ...base });
    }
  });
  return rules;
}

/** One HTTPMatchRequest → an HTTPRouteMatch; undefined (with a note) when a field can't be said. */
function convertMatch(match: JsonRecord, field: string, notes: Note[]): JsonRecord | undefined {
  for (const [key, reason] of Object.entries(unsupportedMatchFields)) {
    if (match[key] === undefined) continue;
    notes.push(dropped(`${field}.${key}`, `${reason}; this match entry is left out`));
    return undefined;
  }
  const out: JsonRecord = {};
  const ignoreCase = match['ignoreUriCase'] === true;
  const uri = match['uri'];
  if (isPlainObject(uri)) {
    if (ignoreCase) {
      notes.push(
        dropped(
          `${field}.ignoreUriCase`,
          'Gateway API paths match case-sensitively; this match entry is left out',
        ),
      );
      return undefined;
    }
    if (typeof uri['exact'] === 'string') out['path'] = { type: 'Exact', value: uri['exact'] };
    else if (typeof uri['regex'] === 'string')
      out['path'] = { type: 'RegularExpression', value: uri['regex'] };
    else if (typeof uri['prefix'] === 'string') {
      const prefix = uri['prefix'];
      out['path'] = { type: 'PathPrefix', value: prefix };
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
  const headers = stringMatches(match['headers'], `${field}.headers`, notes);
  if (headers === null) return undefined;
  if (headers.length > 0) out['headers'] = headers;
  const query = stringMatches(match['queryParams'], `${field}.queryParams`, notes);
  if (query === null) return undefined;
  if (query.length > 0) out['queryParams'] = query;
  const method = match['method'];
  if (isPlainObject(method)) {
    if (typeof method['exact'] !== 'string') {
      notes.push(
        dropped(`${field}.method`, 'Gateway API matches one exact method; this match entry is left out'),
      );
      return undefined;
    }
    out['method'] = method['exact'].toUpperCase();
  }
  return out;
}

/** Header or query matches → name/type/value entries; null (noted) when one can't be said. */
function stringMatches(value: unknown, field: string, notes: Note[]): JsonRecord[] | null {
  if (!isPlainObject(value)) return [];
  const out: JsonRecord[] = [];
  for (const [name, match] of Object.entries(value)) {
    if (!isPlainObject(match)) continue;
    if (typeof match['exact'] === 'string') out.push({ name, type: 'Exact', value: match['exact'] });
    else if (typeof match['regex'] === 'string')
      out.push({ name, type: 'RegularExpression', value: match['regex'] });
    else if (typeof match['prefix'] === 'string')
      out.push({ name, type: 'RegularExpression', value: `${escapeRegex(match['prefix'])}.*` });
    else {
      notes.push(
        dropped(`${field}.${name}`, 'no Gateway API equivalent for this match; the match entry is left out'),
      );
      return null;
    }
  }
  return out.sort((a, b) => (String(a['name']) < String(b['name']) ? -1 : 1));
}

interface RouteParts {
  filters: JsonRecord[];
  urlRewrite?: JsonRecord;
  timeouts?: JsonRecord;
  backendRefs: JsonRecord[];
}

/** The filters, timeouts and backends of one route (shared by every rule it becomes). */
function routeFilters(route: JsonRecord, field: string, context: RouteContext, notes: Note[]): RouteParts {
  const filters: JsonRecord[] = [];
  const headers = isPlainObject(route['headers']) ? (route['headers'] as JsonRecord) : {};
  const request = headerModifier(headers['request']);
  if (request) filters.push({ type: 'RequestHeaderModifier', requestHeaderModifier: request });
  const response = headerModifier(headers['response']);
  if (response) filters.push({ type: 'ResponseHeaderModifier', responseHeaderModifier: response });
  let urlRewrite: JsonRecord | undefined;
  const rewrite = isPlainObject(route['rewrite']) ? (route['rewrite'] as JsonRecord) : {};
  if (typeof rewrite['authority'] === 'string') urlRewrite = { hostname: rewrite['authority'] };
  if (rewrite['uriRegexRewrite'] !== undefined)
    notes.push(
      action(
        `${field}.rewrite.uriRegexRewrite`,
        'Gateway API has no regex rewrite; the route is kept without it, so the backend sees the original path: rewrite it by hand',
      ),
    );
  if (urlRewrite && typeof rewrite['uri'] !== 'string') filters.push({ type: 'URLRewrite', urlRewrite });
  const redirect = route['redirect'];
  if (isPlainObject(redirect))
    filters.push({
      type: 'RequestRedirect',
      requestRedirect: convertRedirect(redirect, `${field}.redirect`, notes),
    });
  const mirror = route['mirror'];
  if (
    isPlainObject(mirror) &&
    route['mirrorPercentage'] === undefined &&
    route['mirrorPercent'] === undefined
  ) {
    const backend = backendRef(mirror, `${field}.mirror`, context, notes, false);
    if (backend) filters.push({ type: 'RequestMirror', requestMirror: { backendRef: backend } });
  }
  const parts: RouteParts = { filters, backendRefs: [] };
  if (urlRewrite) parts.urlRewrite = urlRewrite;
  if (typeof route['timeout'] === 'string') {
    const timeout = gatewayDuration(route['timeout']);
    if (timeout) parts.timeouts = { request: timeout };
    else
      notes.push(dropped(`${field}.timeout`, `"${route['timeout']}" is not a duration Gateway API accepts`));
  }
  const destinations = Array.isArray(route['route']) ? (route['route'] as JsonRecord[]) : [];
  destinations.forEach((d, i) => {
    const where = `${field}.route[${i}]`;
    const ref = backendRef(d['destination'], `${where}.destination`, context, notes, destinations.length > 1);
    if (!ref) return;
    if (typeof d['weight'] === 'number' && destinations.length > 1) ref['weight'] = d['weight'];
    const dh = isPlainObject(d['headers']) ? (d['headers'] as JsonRecord) : {};
    const dFilters: JsonRecord[] = [];
    const dRequest = headerModifier(dh['request']);
    if (dRequest) dFilters.push({ type: 'RequestHeaderModifier', requestHeaderModifier: dRequest });
    const dResponse = headerModifier(dh['response']);
    if (dResponse) dFilters.push({ type: 'ResponseHeaderModifier', responseHeaderModifier: dResponse });
    if (dFilters.length > 0) ref['filters'] = dFilters;
    parts.backendRefs.push(ref);
  });
  return parts;
}

/** A Destination → a backendRef (Service, or Istio's Hostname kind for other hosts). */
function backendRef(
  destination: unknown,
  field: string,
  context: RouteContext,
  notes: Note[],
  weighted: boolean,
): JsonRecord | undefined {
  if (!isPlainObject(destination) || typeof destination['host'] !== 'string') return undefined;
  const host = context.expand(destination['host']);
  if (destination['subset'] !== undefined)
    notes.push(
      action(
        `${field}.subset`,
        `Gateway API has no subsets: the backend is the whole Service; give subset "${String(destination['subset'])}" a Service of its own and point the route at it`,
      ),
    );
  const port = isPlainObject(destination['port']) ? destination['port']['number'] : undefined;
  const target = context.resolve(host);
  if (target === undefined) {
    notes.push(
      dropped(field, `${host} is neither a Service nor a ServiceEntry host; the backend is left out`),
    );
    return undefined;
  }
  if (target.kind === 'hostname') {
    const ref: JsonRecord = { group: 'networking.istio.io', kind: 'Hostname', name: target.host };
    if (typeof port === 'number') ref['port'] = port;
    return ref;
  }
  const ref: JsonRecord = { name: target.name };
  if (target.namespace !== context.namespace) ref['namespace'] = target.namespace;
  if (typeof port === 'number') ref['port'] = port;
  else if (target.ports.length === 1) ref['port'] = target.ports[0];
  else
    notes.push(
      action(
        field,
        `the destination names no port and ${host} has ${target.ports.length} ports: set the backendRef port`,
      ),
    );
  if (weighted && ref['weight'] === undefined) ref['weight'] = 1;
  return ref;
}

function convertRedirect(redirect: JsonRecord, field: string, notes: Note[]): JsonRecord {
  const out: JsonRecord = {};
  if (typeof redirect['scheme'] === 'string') out['scheme'] = redirect['scheme'];
  if (typeof redirect['authority'] === 'string') out['hostname'] = redirect['authority'];
  if (typeof redirect['uri'] === 'string')
    out['path'] = { type: 'ReplaceFullPath', replaceFullPath: redirect['uri'] };
  if (typeof redirect['port'] === 'number') out['port'] = redirect['port'];
  const code = typeof redirect['redirectCode'] === 'number' ? redirect['redirectCode'] : 301;
  if (code === 301 || code === 302) out['statusCode'] = code;
  else
    notes.push(
      dropped(`${field}.redirectCode`, `Gateway API redirects with 301 or 302, not ${code}; 301 is used`),
    );
  if (redirect['derivePort'] !== undefined)
    notes.push(dropped(`${field}.derivePort`, 'Gateway API has no derived redirect port'));
  return out;
}

/** Istio's `headers.request|response` {set, add, remove} → an HTTPHeaderFilter. */
function headerModifier(ops: unknown): JsonRecord | undefined {
  if (!isPlainObject(ops)) return undefined;
  const out: JsonRecord = {};
  const pairs = (v: unknown) =>
    isPlainObject(v)
      ? Object.entries(v)
          .filter(([, value]) => typeof value === 'string')
          .map(([name, value]) => ({ name, value }))
      : [];
  const set = pairs(ops['set']);
  const add = pairs(ops['add']);
  if (set.length > 0) out['set'] = set;
  if (add.length > 0) out['add'] = add;
  if (Array.isArray(ops['remove']) && ops['remove'].length > 0) out['remove'] = [...ops['remove']];
  return Object.keys(out).length > 0 ? out : undefined;
}

/** An Istio (protobuf) duration as Gateway API writes it (`300s`, `1500ms`); undefined when it can't be. */
export function gatewayDuration(text: string): string | undefined {
  const m = /^(\d+(?:\.\d+)?)(h|m|s|ms)$/.exec(text.trim());
  if (!m) return undefined;
  const value = Number(m[1]);
  const unitMs = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 }[m[2] as 'h' | 'm' | 's' | 'ms'];
  const ms = Math.round(value * unitMs);
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

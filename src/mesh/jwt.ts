/**
 * The JWT step of a proxy (docs/semantics.md, Request authentication): what the RequestAuthentications
 * that apply to a sidecar, gateway or waypoint do with a request before its authorization. A token found
 * where a rule looks for it is checked against the rules' issuers and audiences (its signature and time
 * claims are taken as valid: kfmesh has no keys and no clock); a bad one is refused with 401. A good one
 * gives the request principal (`iss/sub`), writes the claims a rule copies to headers over whatever the
 * client sent, and is removed from its header unless the rule forwards it. No token: the request goes on
 * with no request principal.
 */
import type { KubeObject } from '../model/object.ts';
import { specOf, type RequestAuthenticationSpec } from '../model/specs.ts';

type JwtRule = NonNullable<RequestAuthenticationSpec['jwtRules']>[number];

/** What the JWT step did with a request. */
export interface JwtOutcome {
  /** Why the token was refused (the proxy answers 401), when it was. */
  rejected?: string;
  /** `iss/sub` of the verified token. */
  principal?: string;
  /** The request headers after the step (claims written, an unforwarded token removed). */
  headers: Readonly<Record<string, string>>;
  notes: string[];
}

/** Where a rule looks for a token: a header (with the prefix its value starts with) or a query parameter. */
type Location = { header: string; prefix: string } | { param: string };

/** The places Envoy looks when a rule names none: `Authorization: Bearer …`, then `?access_token=`. */
const defaultLocations: readonly Location[] = [
  { header: 'authorization', prefix: 'Bearer ' },
  { param: 'access_token' },
];

function locationsOf(rule: JwtRule): Location[] {
  const headers = (rule.fromHeaders ?? []).map((h): Location => ({
    header: (h.name ?? '').toLowerCase(),
    prefix: h.prefix ?? '',
  }));
  const params = (rule.fromParams ?? []).map((p): Location => ({ param: p }));
  const named = [...headers, ...params];
  return named.length > 0 || (rule.fromCookies ?? []).length > 0 ? named : [...defaultLocations];
}

function sameLocation(a: Location, b: Location): boolean {
  return 'header' in a ? 'header' in b && a.header === b.header : 'param' in b && a.param === b.param;
}

/** The token at a location of the request, if any. */
function tokenAt(
  location: Location,
  headers: Readonly<Record<string, string>>,
  query: Readonly<Record<string, string>>,
): string | undefined {
  if ('param' in location) return query[location.param];
  const value = headers[location.header];
  if (value === undefined) return undefined;
  // The default Bearer scheme is matched without regard to case, as HTTP auth schemes are.
  const prefixed =
    location.header === 'authorization' && location.prefix === 'Bearer '
      ? value.toLowerCase().startsWith('bearer ')
      : value.startsWith(location.prefix);
  return prefixed ? value.slice(location.prefix.length).trim() : undefined;
}

/** The claims of a compact JWS (header.payload.signature), undefined when it is not one. */
export function jwtClaims(token: string): Record<string, unknown> | undefined {
  const parts = /^([^.\s]+)\.([^.\s]+)\.[^.\s]*$/.exec(token);
  if (!parts) return undefined;
  try {
    const base64 = (parts[2] ?? '').replace(/-/g, '+').replace(/_/g, '/');
    const payload: unknown = JSON.parse(atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, '=')));
    return typeof payload === 'object' && payload !== null && !Array.isArray(payload)
      ? (payload as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `iss/sub` of a bearer token in the Authorization header, as a proxy whose rules take its issuer would
 * verify it (for what-if checks that ask what a waypoint would decide; a trace runs the whole JWT step).
 */
export function requestPrincipalOf(headers: Readonly<Record<string, string>>): string | undefined {
  const token = tokenAt(defaultLocations[0] ?? { param: '' }, headers, {});
  const claims = token === undefined ? undefined : jwtClaims(token);
  const [iss, sub] = [claims?.['iss'], claims?.['sub']];
  return typeof iss === 'string' && typeof sub === 'string' && iss && sub ? `${iss}/${sub}` : undefined;
}

/** A claim by its dotted path (`a.b.c`), as `outputClaimToHeaders` names nested claims. */
function claimAt(claims: Record<string, unknown>, path: string): unknown {
  let here: unknown = claims;
  for (const part of path.split('.')) {
    if (typeof here !== 'object' || here === null || Array.isArray(here)) return undefined;
    here = (here as Record<string, unknown>)[part];
  }
  return here;
}

/** The value a claim is written to a header as: strings, numbers and booleans; lists and objects are not written. */
function headerValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function audiencesOf(claims: Record<string, unknown>): string[] {
  const aud = claims['aud'];
  if (typeof aud === 'string') return [aud];
  return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
}

/** The JWT step of the RequestAuthentications that apply to a proxy, on one request. */
export function authenticateJwt(
  policies: readonly KubeObject[],
  request: { headers: Readonly<Record<string, string>>; query: Readonly<Record<string, string>> },
): JwtOutcome {
  const rules = policies.flatMap((p) => specOf(p, 'security.istio.io/RequestAuthentication').jwtRules ?? []);
  if (rules.length === 0) return { headers: request.headers, notes: [] };
  const located = rules.map((rule) => ({ rule, locations: locationsOf(rule) }));
  const places: Location[] = [];
  for (const { locations } of located)
    for (const l of locations) if (!places.some((p) => sameLocation(p, l))) places.push(l);
  for (const place of places) {
    const token = tokenAt(place, request.headers, request.query);
    if (token === undefined) continue;
    const where = 'header' in place ? `header ${place.header}` : `query parameter ${place.param}`;
    const claims = jwtClaims(token);
    if (!claims) return refused(request, `the token in ${where} is not a JWT`);
    const issuer = typeof claims['iss'] === 'string' ? claims['iss'] : '';
    const matching = located.filter(
      ({ rule, locations }) => rule.issuer === issuer && locations.some((l) => sameLocation(l, place)),
    );
    if (matching.length === 0)
      return refused(request, `Jwt issuer is not configured: no rule takes issuer "${issuer}" from ${where}`);
    const audiences = audiencesOf(claims);
    const rule = matching.find(
      ({ rule: r }) =>
        (r.audiences ?? []).length === 0 || (r.audiences ?? []).some((a) => audiences.includes(a)),
    )?.rule;
    if (!rule)
      return refused(
        request,
        `Audiences in Jwt are not allowed (token audiences: ${audiences.join(', ') || 'none'})`,
      );
    return verified(request, rule, place, claims, issuer);
  }
  return {
    headers: request.headers,
    notes: ['JWT: no token; the request goes on without a request principal'],
  };
}

function refused(request: { headers: Readonly<Record<string, string>> }, why: string): JwtOutcome {
  return { rejected: why, headers: request.headers, notes: [`JWT: ${why}`] };
}

function verified(
  request: { headers: Readonly<Record<string, string>> },
  rule: JwtRule,
  place: Location,
  claims: Record<string, unknown>,
  issuer: string,
): JwtOutcome {
  const headers = { ...request.headers };
  const notes = [`JWT: issuer ${issuer} verified (its signature taken as valid)`];
  // Envoy removes a verified token from its header unless the rule forwards it; one in a query parameter stays.
  if (!rule.forwardOriginalToken && 'header' in place) {
    Reflect.deleteProperty(headers, place.header);
    notes.push(`JWT: the token is not forwarded (header ${place.header} removed)`);
  }
  for (const { header, claim } of rule.outputClaimToHeaders ?? []) {
    if (!header || !claim) continue;
    const value = headerValue(claimAt(claims, claim));
    if (value === undefined) continue;
    headers[header.toLowerCase()] = value;
    notes.push(`JWT: header ${header.toLowerCase()} set from claim ${claim}`);
  }
  const subject = typeof claims['sub'] === 'string' ? claims['sub'] : '';
  return { principal: `${issuer}/${subject}`, headers, notes };
}

/**
 * VirtualServices as Istio's control plane sees them: gateway names resolved to `ns/name` (empty = mesh),
 * short host names made FQDN, export scope applied, and the order sidecars and gateways take them in
 * (docs/semantics.md, Sidecar outbound).
 */
import { GroupKind } from '../model/vocabulary.ts';
import { compareStrings, orderKey, type KubeObject } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { isExportedTo } from './services.ts';
import { specOf, type VirtualServiceSpec } from '../model/specs.ts';

/** The reserved gateway name of all sidecars. */
export const Mesh = 'mesh';

/** One `http[]` rule, as written. */
export interface HttpRule {
  name?: string;
  match?: HttpMatch[];
  route?: RouteDestination[];
  redirect?: { uri?: string; authority?: string; redirectCode?: number; scheme?: string };
  directResponse?: { status: number; body?: unknown };
  /** `fullPath` (Gateway API ReplaceFullPath) replaces the whole path even after a prefix match. */
  rewrite?: {
    uri?: string;
    authority?: string;
    uriRegexRewrite?: { match: string; rewrite: string };
    fullPath?: boolean;
  };
  headers?: HeaderOperations;
  delegate?: unknown;
  fault?: { abort?: { httpStatus?: number; percentage?: { value?: number } } };
}

/** Header operations of a rule or destination. */
export interface HeaderOperations {
  request?: { set?: Record<string, string>; add?: Record<string, string>; remove?: string[] };
  response?: unknown;
}

/** A string match of a VirtualService. */
export interface StringMatch {
  exact?: string;
  prefix?: string;
  regex?: string;
  /** Gateway API `PathPrefix`: whole path segments (`/a` matches `/a` and `/a/b`, not `/ab`). */
  pathSeparatedPrefix?: string;
}

/** One `match[]` entry. */
export interface HttpMatch {
  name?: string;
  uri?: StringMatch;
  scheme?: StringMatch;
  method?: StringMatch;
  authority?: StringMatch;
  headers?: Record<string, StringMatch>;
  withoutHeaders?: Record<string, StringMatch>;
  queryParams?: Record<string, StringMatch>;
  port?: number;
  sourceLabels?: Record<string, string>;
  sourceNamespace?: string;
  gateways?: string[];
  ignoreUriCase?: boolean;
}

/** A weighted destination. */
export interface RouteDestination {
  destination: { host: string; subset?: string; port?: { number?: number } };
  weight?: number;
  headers?: HeaderOperations;
}

/** A VirtualService, resolved. */
export interface ResolvedVirtualService {
  namespace: string;
  name: string;
  /** Hosts with short names resolved to `<name>.<vsNs>.svc.<clusterDomain>`. */
  hosts: string[];
  /** Gateway names resolved (`ns/name` or `mesh`); `[mesh]` when the spec lists none. */
  gateways: string[];
  exportTo: string[];
  http: HttpRule[];
  /** Where the VS came from: an Istio VirtualService or a Gateway API route converted to one. */
  source: KubeObject;
  /** Order key: creationTimestamp, then name, then namespace. */
  order: string;
  /** Converted from a Gateway API route: Gateway API semantics apply (500 for a missing backend). */
  gatewaySemantics?: boolean;
  /** Derived from Kubernetes Ingresses (src/mesh/kube-ingress.ts); `source` is the first Ingress. */
  ingressSemantics?: boolean;
}

/** Whether a person wrote this VirtualService (not derived from a Gateway API route or an Ingress). */
export function writtenAsVirtualService(vs: ResolvedVirtualService): boolean {
  return vs.gatewaySemantics !== true && vs.ingressSemantics !== true;
}

/** Istio's `resolveGatewayName`: `name` and `./name` → `<vsNs>/name`; `name.ns.svc.*` → `ns/name`; `mesh` kept. */
export function resolveGatewayName(name: string, vsNamespace: string): string {
  if (name === Mesh) return Mesh;
  if (name.startsWith('./')) return `${vsNamespace}/${name.slice(2)}`;
  if (name.includes('/')) return name;
  const [first, second] = name.split('.');
  return second === undefined ? `${vsNamespace}/${name}` : `${second}/${first}`;
}

/** Istio's `ResolveShortnameToFQDN`: a name without a dot is `<name>.<ns>.svc.<clusterDomain>`; others are kept. */
export function resolveShortName(host: string, namespace: string, clusterDomain: string): string {
  // An empty host (a backend Istio dropped) stays empty: it names no service.
  if (host === '' || host === '*' || host.includes('.') || /^[0-9.:]+$/.test(host)) return host;
  return `${host}.${namespace}.svc.${clusterDomain}`;
}

type WrittenRule = NonNullable<VirtualServiceSpec['http']>[number];

/**
 * A rule as the simulator reads it: what the CRD requires but the input may lack (a destination's host, a
 * direct response's status, a regex rewrite's parts) read as empty, which matches and routes nowhere.
 */
function compiledRule(rule: WrittenRule): HttpRule {
  const { route, directResponse, rewrite, ...rest } = rule;
  const out: HttpRule = rest;
  if (route)
    out.route = route.map((d) => ({
      ...d,
      destination: { ...d.destination, host: d.destination?.host ?? '' },
    }));
  if (directResponse) out.directResponse = { ...directResponse, status: directResponse.status ?? 0 };
  if (rewrite) {
    const { uriRegexRewrite, ...others } = rewrite;
    out.rewrite = uriRegexRewrite
      ? {
          ...others,
          uriRegexRewrite: { match: uriRegexRewrite.match ?? '', rewrite: uriRegexRewrite.rewrite ?? '' },
        }
      : others;
  }
  return out;
}

/** Resolves every Istio VirtualService of the snapshot, in Istio's order. */
export function virtualServicesFrom(
  snapshot: Snapshot,
  clusterDomain: string,
  defaultExportTo: readonly string[],
): ResolvedVirtualService[] {
  const out: ResolvedVirtualService[] = [];
  for (const object of snapshot.list(GroupKind.VirtualService)) {
    const namespace = object.metadata.namespace ?? 'default';
    const spec = specOf(object, 'networking.istio.io/VirtualService');
    const gateways = (spec.gateways ?? []).map((g) => resolveGatewayName(g, namespace));
    const http = (spec.http ?? []).map((rule) => {
      const compiled = compiledRule(rule);
      return {
        ...compiled,
        match: compiled.match?.map((m) =>
          m.gateways ? { ...m, gateways: m.gateways.map((g) => resolveGatewayName(g, namespace)) } : m,
        ),
      };
    });
    out.push({
      namespace,
      name: object.metadata.name ?? '',
      hosts: (spec.hosts ?? []).map((h) => resolveShortName(h, namespace, clusterDomain)),
      gateways: gateways.length > 0 ? gateways : [Mesh],
      exportTo: spec.exportTo && spec.exportTo.length > 0 ? spec.exportTo : [...defaultExportTo],
      http,
      source: object,
      order: orderKey(object),
    });
  }
  return sortVirtualServices(out);
}

/** Sorts by creation time, then name, then namespace (Istio's `configCompareByCreationTime`). */
export function sortVirtualServices<T extends { order: string }>(list: T[]): T[] {
  return list.sort((a, b) => compareStrings(a.order, b.order));
}

/**
 * The VirtualServices a proxy in `namespace` sees for `gateway` (`mesh` for sidecars), in scope order:
 * private (same namespace, exportTo `.`), then exported to this namespace, then public.
 */
export function virtualServicesFor(
  all: readonly ResolvedVirtualService[],
  gateway: string,
  namespace: string,
): ResolvedVirtualService[] {
  const visible = all.filter(
    (vs) => vs.gateways.includes(gateway) && isExportedTo(vs.exportTo, vs.namespace, namespace),
  );
  // Gateway API routes of the proxy's own namespace come first (PILOT_UNIFIED_SIDECAR_SCOPE).
  const rank = (vs: ResolvedVirtualService): number =>
    vs.gatewaySemantics && vs.namespace === namespace
      ? -1
      : vs.exportTo.includes('.') && vs.namespace === namespace
        ? 0
        : vs.exportTo.includes(namespace)
          ? 1
          : 2;
  return visible
    .map((vs, i) => ({ vs, i }))
    .sort((a, b) => rank(a.vs) - rank(b.vs) || a.i - b.i)
    .map((x) => x.vs);
}

/**
 * The Gateway API as Istio runs it (docs/semantics.md, Gateway API routes): Gateways of class `istio`
 * become gateway proxies named `<gateway>-istio` with one server per listener; HTTPRoutes become route sets
 * bound to the listeners they attach to (parent `Gateway`) or to `mesh` for a Service (parent `Service`),
 * with every rule split into one route per match and sorted by Gateway API precedence.
 */
import { compareStrings, orderKey, type KubeObject } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import { hostMatches } from './security.ts';
import {
  Mesh,
  type HttpMatch,
  type HttpRule,
  type ResolvedVirtualService,
  type StringMatch,
} from './virtual-services.ts';
import { ProxyKind, type Workload } from './workloads.ts';
import { Label, GatewayClass, GroupKind, Group } from '../model/vocabulary.ts';
import { gatewayClassOf, specOf, type GatewayListener, type HTTPRouteSpec } from '../model/specs.ts';

/** A listener as routes attach to it: its name, port and protocol given (the CRD requires them). */
type Listener = GatewayListener & { name: string; port: number; protocol: string };
type RouteRule = NonNullable<HTTPRouteSpec['rules']>[number];
type RouteMatch = NonNullable<RouteRule['matches']>[number];
type Filter = NonNullable<RouteRule['filters']>[number];
type BackendRef = NonNullable<RouteRule['backendRefs']>[number];

/** The listener-level name Istio gives each listener's internal gateway: `ns/gw~listener`. */
export function listenerGatewayName(namespace: string, gateway: string, listener: string): string {
  return `${namespace}/${gateway}~${listener}`;
}

/** Gateway API Gateways of class `istio`. */
export function istioGateways(snapshot: Snapshot): KubeObject[] {
  return snapshot.list(GroupKind.Gateway).filter((g) => gatewayClassOf(g) === GatewayClass.Istio);
}

/** The listeners of a Gateway. */
export function listenersOf(gateway: KubeObject): Listener[] {
  return (specOf(gateway, 'gateway.networking.k8s.io/Gateway').listeners ?? []).filter(
    (l): l is Listener =>
      typeof l.port === 'number' && typeof l.name === 'string' && typeof l.protocol === 'string',
  );
}

/**
 * Gateway pods for Gateways of class `istio` that the input has none for (manifests before they run): one
 * pod `<gateway>-istio`, with the labels and service account Istio's deployment controller gives it.
 */
export function syntheticGatewayWorkloads(
  snapshot: Snapshot,
  workloads: readonly Workload[],
  firstIp: number,
): Workload[] {
  const out: Workload[] = [];
  const managed = snapshot.list(GroupKind.Gateway).filter((g) => {
    const gatewayClass = gatewayClassOf(g);
    return gatewayClass === GatewayClass.Istio || gatewayClass === GatewayClass.Waypoint;
  });
  // Gateways whose pods are in the input already (`namespace/name`), found in one pass over the workloads.
  const running = new Set<string>();
  for (const w of workloads) {
    const gatewayName = w.labels[Label.GatewayName];
    if (gatewayName !== undefined) running.add(`${w.namespace}/${gatewayName}`);
  }
  for (const gateway of managed) {
    const namespace = gateway.metadata.namespace ?? 'default';
    const name = gateway.metadata.name ?? '';
    if (running.has(`${namespace}/${name}`)) continue;
    // Waypoints' Deployment and service account are named exactly as the Gateway; other classes add -istio (docs/semantics.md, Gateways).
    const waypoint = gatewayClassOf(gateway) === GatewayClass.Waypoint;
    const deployment = waypoint ? name : `${name}-istio`;
    const labels: Record<string, string> = {
      [Label.GatewayName]: name,
      [Label.IstioGatewayName]: name,
      [Label.CanonicalName]: deployment,
    };
    if (waypoint) labels[Label.GatewayClassName] = GatewayClass.Waypoint;
    const index = firstIp + out.length;
    out.push({
      namespace,
      name: deployment,
      podName: `${deployment}-synthetic`,
      labels,
      annotations: {},
      serviceAccount: deployment,
      ip: `10.253.${Math.floor(index / 250)}.${(index % 250) + 2}`,
      ipAssigned: true,
      proxy: waypoint ? ProxyKind.Waypoint : ProxyKind.Gateway,
      tlsModeIstio: false,
      acceptsHbone: false,
      canonicalService: deployment,
      canonicalRevision: 'latest',
      containerPorts: new Map(),
      object: gateway,
    });
  }
  return out;
}

/** Does a listener let routes from `routeNamespace` attach (allowedRoutes.namespaces: Same, All, Selector)? */
function listenerAllows(
  snapshot: Snapshot,
  listener: Listener,
  gatewayNamespace: string,
  routeNamespace: string,
): boolean {
  const from = listener.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return routeNamespace === gatewayNamespace;
  const selector = listener.allowedRoutes?.namespaces?.selector?.matchLabels ?? {};
  const labels = snapshot.get(GroupKind.Namespace, '', routeNamespace)?.metadata.labels ?? {};
  return labelsMatch(labels, selector);
}

/** HTTPRoutes as route sets: one per parent, hosts and binding resolved, rules split and sorted. */
export function httpRouteVirtualServices(
  snapshot: Snapshot,
  clusterDomain: string,
  noBackendRefsStatus: number,
): ResolvedVirtualService[] {
  const out: ResolvedVirtualService[] = [];
  for (const route of snapshot.list(GroupKind.HTTPRoute)) {
    const namespace = route.metadata.namespace ?? 'default';
    const spec = specOf(route, 'gateway.networking.k8s.io/HTTPRoute');
    const hostnames = spec.hostnames && spec.hostnames.length > 0 ? spec.hostnames : ['*'];
    const http = sortRoutes(
      toRules(
        spec.rules ?? [],
        namespace,
        (b) => backendHost(snapshot, b, namespace, clusterDomain),
        noBackendRefsStatus,
      ),
    );
    for (const parent of spec.parentRefs ?? []) {
      const kind = parent.kind ?? 'Gateway';
      const parentNamespace = parent.namespace ?? namespace;
      if (kind === 'Service' && (parent.group ?? '') === '') {
        const host = `${parent.name}.${parentNamespace}.svc.${clusterDomain}`;
        const portScoped =
          parent.port === undefined
            ? http
            : http.map((r) =>
                copyWith(
                  r,
                  'match',
                  (r.match ?? [{}]).map((m) => copyWith(m, 'port', parent.port)),
                ),
              );
        // Mesh routes reach sidecars of the route's namespace and of the Service's namespace.
        out.push(
          resolved(route, namespace, [host], [Mesh], [...new Set([namespace, parentNamespace])], portScoped),
        );
        continue;
      }
      if (kind !== 'Gateway') continue;
      const gateway = snapshot.get(GroupKind.Gateway, parentNamespace, parent.name ?? '');
      if (!gateway || gatewayClassOf(gateway) !== GatewayClass.Istio) continue;
      const attached = listenersOf(gateway).filter(
        (l) =>
          (parent.sectionName === undefined || parent.sectionName === l.name) &&
          (parent.port === undefined || parent.port === l.port) &&
          (l.protocol === 'HTTP' || l.protocol === 'HTTPS') &&
          listenerAllows(snapshot, l, parentNamespace, namespace),
      );
      if (attached.length === 0) continue;
      const hosts = [
        ...new Set(attached.flatMap((l) => hostnames.flatMap((h) => intersect(l.hostname ?? '*', h)))),
      ];
      const gateways = attached.map((l) => listenerGatewayName(parentNamespace, parent.name ?? '', l.name));
      if (hosts.length > 0) out.push(resolved(route, namespace, hosts, gateways, ['*'], http));
    }
  }
  return out.sort((a, b) => compareStrings(a.order, b.order));
}

function resolved(
  route: KubeObject,
  namespace: string,
  hosts: string[],
  gateways: string[],
  exportTo: string[],
  http: HttpRule[],
): ResolvedVirtualService {
  return {
    namespace,
    name: route.metadata.name ?? '',
    hosts,
    gateways,
    exportTo,
    http,
    source: route,
    order: orderKey(route),
    gatewaySemantics: true,
  };
}

function intersect(a: string, b: string): string[] {
  if (hostMatches(a, b)) return [b];
  if (hostMatches(b, a)) return [a];
  return [];
}

/**
 * A copy of `object` with one field set. The copy is built key by key from an empty literal, so copies with the
 * same keys share one hidden class; an object spread here made a class per copy once its site had seen many,
 * and every later read of the routes went megamorphic (a trace spent a third of its time matching).
 */
function copyWith<T extends object, K extends keyof T>(object: T, key: K, value: T[K]): T {
  const out = {} as T;
  for (const k of Object.keys(object) as (keyof T)[]) out[k] = k === key ? value : object[k];
  out[key] = value;
  return out;
}

/**
 * The host a backendRef of an HTTPRoute in `routeNamespace` sends to, or '' when Istio drops it as invalid
 * (docs/semantics.md, Gateway API routes): a Service in another namespace without a ReferenceGrant there
 * that lets HTTPRoutes of the route's namespace reach it, or a kind Istio does not route to. An invalid
 * backend keeps its weight; its share is answered 500.
 */
function backendHost(
  snapshot: Snapshot,
  backend: BackendRef,
  routeNamespace: string,
  clusterDomain: string,
): string {
  const group = backend.group ?? '';
  const kind = backend.kind ?? 'Service';
  const name = backend.name ?? '';
  if (group === '' && kind === 'Service') {
    const namespace = backend.namespace ?? routeNamespace;
    if (namespace !== routeNamespace && !granted(snapshot, routeNamespace, namespace, name)) return '';
    return `${name}.${namespace}.svc.${clusterDomain}`;
  }
  if (group === Group.IstioNetworking && kind === 'Hostname') return name;
  return '';
}

/** Does a ReferenceGrant in `namespace` let HTTPRoutes of `from` reach its Service `name`? */
function granted(snapshot: Snapshot, from: string, namespace: string, name: string): boolean {
  return snapshot.list(GroupKind.ReferenceGrant, namespace).some((grant) => {
    const spec = specOf(grant, 'gateway.networking.k8s.io/ReferenceGrant');
    const fromOk = (spec.from ?? []).some(
      (f) => f.group === Group.GatewayApi && f.kind === 'HTTPRoute' && f.namespace === from,
    );
    const toOk = (spec.to ?? []).some(
      (t) => (t.group ?? '') === '' && t.kind === 'Service' && (t.name === undefined || t.name === name),
    );
    return fromOk && toOk;
  });
}

/** Each rule × match becomes one route with at most one match (Istio's conversion). */
function toRules(
  rules: readonly RouteRule[],
  namespace: string,
  hostOf: (backend: BackendRef) => string,
  noBackendRefsStatus: number,
): HttpRule[] {
  const out: HttpRule[] = [];
  rules.forEach((rule, ruleIndex) => {
    const matches: RouteMatch[] =
      rule.matches && rule.matches.length > 0 ? rule.matches : [{ path: { type: 'PathPrefix', value: '/' } }];
    matches.forEach((m, matchIndex) => {
      const converted: HttpRule = { name: `${namespace}/${ruleIndex}.${matchIndex}`, match: [toMatch(m)] };
      applyFilters(converted, rule.filters ?? []);
      const backends = rule.backendRefs ?? [];
      if (!converted.redirect) {
        converted.route = backends.map((b) => ({
          destination: {
            host: hostOf(b),
            ...(b.port !== undefined ? { port: { number: b.port } } : {}),
          },
          weight: b.weight ?? 1,
        }));
        // No backendRef at all: the version's status (docs/semantics.md, V13); backends that all weigh 0: 500.
        if (backends.length === 0) converted.directResponse = { status: noBackendRefsStatus };
        else if (backends.every((b) => b.weight === 0)) converted.directResponse = { status: 500 };
      }
      out.push(converted);
    });
  });
  return out;
}

function toMatch(m: RouteMatch): HttpMatch {
  const match: HttpMatch = {};
  const path = m.path ?? { type: 'PathPrefix', value: '/' };
  const value = path.value ?? '/';
  if (path.type === 'Exact') match.uri = { exact: value };
  else if (path.type === 'RegularExpression') match.uri = { regex: value };
  else match.uri = value === '/' ? { prefix: '/' } : { pathSeparatedPrefix: value.replace(/\/+$/, '') };
  if (m.method) match.method = { exact: m.method };
  const toStringMatch = (type: string | undefined, v: string): StringMatch =>
    type === 'RegularExpression' ? { regex: v } : { exact: v };
  if (m.headers?.length)
    match.headers = Object.fromEntries(
      m.headers.map((h) => [(h.name ?? '').toLowerCase(), toStringMatch(h.type, h.value ?? '')]),
    );
  if (m.queryParams?.length)
    match.queryParams = Object.fromEntries(
      m.queryParams.map((q) => [q.name ?? '', toStringMatch(q.type, q.value ?? '')]),
    );
  return match;
}

function applyFilters(rule: HttpRule, filters: readonly Filter[]): void {
  for (const f of filters) {
    if (f.type === 'RequestHeaderModifier' && f.requestHeaderModifier) {
      const m = f.requestHeaderModifier;
      rule.headers = {
        request: {
          ...(m.set ? { set: Object.fromEntries(m.set.map((h) => [h.name, h.value])) } : {}),
          ...(m.add ? { add: Object.fromEntries(m.add.map((h) => [h.name, h.value])) } : {}),
          ...(m.remove ? { remove: m.remove } : {}),
        },
      };
    } else if (f.type === 'URLRewrite' && f.urlRewrite) {
      const p = f.urlRewrite.path;
      rule.rewrite = {
        ...(f.urlRewrite.hostname ? { authority: f.urlRewrite.hostname } : {}),
        ...(p?.type === 'ReplaceFullPath' ? { uri: p.replaceFullPath ?? '/', fullPath: true } : {}),
        ...(p?.type === 'ReplacePrefixMatch' ? { uri: p.replacePrefixMatch ?? '/' } : {}),
      };
    } else if (f.type === 'RequestRedirect' && f.requestRedirect) {
      rule.redirect = {
        redirectCode: f.requestRedirect.statusCode ?? 302,
        ...(f.requestRedirect.hostname ? { authority: f.requestRedirect.hostname } : {}),
      };
    }
  }
}

/** Gateway API precedence: Exact > prefix > regex, longer path, method, more headers, more query params; stable otherwise. */
function sortRoutes(rules: HttpRule[]): HttpRule[] {
  return sortByPrecedence(rules, (r) => r);
}

/** Sorts items holding converted rules by Gateway API precedence (stable). */
export function sortByPrecedence<T>(items: readonly T[], ruleOf: (item: T) => HttpRule): T[] {
  const rank = (r: HttpRule): number[] => {
    const m = r.match?.[0] ?? {};
    const uri = m.uri ?? {};
    const type = uri.exact !== undefined ? 0 : uri.regex !== undefined ? 2 : 1;
    const length = (uri.exact ?? uri.pathSeparatedPrefix ?? uri.prefix ?? uri.regex ?? '').length;
    return [
      type,
      -length,
      m.method ? 0 : 1,
      -Object.keys(m.headers ?? {}).length,
      -Object.keys(m.queryParams ?? {}).length,
    ];
  };
  return items
    .map((item, i) => ({ item, i, key: rank(ruleOf(item)) }))
    .sort((a, b) => a.key.reduce((d, v, k) => d || v - (b.key[k] ?? 0), 0) || a.i - b.i)
    .map((x) => x.item);
}

/**
 * Migration phase: routes. Every VirtualService becomes HTTPRoutes, one per set of parents with the same
 * rules: the converted Gateway API gateways, or (for mesh-bound ones) the Services its hosts name, which
 * then need a waypoint to apply them.
 */
import { GroupKind, Group } from '../model/vocabulary.ts';
import { specOf, type HTTPRouteSpec, type VirtualServiceSpec } from '../model/specs.ts';
import { Mesh as MeshGateway, resolveGatewayName, resolveShortName } from '../mesh/virtual-services.ts';
import type { KubeObject } from '../model/object.ts';
import { isHeld, step, type Facts, type RouteGraph, type Step, type WaypointNeed } from './context.ts';
import type { OutputView, Phase } from './output.ts';
import { type BackendTarget, type RouteContext, type RouteRule, convertHttpRoutes } from './http-routes.ts';

/** A parent of an HTTPRoute (a Gateway, or for a mesh route a Service). */
type ParentRef = NonNullable<HTTPRouteSpec['parentRefs']>[number];
import { type Note, action, changed, dropped } from './migration-report.ts';

/** Every VirtualService becomes HTTPRoutes: one per parent (converted gateway, or mesh) with distinct rules. */
export function virtualServices(
  facts: Pick<Facts, 'input' | 'scope' | 'gateways'>,
  output: OutputView,
): Phase<{ routes: RouteGraph; needs: readonly WaypointNeed[] }> {
  const m: RouteStep = { ...step(facts, output), routedFrom: new Map(), routesTo: new Map(), needs: [] };
  for (const vs of m.input.snapshot.list(GroupKind.VirtualService))
    if (!m.scope.isKept(vs.metadata.namespace ?? 'default')) convertVirtualService(m, vs);
  return m.draft.done({ routes: { routedFrom: m.routedFrom, routesTo: m.routesTo }, needs: m.needs });
}

/** The route phase at work: what it reads, and the route graph and waypoint needs it learns. */
type RouteStep = Step<'input' | 'scope' | 'gateways'> & {
  readonly routedFrom: Map<string, Set<string>>;
  readonly routesTo: Map<string, Set<string>>;
  readonly needs: WaypointNeed[];
};

/** The parts of a VirtualService that have no HTTPRoute equivalent: TCP and TLS routes, a narrowed exportTo. */
function unconvertedFields(spec: VirtualServiceSpec): Note[] {
  const notes: Note[] = [];
  for (const field of ['tcp', 'tls'] as const)
    if ((spec[field] ?? []).length > 0)
      notes.push(
        dropped(
          `spec.${field}`,
          `${field.toUpperCase()} routes are not converted: write a ${field === 'tcp' ? 'TCPRoute' : 'TLSRoute'}`,
        ),
      );
  if (spec.exportTo && !spec.exportTo.includes('*'))
    notes.push(
      dropped(
        'spec.exportTo',
        'HTTPRoutes have no exportTo: the route applies to every client of its parents',
      ),
    );
  return notes;
}

/** One VirtualService → HTTPRoutes: one per set of parents (converted gateways, or mesh) with the same rules. */
function convertVirtualService(m: RouteStep, vs: KubeObject): void {
  const cd = m.input.mesh.clusterDomain;
  const ns = vs.metadata.namespace ?? 'default';
  const spec = specOf(vs, 'networking.istio.io/VirtualService');
  const notes: Note[] = [];
  const resolveGateway = (g: string) => resolveGatewayName(g, ns);
  const gateways =
    spec.gateways && spec.gateways.length > 0 ? spec.gateways.map(resolveGateway) : [MeshGateway];
  const hosts = (spec.hosts ?? []).map((h) => (h.includes('*') ? h : resolveShortName(h, ns, cd)));
  notes.push(...unconvertedFields(spec));
  const context: RouteContext = {
    namespace: ns,
    expand: (h) => resolveShortName(h, ns, cd),
    resolve: (h) => backend(m, h),
  };
  const http = spec.http ?? [];
  const groups: {
    parents: ParentRef[];
    rules: RouteRule[];
    hostnames: string[];
    mesh: boolean;
    label: string;
  }[] = [];
  // Gateways that keep this route: a host of it stays on the old gateway (the one front door).
  const held = gateways.filter((g) => g !== MeshGateway && isHeld(m.gateways, g, spec.hosts ?? []));
  for (const parent of gateways) {
    if (held.includes(parent)) continue;
    let parentRefs: ParentRef[];
    let hostnames: string[] = [];
    let label: string;
    if (parent === MeshGateway) {
      parentRefs = meshParents(m, vs, hosts, notes);
      label = 'mesh';
    } else {
      const target = m.gateways.newGateways.get(parent);
      if (!target) {
        notes.push(dropped('spec.gateways', `gateway ${parent} does not exist; nothing is bound to it`));
        continue;
      }
      parentRefs = [
        { name: target.name, ...(target.namespace !== ns ? { namespace: target.namespace } : {}) },
      ];
      hostnames = hosts.includes('*') ? [] : hosts;
      label = target.name;
    }
    if (parentRefs.length === 0) continue;
    const rules = convertHttpRoutes(http, parent, resolveGateway, context, notes);
    if (rules.length === 0) continue;
    const same = groups.find(
      (g) =>
        g.mesh === (parent === MeshGateway) &&
        JSON.stringify(g.rules) === JSON.stringify(rules) &&
        JSON.stringify(g.hostnames) === JSON.stringify(hostnames),
    );
    if (same) same.parents.push(...parentRefs);
    else groups.push({ parents: parentRefs, rules, hostnames, mesh: parent === MeshGateway, label });
  }
  for (const g of groups) if (g.mesh) recordMeshBackends(m, ns, g.parents, g.rules);
  const routes = httpRoutesOf(m, vs, groups, notes);
  if (held.length === gateways.length) {
    // Every parent keeps it: the route stays as it is, on the old front door.
    m.draft.note(vs, changed('spec.gateways', heldNote(m, held)), ...dedupe(notes));
    return;
  }
  const keptForGateways = routes.length > 0 || held.length > 0 ? keptOnGateways(m, vs, held, notes) : [];
  m.draft.replace(vs, [...keptForGateways, ...routes]);
  m.draft.note(vs, ...dedupe(notes));
  if (routes.length === 0 && held.length === 0)
    m.draft.note(
      vs,
      action(
        'spec.http',
        'nothing of it could be converted: it has no Gateway API equivalent, route these requests by hand',
      ),
    );
}

/** Why a route stays on old gateways that keep its host as the one front door. */
function heldNote(m: RouteStep, held: readonly string[]): string {
  const hosts = [...new Set(held.flatMap((g) => m.gateways.heldHosts.get(g) ?? []))].sort();
  return `stays on ${held.join(', ')}, the one front door for ${hosts.map((h) => `"${h}"`).join(', ')} (why: that Gateway's entry): clients reach one address per host, and it must serve all of the host's routes`;
}

/**
 * The VirtualService as it stays on old gateways (bound only to those): gateways kept for the controllers,
 * so that their clients keep their routes until DNS moves to the converted gateway, and gateways that keep
 * its host as the one front door (`held`); none when it has no such gateway.
 */
function keptOnGateways(m: RouteStep, vs: KubeObject, held: readonly string[], notes: Note[]): KubeObject[] {
  const ns = vs.metadata.namespace ?? 'default';
  const spec = specOf(vs, 'networking.istio.io/VirtualService');
  const forControllers = (spec.gateways ?? []).filter((g) => {
    const name = resolveGatewayName(g, ns);
    return m.gateways.keptForControllers.has(name) && !held.includes(name);
  });
  const bound = (spec.gateways ?? []).filter(
    (g) => forControllers.includes(g) || held.includes(resolveGatewayName(g, ns)),
  );
  if (bound.length === 0) return [];
  if (forControllers.length > 0)
    notes.push(
      changed(
        'spec.gateways',
        `also kept, bound only to ${forControllers.map((g) => resolveGatewayName(g, ns)).join(', ')}, which stays for the controllers: its clients keep their routes until DNS moves to the converted gateway`,
      ),
    );
  if (held.length > 0) notes.push(changed('spec.gateways', heldNote(m, held)));
  return [{ ...vs, spec: { ...spec, gateways: bound } }];
}

/** The HTTPRoute objects of a VirtualService's groups (named after it; by parent when it has several). */
function httpRoutesOf(
  m: RouteStep,
  vs: KubeObject,
  groups: readonly {
    parents: ParentRef[];
    rules: RouteRule[];
    hostnames: string[];
    mesh: boolean;
    label: string;
  }[],
  notes: Note[],
): KubeObject[] {
  const ns = vs.metadata.namespace ?? 'default';
  return groups.map((g, i): KubeObject => {
    const name = groups.length === 1 ? (vs.metadata.name ?? '') : `${vs.metadata.name}-${g.label}`;
    if (g.rules.length > 16)
      notes.push(
        action(
          'spec.http',
          `HTTPRoute ${name} has ${g.rules.length} rules; Gateway API allows 16 per route: split it`,
        ),
      );
    const labels = vs.metadata.labels;
    return {
      apiVersion: `${Group.GatewayApi}/v1`,
      kind: 'HTTPRoute',
      metadata: {
        name: i > 0 && groups.slice(0, i).some((x) => x.label === g.label) ? `${name}-${i + 1}` : name,
        namespace: ns,
        ...(labels && Object.keys(labels).length > 0 ? { labels: { ...labels } } : {}),
      },
      spec: {
        parentRefs: g.parents,
        ...(g.hostnames.length > 0 ? { hostnames: g.hostnames } : {}),
        rules: g.rules,
      },
    };
  });
}

/** The Services a mesh route attaches to; each of them needs a waypoint to apply it. */
function meshParents(m: RouteStep, vs: KubeObject, hosts: readonly string[], notes: Note[]): ParentRef[] {
  const ns = vs.metadata.namespace ?? 'default';
  const parents: ParentRef[] = [];
  for (const host of hosts) {
    const service = m.input.mesh.serviceByHostname.get(host);
    if (!service) {
      notes.push(
        dropped(
          'spec.hosts',
          `${host}: mesh routes attach to Services in ambient mode, and no Service has this host`,
        ),
      );
      continue;
    }
    if (service.type === 'ExternalName') {
      notes.push(
        dropped(
          'spec.hosts',
          `${host} is an ExternalName Service: no waypoint serves it, so the mesh route can't attach; clients reach ${service.externalName} directly`,
        ),
      );
      continue;
    }
    parents.push({
      group: '',
      kind: 'Service',
      name: service.name,
      ...(service.namespace !== ns ? { namespace: service.namespace } : {}),
    });
    m.needs.push({ service, reason: `mesh route ${ns}/${vs.metadata.name}` });
  }
  return parents;
}

function backend(m: RouteStep, host: string): BackendTarget | undefined {
  const service = m.input.mesh.serviceByHostname.get(host);
  if (service)
    return {
      kind: 'service',
      name: service.name,
      namespace: service.namespace,
      ports: service.ports.map((p) => p.port),
    };
  const entries = m.input.snapshot.list(GroupKind.ServiceEntry);
  if (entries.some((e) => (specOf(e, 'networking.istio.io/ServiceEntry').hosts ?? []).includes(host)))
    return { kind: 'hostname', host };
  return undefined;
}

/** Remembers which Services a mesh route's waypoint sends each parent Service's requests to. */
function recordMeshBackends(
  m: RouteStep,
  namespace: string,
  parents: readonly ParentRef[],
  rules: readonly RouteRule[],
): void {
  const parentKeys = parents.map((p) => `${p.namespace ?? namespace}/${p.name ?? ''}`);
  for (const rule of rules)
    for (const b of rule.backendRefs ?? []) {
      if (b.kind !== undefined && b.kind !== 'Service') continue;
      const key = `${b.namespace ?? namespace}/${b.name ?? ''}`;
      const set = m.routedFrom.get(key) ?? new Set<string>();
      for (const parent of parentKeys) {
        if (parent === key) continue;
        set.add(parent);
        const to = m.routesTo.get(parent) ?? new Set<string>();
        m.routesTo.set(parent, to.add(key));
      }
      m.routedFrom.set(key, set);
    }
}

function dedupe(notes: readonly Note[]): Note[] {
  const seen = new Set<string>();
  return notes.filter((n) => {
    const key = `${n.kind}\n${n.field ?? ''}\n${n.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

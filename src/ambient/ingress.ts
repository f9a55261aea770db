/**
 * Migration phase: ingress. Istio Gateways that VirtualServices bind become Gateway API Gateways of class
 * istio (the rest are left out); the old gateway identity is mapped to the new one for the policies that
 * name it. Kubernetes Ingresses of class istio are reported: no Gateway API gateway serves them.
 */
import { specOf } from '../model/specs.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { resolveGatewayName } from '../mesh/virtual-services.ts';
import { Annotation, GroupKind } from '../model/vocabulary.ts';
import { hostsMeet, step, type Facts, type GatewayPlan, type NewGateway, type Step } from './context.ts';
import type { Workload } from '../mesh/workloads.ts';
import type { OutputView, Phase } from './output.ts';
import { convertGateway, gatewayApiPrincipal } from './gateways.ts';
import { type Note, action, changed } from './migration-report.ts';
import { principalOf } from '../model/identity.ts';
import { gatewaysNamedByControllers, type GatewayUse } from './controller-config.ts';
import { addTo } from '../model/multimap.ts';
import { hostMatches } from '../mesh/security.ts';

/** Istio Gateways bound by some VirtualService become Gateway API Gateways; the rest are left out. */
export function gateways(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase<GatewayPlan> {
  const m = step(facts, output);
  const newGateways = new Map<string, NewGateway>();
  const oldGatewaysInUse = new Set<Workload>();
  const keptForControllers = new Set<string>();
  const namedByControllers = gatewaysNamedByControllers(m.input);
  const { held, heldFor, moving } = routeHosts(m);
  const heldHosts = new Map<string, string[]>();
  for (const gateway of m.input.snapshot.list(GroupKind.IstioGateway)) {
    const ns = gateway.metadata.namespace ?? 'default';
    const name = gateway.metadata.name ?? '';
    const key = `${ns}/${name}`;
    const selector = specOf(gateway, 'networking.istio.io/Gateway').selector ?? {};
    const pods = m.input.mesh.workloads.filter(
      (w) => Object.keys(selector).length > 0 && labelsMatch(w.labels, selector),
    );
    const controllers = namedByControllers.get(key) ?? [];
    const sidecarNamespaces = m.scope.isKept(ns) ? [ns] : [...new Set(heldFor.get(key) ?? [])].sort();
    const hostsHeld = m.scope.isKept(ns)
      ? ['*']
      : covering([...(held.get(key) ?? []), ...controllers.flatMap((u) => u.hosts)]);
    if (hostsHeld.length > 0) heldHosts.set(key, hostsHeld);
    const servesSidecars = sidecarNamespaces.length > 0;
    const stays = servesSidecars || controllers.length > 0;
    if (stays) for (const pod of pods) oldGatewaysInUse.add(pod);
    for (const use of controllers) m.draft.note(gateway, action('', keptForUse(use)));
    const { heldWhy, untilText } = frontDoorWords(hostsHeld, sidecarNamespaces, controllers);
    const movable = (moving.get(key) ?? []).filter((hosts) => !hostsMeet(hosts, hostsHeld));
    if (movable.length === 0) {
      if (stays) {
        if ((moving.get(key) ?? []).length > 0)
          m.draft.note(
            gateway,
            action(
              '',
              `kept, not converted: ${heldWhy}; DNS stays on it, and it is converted once ${untilText}`,
            ),
          );
        else if (servesSidecars)
          m.draft.note(
            gateway,
            changed('', 'kept: it serves routes of namespaces that stay in sidecar mode'),
          );
        continue;
      }
      m.draft.replace(gateway, []);
      m.draft.note(
        gateway,
        changed('', 'no VirtualService is bound to it: there is nothing to serve, so it is not converted'),
      );
      continue;
    }
    const notes: Note[] = [];
    const converted = convertGateway(gateway, notes);
    m.draft.replace(gateway, stays ? [gateway, converted] : [converted]);
    if (stays && !servesSidecars) keptForControllers.add(`${ns}/${name}`);
    if (stays)
      notes.push(
        changed(
          '',
          `also kept as it is: ${hostsHeld.length > 0 ? heldWhy : "the platform's controllers build on it"}`,
        ),
      );
    m.draft.note(gateway, ...notes);
    const principal = gatewayApiPrincipal(m.input.trustDomain, ns, name);
    newGateways.set(`${ns}/${name}`, { namespace: ns, name, principal, pods });
    m.draft.note(gateway, action('', dnsAdvice(ns, name, pods, stays, servesSidecars, hostsHeld, untilText)));
  }
  return m.draft.done<GatewayPlan>({
    newGateways,
    principalRenames: renames(newGateways, oldGatewaysInUse, m.input.trustDomain),
    oldGatewaysInUse,
    keptForControllers,
    heldHosts,
  });
}

/**
 * Per old gateway (`ns/name`): the hosts the routes of namespaces that stay in sidecar mode use there, and
 * those namespaces (held there); the hosts of each route of a moved namespace.
 */
function routeHosts(m: Step<'input' | 'scope'>): {
  held: Map<string, string[]>;
  heldFor: Map<string, string[]>;
  moving: Map<string, string[][]>;
} {
  const held = new Map<string, string[]>();
  const heldFor = new Map<string, string[]>();
  const moving = new Map<string, string[][]>();
  for (const vs of m.input.snapshot.list(GroupKind.VirtualService)) {
    const ns = vs.metadata.namespace ?? 'default';
    const spec = specOf(vs, 'networking.istio.io/VirtualService');
    const hosts = spec.hosts ?? [];
    for (const g of spec.gateways ?? []) {
      const key = resolveGatewayName(g, ns);
      if (m.scope.isKept(ns)) {
        for (const h of hosts) addTo(held, key, h);
        addTo(heldFor, key, ns);
      } else addTo(moving, key, hosts);
    }
  }
  return { held, heldFor, moving };
}

/** Why an old gateway stays the front door of its held hosts, and until when, in words. */
function frontDoorWords(
  hostsHeld: readonly string[],
  sidecarNamespaces: readonly string[],
  controllers: readonly GatewayUse[],
): { heldWhy: string; untilText: string } {
  const servesSidecars = sidecarNamespaces.length > 0;
  const writers = controllers.filter((u) => u.hosts.length > 0);
  const users = [
    ...(servesSidecars ? [`routes of ${inWords(sidecarNamespaces)} (in sidecar mode)`] : []),
    ...writers.map((u) => `what ${u.controller} writes next`),
  ];
  const many = hostsHeld.length > 1;
  const heldWhy = `it stays the one front door for ${hostsHeld.map((h) => `"${h}"`).join(', ')}: ${inWords(users)} use${users.length > 1 || servesSidecars ? '' : 's'} ${many ? 'these hosts' : 'this host'} there, and the routes of moved namespaces on ${many ? 'them' : 'it'} stay on it too, so clients keep one address per host`;
  const until = [
    ...(servesSidecars
      ? [`${inWords(sidecarNamespaces)} move${sidecarNamespaces.length > 1 ? '' : 's'}`]
      : []),
    ...writers.map((u) => `${u.controller} no longer builds on it`),
  ];
  return { heldWhy, untilText: inWords(until) };
}

/** What a controller builds on a kept gateway, and how to stop it. */
function keptForUse(use: GatewayUse): string {
  const where = `ConfigMap ${use.configMap.metadata.namespace ?? 'default'}/${use.configMap.metadata.name ?? ''} ${use.field}`;
  return `kept, with its pods: ${use.builds} (${where}); to retire it, ${use.retire}`;
}

/** Where to point DNS once a gateway is converted, and what becomes of the old gateway's pods. */
function dnsAdvice(
  ns: string,
  name: string,
  pods: readonly Workload[],
  stays: boolean,
  servesSidecars: boolean,
  hostsHeld: readonly string[],
  untilText: string,
): string {
  return `Istio deploys the gateway as Deployment and Service ${ns}/${name}-istio: point DNS or the load balancer at that Service for ${hostsHeld.length > 0 ? `the hosts of the converted routes (not ${hostsHeld.map((h) => `"${h}"`).join(', ')}, which stay on the old gateway until ${untilText})` : 'the converted routes'}, then ${stays ? 'keep' : 'remove'} the old gateway pods (${[...new Set(pods.map((p) => `${p.namespace}/${p.name}`))].join(', ') || 'none found'})${stays ? `, which go on serving ${servesSidecars ? 'the namespaces that stay in sidecar mode' : 'what the controllers create on the old gateway'}` : ''}`;
}

/** `a`, `a and b`, `a, b and c`. */
function inWords(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1) ?? ''}`;
}

/** The hosts of a list that no other host of it covers (`*` covers every host), sorted. */
function covering(hosts: readonly string[]): string[] {
  const unique = [...new Set(hosts)];
  return unique.filter((h) => !unique.some((k) => k !== h && hostMatches(k, h))).sort();
}

/**
 * Old gateway principal → the principals of the new gateways that replace its pods; an old gateway that
 * stays (it serves sidecar-mode routes, or controllers build on it) keeps its identity beside them.
 */
function renames(
  newGateways: ReadonlyMap<string, NewGateway>,
  inUse: ReadonlySet<Workload>,
  trustDomain: string,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { pods, principal } of newGateways.values())
    for (const pod of pods) {
      const old = principalOf(pod, trustDomain);
      const list = out.get(old) ?? [];
      if (!list.includes(principal)) list.push(principal);
      out.set(old, list.sort());
    }
  for (const pod of inUse) {
    const old = principalOf(pod, trustDomain);
    const list = out.get(old);
    if (list && !list.includes(old)) out.set(old, [...list, old].sort());
  }
  return out;
}

/** Kubernetes Ingresses of class istio are served by the Istio gateway pods, not a Gateway API gateway. */
export function istioIngresses(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const ingress of m.input.snapshot.list(GroupKind.Ingress)) {
    if (m.scope.isKept(ingress.metadata.namespace ?? 'default')) continue;
    const spec = specOf(ingress, 'networking.k8s.io/Ingress');
    const istioClass =
      spec.ingressClassName === 'istio' ||
      ingress.metadata.annotations?.[Annotation.IngressClass] === 'istio';
    if (!istioClass) continue;
    m.draft.note(
      ingress,
      action(
        'spec.ingressClassName',
        'served by the Istio ingress gateway pods, not by a Gateway API gateway: write it as an HTTPRoute (for KServe: enableGatewayApi in inferenceservice-config), or keep those pods running',
      ),
    );
  }
  return m.draft.done();
}

/**
 * Migration phase: the sources a NetworkPolicy admits, enforced at the waypoint (docs/semantics.md,
 * NetworkPolicy and The migration). Behind a waypoint a pod's NetworkPolicies see the waypoint pod as the
 * source of every request, so a rule that admitted only some namespaces or pods no longer tells callers
 * apart. For each Service a waypoint serves, the waypoint gets a DENY AuthorizationPolicy (targetRefs to
 * the Service) that refuses, port by port, every source the pods' NetworkPolicies would have refused.
 *
 * A DENY and not an ALLOW: an ALLOW would add to the Service's other ALLOW policies and admit what they
 * refuse. The sources are written as identities: a namespace for a peer that takes a whole namespace, the
 * principals of the service accounts whose every pod a pod selector takes, and IP blocks. What identities
 * cannot say is refused at the waypoint and reported (a narrower result, never a wider one).
 */
import type { KubeObject } from '../model/object.ts';
import { specOf, type NetworkPolicyPeer } from '../model/specs.ts';
import { HboneTargetPort } from '../mesh/trace/network.ts';
import { Label, Group } from '../model/vocabulary.ts';
import type { NetworkPolicies } from '../mesh/network-policy.ts';
import type { MeshService } from '../mesh/services.ts';
import type { Workload } from '../mesh/workloads.ts';
import { step, type Facts, type Step } from './context.ts';
import type { OutputView, Phase } from './output.ts';

type SourcesStep = Step<'input' | 'scope' | 'gateways' | 'waypoints'>;
import { changed } from './migration-report.ts';
import {
  admittedKey,
  convertedNetworkPolicies,
  noteOnPolicies,
  notesFor,
  denyRule,
  identitiesOf,
  intersect,
  sourcesOf,
  type Admitted,
  type Source,
} from './admitted.ts';

/** Adds, for every Service a waypoint serves, the DENY that keeps its pods' NetworkPolicy sources. */
export function waypointSources(
  facts: Pick<Facts, 'input' | 'scope' | 'gateways' | 'waypoints'>,
  output: OutputView,
): Phase {
  const m = step(facts, output);
  const converted = convertedNetworkPolicies(m);
  if (!converted) return m.draft.done();
  const { policies, byName } = converted;
  const sources = sourcesOf(m);
  admitWaypoints(m, policies, byName);
  for (const service of servicesAtWaypoints(m)) {
    const name = m.draft.freeName(
      Group.IstioSecurity,
      'AuthorizationPolicy',
      service.namespace,
      `${service.name}-network-policy`,
    );
    const { byPorts, involved, notes } = admittedByPort(
      m,
      policies,
      sources,
      service,
      `${service.namespace}/${name}`,
    );
    if (byPorts.size === 0) continue;
    m.draft.add(
      {
        apiVersion: `${Group.IstioSecurity}/v1`,
        kind: 'AuthorizationPolicy',
        metadata: { name, namespace: service.namespace },
        spec: {
          targetRefs: [{ group: '', kind: 'Service', name: service.name }],
          action: 'DENY',
          rules: [...byPorts.values()].map(({ ports, admitted }) => denyRule(ports, admitted)),
        },
      },
      `the sources NetworkPolicy ${involved.join(', ')} admits to the pods of Service ${service.namespace}/${service.name}, enforced at its waypoint: behind a waypoint the pods see the waypoint as the source`,
    );
    noteOnPolicies(
      m,
      byName,
      involved,
      `its sources for Service ${service.namespace}/${service.name} are enforced at the waypoint too, by AuthorizationPolicy ${service.namespace}/${name}`,
      notes,
    );
  }
  return m.draft.done();
}

/**
 * Who the NetworkPolicies admit to the pods behind one Service, port by port (ports admitting the same
 * sources together; a port that admits everyone is left out), the policies that isolate those pods, and
 * the notes for each policy on what the identities at the waypoint (`deny`) cannot say.
 */
function admittedByPort(
  m: SourcesStep,
  policies: NetworkPolicies,
  sources: readonly Source[],
  service: MeshService,
  deny: string,
) {
  const { notes, note } = notesFor(deny);
  const involved = new Set<string>();
  const byPorts = new Map<string, { ports: number[]; admitted: Admitted }>();
  for (const port of service.ports) {
    let admitted: Admitted | undefined;
    for (const [pod, targetPort] of podsReached(m, service, port.port)) {
      const peers = policies.admittedPeers(pod, targetPort);
      if (peers.open) continue;
      peers.by.forEach((p) => involved.add(p));
      const here = identitiesOf(policies, peers.peers, sources, note);
      admitted = admitted ? intersect(admitted, here) : here;
    }
    if (!admitted || admitted.everyone) continue;
    const key = admittedKey(admitted);
    const group = byPorts.get(key) ?? { ports: [], admitted };
    group.ports.push(port.port);
    byPorts.set(key, group);
  }
  return { byPorts, involved: [...involved].sort(), notes };
}

/**
 * The waypoint must reach the pods behind it: where their NetworkPolicies do not admit its pods on
 * 15008, one rule admitting them there is added to the first policy (by name) that isolates each pod.
 * What the waypoint lets through is its policies' to decide, the DENY above among them.
 */
function admitWaypoints(
  m: SourcesStep,
  policies: NetworkPolicies,
  byName: ReadonlyMap<string, KubeObject>,
): void {
  const amend = new Set<string>();
  for (const service of servicesAtWaypoints(m))
    for (const port of service.ports)
      for (const [pod] of podsReached(m, service, port.port)) {
        const peers = policies.admittedPeers(pod, HboneTargetPort);
        if (
          peers.open ||
          peers.peers.some((p) => takesWaypoint(policies, p, service.namespace, m.input.waypointName))
        )
          continue;
        const first = [...peers.by].sort()[0];
        if (first) amend.add(`${first}\n${service.namespace}`);
      }
  for (const key of [...amend].sort()) {
    const [name = '', namespace = ''] = key.split('\n');
    const object = byName.get(name);
    if (!object) continue;
    const current = m.draft.current(object);
    const spec = specOf(current, 'networking.k8s.io/NetworkPolicy');
    const ingress = spec.ingress ?? [];
    m.draft.change(object, {
      ...current,
      spec: {
        ...spec,
        ingress: [
          ...ingress,
          {
            from: [
              {
                namespaceSelector: { matchLabels: { [Label.MetadataName]: namespace } },
                podSelector: { matchLabels: { [Label.GatewayName]: m.input.waypointName } },
              },
            ],
            ports: [{ protocol: 'TCP', port: HboneTargetPort }],
          },
        ],
      },
    });
    m.draft.note(
      object,
      changed(
        `spec.ingress[${ingress.length}]`,
        `admits the pods of waypoint ${namespace}/${m.input.waypointName} on ${HboneTargetPort}/TCP: they bring the requests to the pods behind it, and its policies refuse the sources these rules refused`,
      ),
    );
  }
}

/** Whether a peer of a policy takes the pods of a waypoint (labelled with their Gateway's name). */
function takesWaypoint(
  policies: NetworkPolicies,
  { policyNamespace, peer }: { policyNamespace: string; peer: NetworkPolicyPeer },
  namespace: string,
  waypoint: string,
): boolean {
  if (peer.ipBlock) return false; // the waypoint's address is not known ahead
  const namespaces = peer.namespaceSelector
    ? policies.namespacesSelected(peer.namespaceSelector)
    : [policyNamespace];
  return (
    namespaces.includes(namespace) &&
    policies.selectorMatches(peer.podSelector ?? {}, { [Label.GatewayName]: waypoint })
  );
}

/** The Services a waypoint serves after the migration. */
function servicesAtWaypoints(m: SourcesStep): MeshService[] {
  const out = new Map<string, MeshService>();
  for (const { service } of m.waypoints.services.values())
    out.set(`${service.namespace}/${service.name}`, service);
  for (const ns of m.waypoints.namespaces.keys())
    for (const service of m.input.selectingServices(ns))
      out.set(`${service.namespace}/${service.name}`, service);
  return [...out.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
}

/**
 * The pods a request to the Service's port can end at, each with the port it arrives on as the pod's own:
 * the Service's pods at the target port, and the pods of the Services its mesh routes send to, at each
 * of their ports (a route may change the port; every one is taken, which can only narrow).
 */
function podsReached(m: SourcesStep, service: MeshService, port: number): [Workload, number][] {
  const out: [Workload, number][] = [];
  const servicePort = service.ports.find((p) => p.port === port);
  for (const endpoint of service.endpoints)
    if (endpoint.workload && servicePort && m.scope.goesAmbient(endpoint.workload))
      out.push([endpoint.workload, endpoint.portFor(servicePort)]);
  for (const key of m.waypoints.routes.routesTo.get(`${service.namespace}/${service.name}`) ?? []) {
    const [ns = '', name = ''] = key.split('/');
    const routed = m.input.mesh.services.find((s) => s.namespace === ns && s.name === name);
    for (const endpoint of routed?.endpoints ?? [])
      if (endpoint.workload && m.scope.goesAmbient(endpoint.workload))
        for (const p of routed?.ports ?? []) out.push([endpoint.workload, endpoint.portFor(p)]);
  }
  return out;
}

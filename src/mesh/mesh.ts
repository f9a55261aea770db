/**
 * The compiled mesh: what Istio's control plane would know about a snapshot, indexed for tracing.
 * `compileMesh` runs once; route tables of sidecars and gateways are built on first use and cached, so
 * any number of traces reuse them.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { specOf } from '../model/specs.ts';
import { addTo } from '../model/multimap.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { waypointsFrom } from './ambient.ts';
import { MeshPolicies } from './authorization.ts';
import { httpRouteVirtualServices, syntheticGatewayWorkloads } from './gateway-api.ts';
import { gatewayRouteTable, gatewaysFrom } from './gateways.ts';
import { derivedIngressConfig } from './kube-ingress.ts';
import { behaviourOf } from './istio-version.ts';
import { chooseIstioVersion } from './installed-version.ts';
import { meshConfigFrom } from '../load/mesh-config.ts';
import { NetworkPolicies } from './network-policy.ts';
import { SecurityPolicies } from './security.ts';
import { serviceEntryServices, servicesFrom, type MeshService } from './services.ts';
import {
  endpointListenerIndex,
  httpRouteTable,
  sidecarScopeOf,
  type SidecarScope,
} from './sidecar-outbound.ts';
import { virtualServicesFrom } from './virtual-services.ts';
import { workloadsFrom, type Workload } from './workloads.ts';
import type { CompileOptions, Mesh } from './compiled.ts';

/** Compiles a snapshot into the mesh the data plane would run. */
export function compileMesh(snapshot: Snapshot, options: CompileOptions = {}): Mesh {
  const { version, source: versionSource } = chooseIstioVersion(snapshot, options.istioVersion);
  const behaviour = behaviourOf(version);
  const config = meshConfigFrom(snapshot);
  const clusterDomain = options.clusterDomain ?? 'cluster.local';
  const fromIngress = derivedIngressConfig(snapshot, config, clusterDomain);
  const gatewayObjects = [...snapshot.list(GroupKind.IstioGateway), ...fromIngress.gateways];
  const selectors = gatewayObjects.map((g) => specOf(g, 'networking.istio.io/Gateway').selector ?? {});
  const podWorkloads = workloadsFrom(snapshot, selectors, config);
  const workloads = [...podWorkloads, ...syntheticGatewayWorkloads(snapshot, podWorkloads, 0)];
  const kubeServices = servicesFrom(snapshot, workloads, clusterDomain);
  const entries = serviceEntryServices(
    snapshot,
    workloads,
    new Set(kubeServices.map((s) => `${s.namespace}/${s.hostname}`)),
  );
  const services = [...kubeServices, ...entries].map((s) =>
    s.exportTo.length > 0 ? s : { ...s, exportTo: [...config.defaultExportTo.service] },
  );
  // A hostname or address names the first service that claims it: Kubernetes Services before entries.
  const serviceByHostname = new Map<string, MeshService>();
  const serviceByVip = new Map<string, MeshService>();
  for (const s of services) {
    if (!serviceByHostname.has(s.hostname)) serviceByHostname.set(s.hostname, s);
    for (const ip of s.entry?.addresses ?? (s.vip ? [s.vip] : []))
      if (!serviceByVip.has(ip)) serviceByVip.set(ip, s);
  }
  const aliasesOf = new Map<string, MeshService[]>();
  if (behaviour.externalNameAlias) {
    for (const s of services) {
      if (s.type !== 'ExternalName' || !s.externalName) continue;
      const target = resolveAliasTarget(s, serviceByHostname);
      if (target) addTo(aliasesOf, target.hostname, s);
    }
  }
  const workloadByName = new Map<string, Workload>();
  for (const w of workloads)
    if (!workloadByName.has(`${w.namespace}/${w.name}`)) workloadByName.set(`${w.namespace}/${w.name}`, w);
  const virtualServices = [
    ...virtualServicesFrom(snapshot, clusterDomain, config.defaultExportTo.virtualService),
    ...httpRouteVirtualServices(snapshot, clusterDomain, behaviour.noBackendRefsStatus),
    ...fromIngress.virtualServices,
  ];
  const isPublic = (exportTo: readonly string[]) => exportTo.length === 1 && exportTo[0] === '*';
  const mesh: Mesh = {
    snapshot,
    version,
    versionSource,
    behaviour,
    config,
    clusterDomain,
    workloads,
    workloadByIp: new Map(workloads.map((w) => [w.ip, w])),
    workloadByName,
    services,
    serviceByHostname,
    serviceByVip,
    aliasesOf,
    virtualServices,
    exportsRestricted:
      !services.every((s) => isPublic(s.exportTo)) || !virtualServices.every((v) => isPublic(v.exportTo)),
    gateways: new Map(),
    waypoints: waypointsFrom(snapshot, workloads),
    security: new SecurityPolicies(snapshot, config, clusterDomain),
    authorization: new MeshPolicies(snapshot, config.rootNamespace),
    requestAuthentication: new MeshPolicies(snapshot, config.rootNamespace, GroupKind.RequestAuthentication),
    networkPolicies: new NetworkPolicies(snapshot),
  };
  mesh.gateways = gatewaysFrom(mesh, gatewayObjects);
  return mesh;
}

/** The concrete service an ExternalName aliases (following alias chains), if it is in the mesh. */
function resolveAliasTarget(
  alias: MeshService,
  byHostname: ReadonlyMap<string, MeshService>,
): MeshService | undefined {
  let current: MeshService | undefined = alias;
  for (let depth = 0; current?.type === 'ExternalName' && current.externalName && depth < 8; depth++) {
    current = byHostname.get(current.externalName);
  }
  return current && current.type !== 'ExternalName' ? current : undefined;
}

/** The service a destination host names, with aliases replaced by their target when aliasing is on. */
export function serviceForHost(mesh: Mesh, host: string): MeshService | undefined {
  const service = mesh.serviceByHostname.get(host);
  if (service?.type === 'ExternalName' && mesh.behaviour.externalNameAlias)
    return resolveAliasTarget(service, mesh.serviceByHostname);
  return service;
}

/**
 * Builds every proxy's route tables up front (sidecar scopes and their HTTP listener tables, gateway
 * listen ports), so that traces only look up. Tracing works without it (tables are then built on first
 * use); callers that trace many requests compile first. Returns how many route tables exist.
 */
export function compileProxies(mesh: Mesh): number {
  let tables = 0;
  endpointListenerIndex(mesh);
  const seenScopes = new Set<SidecarScope>();
  for (const workload of mesh.workloads) {
    if (workload.proxy === 'sidecar') {
      const scope = sidecarScopeOf(mesh, workload);
      if (seenScopes.has(scope)) continue;
      seenScopes.add(scope);
      for (const port of scope.httpPorts) {
        httpRouteTable(mesh, scope, port);
        tables++;
      }
    }
  }
  for (const proxy of mesh.gateways.values()) {
    for (const port of new Set(proxy.servers.map((s) => s.listenPort)))
      if (gatewayRouteTable(mesh, proxy, port)) tables++;
  }
  return tables;
}

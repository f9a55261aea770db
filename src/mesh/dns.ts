/**
 * Name resolution as a pod does it: the search list of its namespace (`<ns>.svc.<cd>`, `svc.<cd>`, `<cd>`,
 * ndots 5), Services' FQDNs, ExternalName as a CNAME, headless Services to their endpoints, and a pod's
 * own name under a headless Service to that pod.
 */
import type { MeshService } from './services.ts';
import type { Mesh } from './compiled.ts';

/** What a host name resolves to. */
export type Resolution =
  /** A Service's virtual IP (or a headless Service's first endpoint). `via` lists the CNAME chain. */
  | { kind: 'service'; service: MeshService; ip: string; via: readonly string[] }
  /** An IP literal. */
  | { kind: 'ip'; ip: string }
  /** A name outside the cluster domain: resolved by upstream DNS to an address outside the mesh. */
  | { kind: 'external'; name: string; ip: string; via: readonly string[] }
  /** A name inside the cluster domain that no Service has. */
  | { kind: 'nxdomain'; name: string };

/** The address outside the cluster that external names resolve to in traces (TEST-NET-3). */
const ExternalAddress = '203.0.113.10';

/** Resolves a host name from a pod in `namespace`. */
export function resolveHost(mesh: Mesh, host: string, namespace: string): Resolution {
  const name = host.toLowerCase();
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name) || name.startsWith('['))
    return { kind: 'ip', ip: name.replace(/^\[|\]$/g, '') };
  const bare = name.endsWith('.') ? name.slice(0, -1) : name;
  const candidate = serviceCandidate(bare, namespace, mesh.clusterDomain, name.endsWith('.'));
  const service = candidate === undefined ? undefined : mesh.serviceByHostname.get(candidate);
  if (service) return followCname(mesh, service, NoCname);
  const pod = podNameCandidate(bare, namespace, mesh.clusterDomain, name.endsWith('.'));
  if (pod) {
    const headless = mesh.serviceByHostname.get(pod.service);
    const endpoint = headless?.type === 'Headless' ? podEndpoint(headless, pod.hostname) : undefined;
    if (headless && endpoint) return { kind: 'service', service: headless, ip: endpoint.ip, via: NoCname };
  }
  // A sidecar that answers DNS gives a ServiceEntry host its address (docs/semantics.md, ServiceEntry).
  const entry = mesh.serviceByHostname.get(bare);
  if (entry?.type === 'ServiceEntry' && entry.vip !== undefined && mesh.config.dnsCapture)
    return { kind: 'service', service: entry, ip: entry.vip, via: NoCname };
  const cd = mesh.clusterDomain;
  if (bare.endsWith(`.${cd}`) || bare === cd || !bare.includes('.')) return { kind: 'nxdomain', name: bare };
  return { kind: 'external', name: bare, ip: ExternalAddress, via: NoCname };
}

/**
 * The one name of the search list (`<ns>.svc.<cd>`, `svc.<cd>`, `<cd>`, then the name itself; ndots 5)
 * that can be a Service's `<name>.<namespace>.svc.<cd>`: Service and namespace names are single labels,
 * so only the candidate of that shape needs a lookup, and which one it is follows from the name's dots.
 */
function serviceCandidate(
  bare: string,
  namespace: string,
  cd: string,
  absolute: boolean,
): string | undefined {
  const suffix = cd === 'cluster.local' ? '.svc.cluster.local' : `.svc.${cd}`;
  if (bare.endsWith(suffix)) {
    const head = bare.slice(0, -suffix.length);
    const dot = head.indexOf('.');
    return dot > 0 && head.indexOf('.', dot + 1) < 0 ? bare : undefined;
  }
  if (absolute) return undefined;
  const first = bare.indexOf('.');
  if (first < 0) return `${bare}.${namespace}${suffix}`;
  const second = bare.indexOf('.', first + 1);
  if (second < 0) return `${bare}${suffix}`;
  return bare.endsWith('.svc') && bare.indexOf('.', second + 1) < 0 ? `${bare}.${cd}` : undefined;
}

/**
 * A pod's name under a headless Service, `<hostname>.<service>.<ns>.svc.<cd>` (or a shorter form the
 * search list completes): the hostname and the Service's FQDN.
 */
function podNameCandidate(
  bare: string,
  namespace: string,
  cd: string,
  absolute: boolean,
): { hostname: string; service: string } | undefined {
  const suffix = `.svc.${cd}`;
  let head: string | undefined;
  if (bare.endsWith(suffix)) head = bare.slice(0, -suffix.length);
  else if (absolute) return undefined;
  else if (bare.endsWith('.svc')) head = bare.slice(0, -'.svc'.length);
  else head = bare.split('.').length === 2 ? `${bare}.${namespace}` : bare;
  const labels = head.split('.');
  if (labels.length !== 3) return undefined;
  const [hostname = '', service = '', ns = ''] = labels;
  return { hostname, service: `${service}.${ns}${suffix}` };
}

/** The endpoint of a headless Service whose pod has this hostname under it (the Service as its subdomain). */
function podEndpoint(service: MeshService, hostname: string): MeshService['endpoints'][number] | undefined {
  return service.endpoints.find(
    (e) => e.workload?.dnsName?.hostname === hostname && e.workload.dnsName.subdomain === service.name,
  );
}

/** The CNAME chain of a name that is no alias (shared: resolutions are never changed). */
const NoCname: readonly string[] = Object.freeze([]);

function followCname(mesh: Mesh, service: MeshService, via: readonly string[]): Resolution {
  if (service.type === 'ExternalName' && service.externalName) {
    if (via.length > 8) return { kind: 'nxdomain', name: service.externalName };
    const chain = [...via, service.hostname];
    const target = mesh.serviceByHostname.get(service.externalName);
    if (target) return followCname(mesh, target, chain);
    if (service.externalName.endsWith(`.${mesh.clusterDomain}`))
      return { kind: 'nxdomain', name: service.externalName };
    return { kind: 'external', name: service.externalName, ip: ExternalAddress, via: chain };
  }
  if (service.type === 'Headless') {
    const first = service.endpoints[0];
    return first
      ? { kind: 'service', service, ip: first.ip, via }
      : { kind: 'nxdomain', name: service.hostname };
  }
  return { kind: 'service', service, ip: service.vip ?? '', via };
}

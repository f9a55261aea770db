/**
 * KFM101: in-mesh callers of a host a VirtualService routes only at gateways (an InferenceService's
 * `<isvc>.<ns>.svc`, any ExternalName host) leave their own sidecar without that route. Found by tracing
 * a request from a sidecar client in every namespace: before Istio 1.21 it goes to `PassthroughCluster`
 * (and is refused with 502 under `REGISTRY_ONLY`); from 1.21 the ExternalName alias takes it to the
 * local gateway, which applies the route and forwards through itself a second time. Either way the
 * caller's identity does not reach the model.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { compileMesh } from '../../mesh/mesh.ts';
import { traceRequest } from '../../mesh/trace.ts';
import { bindToMesh } from '../patches.ts';
import { hopsText } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { writtenAsVirtualService } from '../../mesh/virtual-services.ts';

const legacy = { major: 1, minor: 20 };

export const passthroughForMeshClients: Rule = {
  code: 'KFM101',
  name: 'passthrough-for-mesh-clients',
  severity: Severity.Warning,
  description:
    'in-mesh callers of a host whose VirtualService is not bound to mesh skip its route: PassthroughCluster before Istio 1.21 (502 under REGISTRY_ONLY), a second gateway pass after',
  reads: [GroupKind.VirtualService, GroupKind.Ingress, GroupKind.HTTPRoute],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    // One sidecar client per namespace (the first by name) speaks for its namespace.
    const clients = new Map<string, string>();
    for (const [name, w] of [...mesh.workloadByName].sort(([a], [b]) => (a < b ? -1 : 1)))
      if (w.proxy === 'sidecar' && !clients.has(w.namespace)) clients.set(w.namespace, name);
    if (clients.size === 0) return [];
    let legacyMesh: ReturnType<typeof compileMesh> | undefined;
    const findings: Finding[] = [];
    // Hosts some mesh-bound route claims (as Knative's `-mesh` VirtualServices do beside their `-ingress` ones).
    const meshHosts = new Set(
      mesh.virtualServices.filter((v) => v.gateways.includes('mesh')).flatMap((v) => v.hosts),
    );
    for (const vs of mesh.virtualServices) {
      if (!writtenAsVirtualService(vs) || vs.gateways.includes('mesh') || vs.gateways.length === 0) continue;
      const internal = vs.hosts.filter((h) => {
        const service = mesh.serviceByHostname.get(h);
        return service !== undefined && service.type === 'ExternalName' && !meshHosts.has(h);
      });
      for (const host of internal) {
        const skipped: string[] = [];
        let evidence: string[] = [];
        for (const client of clients.values()) {
          const now = traceRequest(mesh, { from: client, url: `http://${host}/` });
          const first = now.hops[0];
          if (!first || first.kind !== 'sidecar' || first.virtualService === `${vs.namespace}/${vs.name}`)
            continue;
          skipped.push(client);
          if (evidence.length > 0) continue;
          legacyMesh ??= compileMesh(context.snapshot, {
            istioVersion: legacy,
            clusterDomain: mesh.clusterDomain,
          });
          const before = traceRequest(legacyMesh, { from: client, url: `http://${host}/` });
          evidence = [
            `GET http://${host}/ from ${client}, Istio ${mesh.version.major}.${mesh.version.minor}: ${hopsText(now.hops)} → ${now.response.code}`,
            `the same at Istio 1.20: ${hopsText(before.hops)} → ${before.response.code}`,
          ];
        }
        if (skipped.length === 0) continue;
        findings.push(
          findingOf(
            passthroughForMeshClients,
            context,
            vs.source,
            ['spec', 'gateways'],
            `VirtualService ${vs.namespace}/${vs.name} routes ${host} only at gateways (${vs.gateways.join(', ')}): callers with a sidecar in ${skipped.length} namespace(s) (${skipped.join(', ')}) don't get its route`,
            {
              fix: `add "mesh" to spec.gateways (and to the gateways of the matches for ${host}), as KServe does since 0.14; kfmesh render does it for InferenceServices`,
              patch: bindToMesh(vs.source, host),
              evidence,
            },
          ),
        );
      }
    }
    return findings;
  },
};

/**
 * KFM102: a VirtualService for a Service of the cluster that is bound only to gateways, with no mesh-bound
 * route for that host. Sidecar clients calling the Service get its default route: the VirtualService's
 * rewrites, headers, timeouts and splits apply only to traffic through the gateways.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { bindToMesh } from '../patches.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { writtenAsVirtualService } from '../../mesh/virtual-services.ts';

export const internalHostNotBoundToMesh: Rule = {
  code: 'KFM102',
  name: 'internal-host-not-bound-to-mesh',
  severity: Severity.Warning,
  description:
    'a VirtualService for a cluster Service is bound only to gateways: in-mesh callers get the default route, without its rules',
  reads: [GroupKind.VirtualService, GroupKind.Ingress, GroupKind.HTTPRoute],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const meshHosts = new Set(
      mesh.virtualServices.filter((v) => v.gateways.includes('mesh')).flatMap((v) => v.hosts),
    );
    const findings: Finding[] = [];
    for (const vs of mesh.virtualServices) {
      if (!writtenAsVirtualService(vs) || vs.gateways.includes('mesh')) continue;
      vs.hosts.forEach((host) => {
        const service = mesh.serviceByHostname.get(host);
        // ExternalName hosts are KFM101's (found by tracing); a ServiceEntry's host is not a Service's.
        if (!service || service.type === 'ExternalName' || service.type === 'ServiceEntry') return;
        if (meshHosts.has(host)) return;
        findings.push(
          findingOf(
            internalHostNotBoundToMesh,
            context,
            vs.source,
            ['spec', 'gateways'],
            `routes ${host} (Service ${service.namespace}/${service.name}) only at gateways (${vs.gateways.join(', ')}): sidecar clients calling it directly get its default route, without this VirtualService's rules`,
            {
              fix: 'add "mesh" to spec.gateways if in-mesh callers should get the same routing',
              patch: bindToMesh(vs.source, host),
            },
          ),
        );
      });
    }
    return findings;
  },
};

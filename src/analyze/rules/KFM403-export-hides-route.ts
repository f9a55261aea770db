/**
 * KFM403: a VirtualService bound to a gateway whose `exportTo` does not include the namespace of that
 * gateway's pods: the gateway never sees it, so its routes are not served there.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { isExportedTo } from '../../mesh/services.ts';
import { appendTo } from '../patches.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { writtenAsVirtualService } from '../../mesh/virtual-services.ts';

export const exportHidesRoute: Rule = {
  code: 'KFM403',
  name: 'export-hides-route',
  severity: Severity.Error,
  description: "a VirtualService's exportTo hides it from the pods of a gateway it is bound to",
  reads: [GroupKind.VirtualService, GroupKind.Ingress, GroupKind.HTTPRoute],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const podNamespaces = new Map<string, Set<string>>();
    for (const proxy of mesh.gateways.values())
      for (const server of proxy.servers) {
        const set = podNamespaces.get(server.gateway) ?? new Set<string>();
        podNamespaces.set(server.gateway, set.add(proxy.workload.namespace));
      }
    const findings: Finding[] = [];
    for (const vs of mesh.virtualServices) {
      if (!writtenAsVirtualService(vs)) continue;
      for (const gateway of vs.gateways) {
        if (gateway === 'mesh') continue;
        const hidden = [...(podNamespaces.get(gateway) ?? [])].filter(
          (ns) => !isExportedTo(vs.exportTo, vs.namespace, ns),
        );
        if (hidden.length === 0) continue;
        findings.push(
          findingOf(
            exportHidesRoute,
            context,
            vs.source,
            ['spec', 'exportTo'],
            `bound to gateway ${gateway}, whose pods run in ${hidden.sort().join(', ')}, but exported only to ${vs.exportTo.join(', ')}: the gateway never sees these routes`,
            {
              fix: `add ${hidden.sort().join(', ')} to spec.exportTo (or use "*")`,
              patch: appendTo(vs.source, ['spec', 'exportTo'], hidden.sort(), vs.exportTo),
            },
          ),
        );
      }
    }
    return findings;
  },
};

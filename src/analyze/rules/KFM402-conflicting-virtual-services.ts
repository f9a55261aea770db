/**
 * KFM402: several mesh-bound VirtualServices for one host. Sidecars don't merge them: the oldest (creation
 * time, then name, then namespace) makes the virtual host and the others are ignored for that host.
 */
import { addTo } from '../../model/multimap.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { sortVirtualServices, type ResolvedVirtualService } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const conflictingVirtualServices: Rule = {
  code: 'KFM402',
  name: 'conflicting-virtual-services',
  severity: Severity.Warning,
  description:
    'several mesh-bound VirtualServices for one host: sidecars take the oldest and ignore the others',
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const byHost = new Map<string, ResolvedVirtualService[]>();
    for (const vs of mesh.virtualServices) {
      if (vs.gatewaySemantics || !vs.gateways.includes('mesh')) continue;
      for (const host of vs.hosts) addTo(byHost, host, vs);
    }
    const findings: Finding[] = [];
    for (const [host, list] of [...byHost].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (list.length < 2) continue;
      const [winner, ...ignored] = sortVirtualServices([...list]);
      if (!winner) continue;
      for (const vs of ignored)
        findings.push(
          findingOf(
            conflictingVirtualServices,
            context,
            vs.source,
            ['spec', 'hosts'],
            `${host} is also claimed by VirtualService ${winner.namespace}/${winner.name}, which is older: sidecars use that one for ${host} and ignore this one`,
            {
              fix: `merge the routes into ${winner.namespace}/${winner.name}, or give each VirtualService its own hosts`,
            },
          ),
        );
    }
    return findings;
  },
};

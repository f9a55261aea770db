/**
 * KFM408: a VirtualService bound to gateways routes to a host without a subset, while another
 * VirtualService of that host splits its traffic into subsets (docs/semantics.md, Route destinations).
 * Routes do not chain: the gateway sends to the host's pods directly, so the split (a canary, a pinned
 * model version) does not apply to requests that come through the gateway.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { specOf } from '../../model/specs.ts';
import type { Finding } from '../../model/finding.ts';
import {
  resolveShortName,
  writtenAsVirtualService,
  type ResolvedVirtualService,
} from '../../mesh/virtual-services.ts';
import { addTo } from '../../model/multimap.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const gatewayRouteSkipsSubsets: Rule = {
  code: 'KFM408',
  name: 'gateway-route-skips-subsets',
  severity: Severity.Warning,
  description:
    "a gateway's route to a host without a subset, where another VirtualService splits that host into subsets: the split does not apply to traffic through the gateway",
  reads: [GroupKind.VirtualService],
  istio: [{ analyzer: 'virtualservice.DestinationHostAnalyzer', code: 'IST0140' }],
  check(context: AnalyzeContext): Finding[] {
    const written = context.mesh().virtualServices.filter(writtenAsVirtualService);
    // The VirtualServices that send a host of their own to subsets of it, by host.
    const splitting = new Map<string, ResolvedVirtualService[]>();
    for (const vs of written)
      for (const rule of vs.http)
        for (const d of rule.route ?? []) {
          const host = resolved(context, vs, d.destination.host);
          if (d.destination.subset && vs.hosts.includes(host) && !splitting.get(host)?.includes(vs))
            addTo(splitting, host, vs);
        }
    const findings: Finding[] = [];
    for (const vs of written) {
      if (specOf(vs.source, 'networking.istio.io/VirtualService').gateways === undefined) continue;
      vs.http.forEach((rule, r) =>
        (rule.route ?? []).forEach((d, i) => {
          if (d.destination.subset) return;
          const host = resolved(context, vs, d.destination.host);
          const others = splitting.get(host)?.filter((o) => o !== vs) ?? [];
          if (others.length === 0) return;
          findings.push(
            findingOf(
              gatewayRouteSkipsSubsets,
              context,
              vs.source,
              ['spec', 'http', r, 'route', i, 'destination', 'host'],
              `routes to ${host} without a subset, while VirtualService ${others.map((o) => `${o.namespace}/${o.name}`).join(', ')} splits ${host} into subsets: routes do not chain, so that split does not apply to this route's requests`,
              { fix: `route to the subsets here too, as ${others[0]?.namespace}/${others[0]?.name} does` },
            ),
          );
        }),
      );
    }
    return findings;
  },
};

function resolved(context: AnalyzeContext, vs: ResolvedVirtualService, host: string): string {
  return resolveShortName(host, vs.namespace, context.mesh().clusterDomain);
}

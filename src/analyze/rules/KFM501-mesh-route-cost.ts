/**
 * KFM501: what mesh-bound VirtualServices cost across the mesh. Every sidecar whose scope takes a
 * VirtualService gets its virtual hosts and routes in its configuration, whether or not its workload ever
 * calls those hosts. Reported per namespace when its mesh routes reach sidecars of other namespaces, with
 * the scoping (`exportTo`, Sidecar egress) that would cut it.
 */
import { addTo } from '../../model/multimap.ts';
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { sidecarScopeOf } from '../../mesh/sidecar-outbound.ts';
import type { ResolvedVirtualService } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const meshRouteCost: Rule = {
  code: 'KFM501',
  name: 'mesh-route-cost',
  severity: Severity.Info,
  description:
    "a namespace's mesh-bound VirtualServices are in the configuration of sidecars in other namespaces: virtual hosts and routes each of them receives",
  reads: [GroupKind.VirtualService, GroupKind.Ingress, GroupKind.HTTPRoute],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const reach = new Map<ResolvedVirtualService, { sidecars: number; namespaces: Set<string> }>();
    for (const w of mesh.workloads) {
      if (w.proxy !== 'sidecar') continue;
      for (const vs of sidecarScopeOf(mesh, w).virtualServices) {
        if (!vs.gateways.includes('mesh') || vs.gatewaySemantics) continue;
        const r = reach.get(vs) ?? { sidecars: 0, namespaces: new Set<string>() };
        r.sidecars++;
        r.namespaces.add(w.namespace);
        reach.set(vs, r);
      }
    }
    const byNamespace = new Map<string, ResolvedVirtualService[]>();
    for (const vs of reach.keys()) addTo(byNamespace, vs.namespace, vs);
    const findings: Finding[] = [];
    for (const [ns, list] of [...byNamespace].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const others = new Set<string>();
      let sidecars = 0;
      for (const vs of list) {
        const r = reach.get(vs);
        if (!r) continue;
        sidecars = Math.max(sidecars, r.sidecars);
        for (const n of r.namespaces) if (n !== ns) others.add(n);
      }
      if (others.size === 0) continue;
      const hosts = list.reduce((n, vs) => n + vs.hosts.length, 0);
      const routes = list.reduce((n, vs) => n + vs.http.length, 0);
      const first = [...list].sort((a, b) => (a.name < b.name ? -1 : 1))[0];
      if (!first) continue;
      findings.push(
        findingOf(
          meshRouteCost,
          context,
          first.source,
          ['spec', 'exportTo'],
          `the ${list.length} mesh-bound VirtualService(s) of namespace ${ns} (${hosts} hosts, ${routes} routes) are in the configuration of up to ${sidecars} sidecars in ${others.size + 1} namespaces (${[...others].sort().slice(0, 5).join(', ')}${others.size > 5 ? ', …' : ''} besides ${ns})`,
          {
            fix: `export them only where they are called (spec.exportTo: [".", <the calling namespaces>]), or give the other namespaces a Sidecar whose egress hosts leave ${ns} out`,
          },
        ),
      );
    }
    return findings;
  },
};

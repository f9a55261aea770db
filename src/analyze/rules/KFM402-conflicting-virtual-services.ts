/**
 * KFM402: mesh-bound VirtualServices that the sidecars of one namespace see together and that claim the
 * same host (docs/semantics.md, VirtualService conflicts). Sidecars don't merge them: the oldest (creation
 * time, then name, then namespace) makes the virtual host and the others are ignored for that host. Also
 * a VirtualService exported to some namespaces whose host overlaps a wildcard host of one exported to all:
 * in those namespaces the two split the host between them by specificity. Two VirtualServices exported to
 * namespaces that share no sidecar (disjoint `exportTo`) do not conflict. A namespace an `exportTo` names
 * counts whether or not the input has it: its sidecars will see both once it is created.
 */
import { addTo } from '../../model/multimap.ts';
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import { isExportedTo } from '../../mesh/services.ts';
import { intersectHosts } from '../../mesh/gateways.ts';
import { sortVirtualServices, type ResolvedVirtualService } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const conflictingVirtualServices: Rule = {
  code: 'KFM402',
  name: 'conflicting-virtual-services',
  severity: Severity.Warning,
  description:
    'mesh-bound VirtualServices that one namespace sees together claim one host: sidecars take the oldest and ignore the others',
  reads: [GroupKind.VirtualService],
  istio: [{ analyzer: 'virtualservice.ConflictingMeshGatewayHostsAnalyzer', code: 'IST0109' }],
  check(context: AnalyzeContext): Finding[] {
    const meshBound = context
      .mesh()
      .virtualServices.filter((vs) => !vs.gatewaySemantics && vs.gateways.includes('mesh'));
    // A namespace an exportTo names is one the VirtualService is meant for, whether the input has it yet.
    const known = new Set([
      ...context.snapshot.namespaces(),
      ...meshBound.flatMap((vs) => vs.exportTo.filter((ns) => ns !== '*' && ns !== '.' && ns !== '~')),
    ]);
    // The namespaces whose sidecars see a VirtualService, or `all`.
    const scopes = new Map(meshBound.map((vs) => [vs, scopeOf(vs, known)]));
    const together = (a: ResolvedVirtualService, b: ResolvedVirtualService) => {
      const sa = scopes.get(a) ?? [];
      const sb = scopes.get(b) ?? [];
      if (sa === 'all') return sb === 'all' || sb.length > 0;
      if (sb === 'all') return sa.length > 0;
      return sa.some((ns) => sb.includes(ns));
    };
    const conflicts = new Map<ResolvedVirtualService, { host: string; with: ResolvedVirtualService[] }>();
    const note = (vs: ResolvedVirtualService, host: string, others: ResolvedVirtualService[]) => {
      const entry = conflicts.get(vs) ?? { host, with: [] };
      for (const o of others) if (o !== vs && !entry.with.includes(o)) entry.with.push(o);
      conflicts.set(vs, entry);
    };
    // The same host.
    const byHost = new Map<string, ResolvedVirtualService[]>();
    for (const vs of meshBound) for (const host of new Set(vs.hosts)) addTo(byHost, host, vs);
    for (const [host, list] of byHost)
      for (const vs of list) {
        const others = list.filter((o) => o !== vs && together(vs, o));
        if (others.length > 0) note(vs, host, others);
      }
    // A host of a VirtualService exported to some namespaces that overlaps, as a wildcard or inside one,
    // a host of a VirtualService exported to all.
    const publicHosts = meshBound
      .filter((vs) => scopes.get(vs) === 'all')
      .flatMap((vs) => vs.hosts.map((host) => ({ vs, host })));
    const publicWildcards = publicHosts.filter((p) => p.host.startsWith('*'));
    for (const vs of meshBound) {
      if (scopes.get(vs) === 'all' || (scopes.get(vs) ?? []).length === 0) continue;
      for (const host of vs.hosts)
        for (const wide of host.startsWith('*') ? publicHosts : publicWildcards) {
          if (wide.vs === vs || wide.host === host || !intersectHosts(wide.host, host)) continue;
          note(vs, host, [wide.vs]);
          note(wide.vs, wide.host, [vs]);
        }
    }
    return [...conflicts].map(([vs, { host, with: others }]) => findingFor(context, vs, host, others));
  },
};

/** `all`, or the known namespaces whose sidecars see the VirtualService. */
function scopeOf(vs: ResolvedVirtualService, known: ReadonlySet<string>): 'all' | string[] {
  if (vs.exportTo.includes('*')) return 'all';
  return [...known].filter((ns) => isExportedTo(vs.exportTo, vs.namespace, ns));
}

function findingFor(
  context: AnalyzeContext,
  vs: ResolvedVirtualService,
  host: string,
  others: ResolvedVirtualService[],
): Finding {
  const [winner] = sortVirtualServices([vs, ...others]);
  const names = sortVirtualServices([...others])
    .map((o) => `${o.namespace}/${o.name}`)
    .join(', ');
  const same = others.some((o) => o.hosts.includes(host));
  // Resolved hosts keep the order of spec.hosts.
  const index = vs.hosts.indexOf(host);
  const message = same
    ? winner === vs
      ? `${host} is also claimed by VirtualService ${names}, seen by the same sidecars: this one is the oldest, so sidecars use it for ${host} and ignore the others`
      : `${host} is also claimed by VirtualService ${names}, seen by the same sidecars: sidecars use the oldest (${winner?.namespace}/${winner?.name}) for ${host} and ignore the others`
    : `${host} overlaps a host of VirtualService ${names} where the same sidecars see both: those sidecars split requests between the two by host specificity`;
  return findingOf(
    conflictingVirtualServices,
    context,
    vs.source,
    index >= 0 ? ['spec', 'hosts', index] : ['spec', 'hosts'],
    message,
    {
      fix: `merge the routes into one VirtualService, give each its own hosts, or export them to different namespaces`,
    },
  );
}

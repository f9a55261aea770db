/** KFM203: a waypoint no Service or namespace uses: it runs, costs, and enforces nothing. */
import { GatewayClass, GroupKind } from '../../model/vocabulary.ts';
import { gatewayClassOf } from '../../model/specs.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { Label } from '../../model/vocabulary.ts';

export const unusedWaypoint: Rule = {
  code: 'KFM203',
  name: 'unused-waypoint',
  severity: Severity.Warning,
  description: 'a waypoint no Service or namespace uses (istio.io/use-waypoint): it enforces nothing',
  reads: [GroupKind.Gateway],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const used = new Set<string>();
    const note = (labels: Record<string, string> | undefined, ownNamespace: string) => {
      const name = labels?.[Label.UseWaypoint];
      if (name && name !== 'none')
        used.add(`${labels?.[Label.UseWaypointNamespace] ?? ownNamespace}/${name}`);
    };
    for (const ns of snapshot.list(GroupKind.Namespace)) note(ns.metadata.labels, ns.metadata.name ?? '');
    for (const s of snapshot.list(GroupKind.Service))
      note(s.metadata.labels, s.metadata.namespace ?? 'default');
    const findings: Finding[] = [];
    for (const gateway of snapshot.list(GroupKind.Gateway)) {
      if (gatewayClassOf(gateway) !== GatewayClass.Waypoint) continue;
      const key = `${gateway.metadata.namespace ?? 'default'}/${gateway.metadata.name}`;
      if (used.has(key)) continue;
      findings.push(
        findingOf(
          unusedWaypoint,
          context,
          gateway,
          ['metadata', 'name'],
          `waypoint ${key} is used by no Service or namespace`,
          {
            fix: `label the Services (or the namespace) that need L7 with istio.io/use-waypoint: ${gateway.metadata.name}, or delete the waypoint`,
          },
        ),
      );
    }
    return findings;
  },
};

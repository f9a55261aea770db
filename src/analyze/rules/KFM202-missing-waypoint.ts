/**
 * KFM202: a reference to a waypoint that isn't there: `istio.io/use-waypoint` on a Service or namespace
 * naming no waypoint Gateway (its traffic then skips L7 policy and routing without a word), or a policy's
 * `targetRefs` naming a Gateway or Service that does not exist (the policy applies nowhere).
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { targetRefsOf } from '../../mesh/authorization.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { GatewayClass, GroupKind, Label } from '../../model/vocabulary.ts';
import { gatewayClassOf, specOf } from '../../model/specs.ts';

export const missingWaypoint: Rule = {
  code: 'KFM202',
  name: 'missing-waypoint',
  severity: Severity.Error,
  description:
    'istio.io/use-waypoint names no waypoint, or a policy targets a Gateway or Service that does not exist: its L7 policy applies nowhere',
  reads: [
    GroupKind.Namespace,
    GroupKind.Service,
    GroupKind.AuthorizationPolicy,
    GroupKind.RequestAuthentication,
  ],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const findings: Finding[] = [];
    const gateway = (ns: string, name: string) => snapshot.get(GroupKind.Gateway, ns, name);
    const label = (object: KubeObject, ownNamespace: string) => {
      const name = object.metadata.labels?.[Label.UseWaypoint];
      if (!name || name === 'none') return;
      const ns = object.metadata.labels?.[Label.UseWaypointNamespace] ?? ownNamespace;
      const found = gateway(ns, name);
      const isWaypoint = gatewayClassOf(found) === GatewayClass.Waypoint;
      if (isWaypoint) return;
      findings.push(
        findingOf(
          missingWaypoint,
          context,
          object,
          ['metadata', 'labels', Label.UseWaypoint],
          found
            ? `istio.io/use-waypoint names Gateway ${ns}/${name}, which is not of class istio-waypoint`
            : `istio.io/use-waypoint names waypoint ${ns}/${name}, which does not exist: traffic goes without L7 policy or routing`,
          {
            fix: `create the waypoint (a Gateway of class istio-waypoint named ${name} in ${ns}) or correct the label`,
          },
        ),
      );
    };
    for (const ns of snapshot.list(GroupKind.Namespace)) label(ns, ns.metadata.name ?? '');
    for (const service of snapshot.list(GroupKind.Service))
      label(service, service.metadata.namespace ?? 'default');
    for (const kind of [GroupKind.AuthorizationPolicy, GroupKind.RequestAuthentication] as const)
      for (const policy of snapshot.list(kind)) {
        const ns = policy.metadata.namespace ?? 'default';
        targetRefsOf(policy).forEach((ref, i) => {
          const exists =
            ref.kind === 'Gateway'
              ? gateway(ns, ref.name ?? '') !== undefined
              : ref.kind === 'Service'
                ? snapshot.get(GroupKind.Service, ns, ref.name ?? '') !== undefined
                : true;
          if (exists) return;
          const field =
            specOf(policy, kind).targetRefs !== undefined ? ['spec', 'targetRefs', i] : ['spec', 'targetRef'];
          findings.push(
            findingOf(
              missingWaypoint,
              context,
              policy,
              field,
              `targets ${ref.kind} ${ns}/${ref.name}, which does not exist (targetRefs reach only the policy's own namespace): the policy applies nowhere`,
              {
                fix: `create ${ref.kind} ${ns}/${ref.name}, or point the targetRef at the waypoint or Service that should enforce it`,
              },
            ),
          );
        });
      }
    return findings;
  },
};

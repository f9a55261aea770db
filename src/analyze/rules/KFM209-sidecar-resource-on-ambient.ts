/**
 * KFM209: a Sidecar resource for an ambient namespace, or one whose selector picks ambient pods
 * (docs/semantics.md, Ambient enrollment and waypoints). Ambient pods have no sidecar to configure: the
 * resource has no effect, and whatever egress scoping or outbound policy it meant to set is not in force.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { ProxyKind } from '../../mesh/workloads.ts';
import { namespaceIsAmbient } from '../../model/sidecar.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const sidecarResourceOnAmbient: Rule = {
  code: 'KFM209',
  name: 'sidecar-resource-on-ambient',
  severity: Severity.Warning,
  description: 'a Sidecar resource for an ambient namespace or ambient pods: it has no effect there',
  reads: [GroupKind.Sidecar],
  istio: [{ analyzer: 'sidecar.SelectorAnalyzer', code: 'IST0167' }],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const workloads = context.mesh().workloads;
    return snapshot.list(GroupKind.Sidecar).flatMap((sidecar) => {
      const ns = sidecar.metadata.namespace ?? 'default';
      const selector = specOf(sidecar, 'networking.istio.io/Sidecar').workloadSelector?.labels ?? {};
      const scoped = Object.keys(selector).length > 0;
      const why = scoped
        ? workloads.some(
            (w) => w.namespace === ns && w.proxy === ProxyKind.Ambient && labelsMatch(w.labels, selector),
          )
          ? `selects ambient pods of ${ns}`
          : undefined
        : namespaceIsAmbient(snapshot.get(GroupKind.Namespace, '', ns)?.metadata.labels ?? {})
          ? `applies to ${ns}, which is ambient`
          : undefined;
      if (!why) return [];
      return [
        findingOf(
          sidecarResourceOnAmbient,
          context,
          sidecar,
          scoped ? ['spec', 'workloadSelector'] : [],
          `${why}: ambient pods have no sidecar, so this Sidecar has no effect`,
          {
            fix: 'delete it, or scope the ambient workloads another way (waypoint policies, exportTo)',
          },
        ),
      ];
    });
  },
};

/**
 * KFM206: a namespace labelled for ambient mode (`istio.io/dataplane-mode: ambient`) that still turns on
 * sidecar injection (`istio-injection: enabled`, or a revision label) (docs/semantics.md, Sidecars and
 * ambient pods together). The injector still adds sidecars to its new pods, and the CNI leaves pods with
 * sidecars out of ambient: the namespace is not ambient at all. Kubeflow's own `overlays/ambient` patch
 * adds the ambient label to a namespace that keeps `istio-injection: enabled`.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { pointerOf } from '../../model/finding.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { ProxyKind } from '../../mesh/workloads.ts';
import { namespaceIsAmbient } from '../../model/sidecar.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const injectionAndAmbient: Rule = {
  code: 'KFM206',
  name: 'injection-and-ambient',
  severity: Severity.Error,
  description:
    'a namespace labelled for ambient that keeps sidecar injection on: its pods keep their sidecars and stay out of ambient',
  reads: [GroupKind.Namespace],
  istio: [{ analyzer: 'injection.Analyzer', code: 'IST0123' }],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    return context.snapshot.list(GroupKind.Namespace).flatMap((ns) => {
      const labels = ns.metadata.labels ?? {};
      const name = ns.metadata.name ?? '';
      if (labels[Label.DataplaneMode] !== 'ambient' || namespaceIsAmbient(labels)) return [];
      const injection = labels[Label.IstioInjection] === 'enabled';
      const kept = [
        ...new Set(
          mesh.workloads
            .filter((w) => w.namespace === name && w.proxy === ProxyKind.Sidecar)
            .map((w) => w.name),
        ),
      ];
      const label = injection ? Label.IstioInjection : Label.IstioRev;
      return [
        findingOf(
          injectionAndAmbient,
          context,
          ns,
          ['metadata', 'labels', label],
          `labelled ${Label.DataplaneMode}: ambient and ${label}: ${labels[label]}: the injector still adds sidecars, and ambient leaves pods with sidecars alone${kept.length > 0 ? `; ${kept.length} workload(s) keep theirs (${kept.join(', ')})` : ''}`,
          {
            fix: injection
              ? `set ${Label.IstioInjection}: disabled (or remove it), then restart the namespace's pods so they come back without sidecars`
              : `remove ${Label.IstioRev}, then restart the namespace's pods so they come back without sidecars`,
            ...(injection
              ? {
                  patch: [
                    {
                      op: 'replace' as const,
                      path: pointerOf(['metadata', 'labels', Label.IstioInjection]),
                      value: 'disabled',
                    },
                  ],
                }
              : {}),
          },
        ),
      ];
    });
  },
};

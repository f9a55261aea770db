/**
 * KFM705: a running pod without a sidecar in a namespace with `istio-injection: enabled`, that did not opt
 * out (docs/semantics.md, Sidecar injection). It started before the namespace was labelled (or while the
 * injector was down): it is outside the mesh until it restarts, and STRICT mTLS or policies naming
 * identities refuse its calls. Host-network pods are never injected and are left alone.
 */
import { runsProxy } from '../../model/sidecar.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const podMissingProxy: Rule = {
  code: 'KFM705',
  name: 'pod-missing-proxy',
  severity: Severity.Warning,
  description:
    'a running pod without a sidecar in a namespace labelled for injection: it is outside the mesh until it restarts',
  reads: [GroupKind.Pod],
  istio: [{ analyzer: 'injection.Analyzer', code: 'IST0103' }],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    return snapshot.list(GroupKind.Pod).flatMap((pod) => {
      const ns = pod.metadata.namespace ?? 'default';
      const nsLabels = snapshot.get(GroupKind.Namespace, '', ns)?.metadata.labels ?? {};
      if (nsLabels[Label.IstioInjection] !== 'enabled') return [];
      const says =
        pod.metadata.labels?.[Label.SidecarInject] ?? pod.metadata.annotations?.[Label.SidecarInject];
      if (says?.toLowerCase() === 'false') return [];
      const spec = specOf(pod, '/Pod');
      if (spec['hostNetwork'] === true) return [];
      if (runsProxy(spec)) return [];
      return [
        findingOf(
          podMissingProxy,
          context,
          pod,
          ['spec', 'containers'],
          `runs without a sidecar although ${ns} is labelled ${Label.IstioInjection}: enabled: it started before the label (or the injector); it is outside the mesh until restarted`,
          {
            fix: `restart it (kubectl -n ${ns} delete pod ${pod.metadata.name ?? ''}, or a rollout restart of its workload)`,
          },
        ),
      ];
    });
  },
};

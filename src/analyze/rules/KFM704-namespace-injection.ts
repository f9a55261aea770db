/**
 * KFM704: how a namespace's labels set sidecar injection, where that is worth knowing (docs/semantics.md,
 * Sidecar injection): a namespace with no injection label at all is outside the sidecar mesh (or, where
 * the injector's values say `enableNamespacesByDefault`, injected without saying so); one labelled both
 * `istio-injection: enabled` and `istio.io/rev` is injected by the default revision and not the one named.
 * Ambient namespaces, Istio's own and Kubernetes' are left out; a namespace labelled for ambient that keeps
 * injection on is KFM206's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding, IstioCounterpart } from '../../model/finding.ts';
import { isPlainObject, type KubeObject } from '../../model/object.ts';
import { dataOf } from '../../model/specs.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import type { Snapshot } from '../../load/snapshot.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { isSystemNamespace } from '../evidence.ts';

const analyzer = 'injection.Analyzer';
const notInjected: IstioCounterpart = { analyzer, code: 'IST0102' };
const injectedByDefault: IstioCounterpart = { analyzer, code: 'IST0148' };
const multipleInjectionLabels: IstioCounterpart = { analyzer, code: 'IST0123' };

export const namespaceInjection: Rule = {
  code: 'KFM704',
  name: 'namespace-injection',
  severity: Severity.Info,
  description:
    'a namespace without injection labels (outside the sidecar mesh, or injected by the injector’s default), or with istio-injection and istio.io/rev both',
  reads: [GroupKind.Namespace],
  istio: [notInjected, injectedByDefault, multipleInjectionLabels],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const root = context.mesh().config.rootNamespace;
    return snapshot.list(GroupKind.Namespace).flatMap((ns) => {
      const name = ns.metadata.name ?? '';
      const labels = ns.metadata.labels ?? {};
      if (name === root || isSystemNamespace(name)) return [];
      if (labels[Label.DataplaneMode] !== undefined) return [];
      const injection = labels[Label.IstioInjection];
      const revision = labels[Label.IstioRev];
      if (injection === 'enabled' && revision !== undefined)
        return [
          {
            ...findingOf(
              namespaceInjection,
              context,
              ns,
              ['metadata', 'labels', Label.IstioRev],
              `labelled ${Label.IstioInjection}: enabled and ${Label.IstioRev}: ${revision}: the default revision's injector takes its pods, not ${revision}'s`,
              {
                fix: `keep one: remove ${Label.IstioInjection} to inject with revision ${revision}`,
                istio: multipleInjectionLabels,
              },
            ),
            severity: Severity.Warning,
          },
        ];
      if (injection !== undefined || revision !== undefined) return [];
      const byDefault = namespacesInjectedByDefault(snapshot);
      return [
        findingOf(
          namespaceInjection,
          context,
          ns,
          ['metadata', 'labels'],
          byDefault
            ? `has no injection label, and the injector injects such namespaces (enableNamespacesByDefault): its pods get sidecars`
            : 'has no injection label: its pods run without sidecars, outside the mesh',
          {
            istio: byDefault ? injectedByDefault : notInjected,
            ...(byDefault
              ? {}
              : {
                  fix: `label it ${Label.IstioInjection}: enabled or ${Label.DataplaneMode}: ambient if its pods belong in the mesh`,
                }),
          },
        ),
      ];
    });
  },
};

/** The default injector's `sidecarInjectorWebhook.enableNamespacesByDefault` (ConfigMap istio-sidecar-injector, key values). */
function namespacesInjectedByDefault(snapshot: Snapshot): boolean {
  const injector: KubeObject | undefined = snapshot
    .list(GroupKind.ConfigMap)
    .find((c) => c.metadata.name === 'istio-sidecar-injector');
  const text = injector ? dataOf(injector)['values'] : undefined;
  if (!text) return false;
  try {
    const values: unknown = JSON.parse(text);
    const webhook = isPlainObject(values) ? values['sidecarInjectorWebhook'] : undefined;
    return isPlainObject(webhook) && webhook['enableNamespacesByDefault'] === true;
  } catch {
    return false;
  }
}

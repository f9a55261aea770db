/**
 * KFM413: Sidecar resources that select no workload, that select a workload together with another, or
 * that share a namespace without selectors (docs/semantics.md, Sidecar outbound). A Sidecar whose selector
 * matches no pod of its namespace scopes nothing; where several apply to one workload (or several
 * namespace-wide ones to one namespace) istiod uses one of them, chosen by age, and the others silently do
 * nothing. Sidecars in ambient namespaces and on ambient pods are KFM209's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding, IstioCounterpart } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { addTo } from '../../model/multimap.ts';
import { ProxyKind, type Workload } from '../../mesh/workloads.ts';
import { namespaceIsAmbient } from '../../model/sidecar.ts';
import { selectorText } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'sidecar.SelectorAnalyzer';
const notFound: IstioCounterpart = { analyzer, code: 'IST0101' };
const conflicting: IstioCounterpart = { analyzer, code: 'IST0110' };
const severalDefaults: IstioCounterpart = { analyzer, code: 'IST0111' };

export const sidecarResourceScope: Rule = {
  code: 'KFM413',
  name: 'sidecar-resource-scope',
  severity: Severity.Warning,
  description:
    'a Sidecar resource that selects no workload, or one of several that apply to the same workload or namespace: all but one do nothing',
  reads: [GroupKind.Sidecar],
  istio: [notFound, conflicting, severalDefaults],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const byNamespace = new Map<string, Workload[]>();
    for (const w of context.mesh().workloads) addTo(byNamespace, w.namespace, w);
    const findings: Finding[] = [];
    const bySelected = new Map<Workload, KubeObject[]>();
    const defaults = new Map<string, KubeObject[]>();
    for (const sidecar of snapshot.list(GroupKind.Sidecar)) {
      const ns = sidecar.metadata.namespace ?? 'default';
      const selector = specOf(sidecar, 'networking.istio.io/Sidecar').workloadSelector?.labels ?? {};
      if (Object.keys(selector).length === 0) {
        addTo(defaults, ns, sidecar);
        continue;
      }
      const selected = (byNamespace.get(ns) ?? []).filter((w) => labelsMatch(w.labels, selector));
      for (const w of selected) addTo(bySelected, w, sidecar);
      if (selected.length === 0)
        findings.push(
          findingOf(
            sidecarResourceScope,
            context,
            sidecar,
            ['spec', 'workloadSelector'],
            `selects ${selectorText(selector)}, which no workload of ${ns} carries: this Sidecar scopes nothing`,
            {
              fix: 'correct the selector to the labels of the workload it is meant for',
              istio: notFound,
            },
          ),
        );
    }
    const reported = new Set<KubeObject>();
    for (const [workload, sidecars] of bySelected) {
      if (sidecars.length < 2 || workload.proxy === ProxyKind.Ambient) continue;
      for (const sidecar of sidecars) {
        if (reported.has(sidecar)) continue;
        reported.add(sidecar);
        findings.push(
          findingOf(
            sidecarResourceScope,
            context,
            sidecar,
            ['spec', 'workloadSelector'],
            `selects ${workload.namespace}/${workload.name} together with Sidecar ${names(sidecars, sidecar)}: istiod uses one of them for it, the others do nothing there`,
            {
              fix: 'give each workload one Sidecar: make the selectors disjoint, or merge the Sidecars',
              istio: conflicting,
            },
          ),
        );
      }
    }
    for (const [ns, sidecars] of defaults) {
      const labels = snapshot.get(GroupKind.Namespace, '', ns)?.metadata.labels ?? {};
      if (sidecars.length < 2 || namespaceIsAmbient(labels)) continue;
      for (const sidecar of sidecars)
        findings.push(
          findingOf(
            sidecarResourceScope,
            context,
            sidecar,
            [],
            `is one of several Sidecars without a selector in ${ns} (${names(sidecars, sidecar)}): istiod uses one of them for the namespace, the others do nothing`,
            {
              fix: 'keep one Sidecar without a selector per namespace',
              istio: severalDefaults,
            },
          ),
        );
    }
    return findings;
  },
};

function names(sidecars: readonly KubeObject[], except: KubeObject): string {
  return sidecars
    .filter((s) => s !== except)
    .map((s) => `${s.metadata.namespace ?? 'default'}/${s.metadata.name ?? ''}`)
    .join(', ');
}

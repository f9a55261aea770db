/**
 * KFM214: a RequestAuthentication or WasmPlugin that selects ambient pods (by label, or all of its
 * namespace's without a selector) rather than naming a waypoint or Service in `targetRefs` (docs/semantics.md,
 * ztunnel). ztunnel validates no tokens and runs no Wasm: for those pods the resource does nothing; only a
 * waypoint, by `targetRefs`, applies it. Policies of the root namespace (mesh-wide) are left alone, as they
 * are mostly meant for gateways and sidecars.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, type SelectingPolicySpec } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const kinds = [
  [GroupKind.RequestAuthentication, 'validates no tokens'],
  [GroupKind.WasmPlugin, 'runs no Wasm'],
] as const;

export const l7ResourceOnAmbientPods: Rule = {
  code: 'KFM214',
  name: 'l7-resource-on-ambient-pods',
  severity: Severity.Warning,
  description:
    'a RequestAuthentication or WasmPlugin that selects ambient pods instead of naming a waypoint in targetRefs: ztunnel does not apply it, so it does nothing for them',
  reads: [GroupKind.RequestAuthentication, GroupKind.WasmPlugin],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const ambient = mesh.workloads.filter((w) => w.proxy === 'ambient');
    if (ambient.length === 0) return [];
    return kinds.flatMap(([kind, lacks]) =>
      context.snapshot.list(kind).flatMap((resource) => {
        const ns = resource.metadata.namespace ?? 'default';
        const spec: SelectingPolicySpec = specOf(resource, kind);
        if (
          ns === mesh.config.rootNamespace ||
          spec.targetRef !== undefined ||
          (spec.targetRefs?.length ?? 0) > 0
        )
          return [];
        const selector = spec.selector?.matchLabels ?? {};
        const selected = ambient.filter((w) => w.namespace === ns && labelsMatch(w.labels, selector));
        if (selected.length === 0) return [];
        const names = selected.map((w) => `${w.namespace}/${w.name}`);
        return [
          findingOf(
            l7ResourceOnAmbientPods,
            context,
            resource,
            spec.selector ? ['spec', 'selector'] : ['spec'],
            `applies to ambient pods (${names.slice(0, 3).join(', ')}${names.length > 3 ? `, and ${names.length - 3} more` : ''}), whose traffic only ztunnel handles, and ztunnel ${lacks}: it does nothing for them`,
            {
              fix: 'name the waypoint that serves these pods (or their Service) in targetRefs, and give them one with istio.io/use-waypoint if they have none',
              evidence: selected
                .slice(0, 3)
                .map((w) => `${w.namespace}/${w.name}: data plane ambient (ztunnel; no sidecar)`),
            },
          ),
        ];
      }),
    );
  },
};

/**
 * KFM424: an EnvoyFilter (docs/semantics.md, EnvoyFilters). It patches the configuration istiod generates
 * for Envoy, at the level of Envoy's own API, which kfmesh does not model: traces, `verify` and the
 * migration's proofs are of the configuration without its patches, so they do not hold where it applies.
 * Istio's validation warns about every EnvoyFilter as well (it ties the mesh to internals that change
 * between releases).
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const envoyFilterNotModelled: Rule = {
  code: 'KFM424',
  name: 'envoy-filter-not-modelled',
  severity: Severity.Warning,
  description:
    "an EnvoyFilter: it patches Envoy's configuration below Istio's API, which kfmesh's traces and proofs do not model, and it may break on an Istio upgrade",
  reads: [GroupKind.EnvoyFilter],
  istio: [{ analyzer: 'schemaValidation.CollectionValidationAnalyzer', code: 'IST0133' }],
  check(context: AnalyzeContext): Finding[] {
    return context.snapshot.list(GroupKind.EnvoyFilter).map((filter) => {
      const spec = specOf(filter, 'networking.istio.io/EnvoyFilter');
      const scope =
        spec.workloadSelector || spec.targetRefs?.length
          ? 'the workloads it selects'
          : (filter.metadata.namespace ?? 'default') === context.mesh().config.rootNamespace
            ? 'every proxy of the mesh'
            : `every proxy of namespace ${filter.metadata.namespace ?? 'default'}`;
      return findingOf(
        envoyFilterNotModelled,
        context,
        filter,
        undefined,
        `patches the Envoy configuration of ${scope}: kfmesh's traces, verify and the migration's proofs do not include its patches, and Istio does not keep the internals it relies on stable across releases`,
        {
          fix: 'prefer an Istio API where one does the job (VirtualService, DestinationRule, AuthorizationPolicy, Telemetry, WasmPlugin); keep it only with a test after each Istio upgrade',
        },
      );
    });
  },
};

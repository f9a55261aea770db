/**
 * KFM707: Istio annotations that Istio marks alpha (docs/semantics.md, Istio annotations): they may change
 * or go in a minor release. Those Istio writes itself are left out (the injector's status, the gateway
 * controller's version, the revision), and on a pod redirected by the CNI plugin (no `istio-init`
 * container) the ones istiod sets on every such pod.
 */
import { InitContainer } from '../../model/sidecar.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { isIstioAnnotationKey, istioAnnotation, setByCni, writtenByIstio } from '../../mesh/annotations.ts';
import { annotatedKinds, annotatedMetadata } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const alphaAnnotations: Rule = {
  code: 'KFM707',
  name: 'alpha-annotations',
  severity: Severity.Info,
  description: 'an Istio annotation that Istio marks alpha: it may change or be removed in a minor release',
  reads: annotatedKinds,
  istio: [{ analyzer: 'maturity.AlphaAnalyzer', code: 'IST0136' }],
  check(context: AnalyzeContext): Finding[] {
    return annotatedMetadata(context.snapshot).flatMap((meta) => {
      const cni = meta.kind === 'Pod' && !meta.initContainers.includes(InitContainer);
      return Object.keys(meta.annotations)
        .sort()
        .filter(
          (key) =>
            isIstioAnnotationKey(key) && !writtenByIstio(key) && istioAnnotation(key)?.status === 'Alpha',
        )
        .filter((key) => !(cni && setByCni.has(key)))
        .map((key) =>
          findingOf(
            alphaAnnotations,
            context,
            meta.object,
            [...meta.path, key],
            `${key} is an alpha Istio annotation: it may change or be removed in a minor release`,
            {
              fix: 'keep it if you need it, and check the release notes when upgrading Istio',
              ...(meta.template ? { istio: [] } : {}),
            },
          ),
        );
    });
  },
};

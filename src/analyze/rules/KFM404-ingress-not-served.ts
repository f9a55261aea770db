/**
 * KFM404: a Kubernetes Ingress of istiod's class that istiod does not serve (docs/semantics.md, Kubernetes
 * Ingress). KServe writes one for every RawDeployment model without the Gateway API, with
 * `ingressClassName: istio`; without an IngressClass `istio` naming Istio's controller, istiod's default
 * mode (STRICT) ignores it and the model's host is routed by whatever else the gateway has, or not at all.
 */
import { ModeName } from '../../kserve/config.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { ingressServed } from '../../mesh/kube-ingress.ts';
import { Annotation, GroupKind, IstioIngressController } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const ingressNotServed: Rule = {
  code: 'KFM404',
  name: 'ingress-not-served',
  severity: Severity.Warning,
  description:
    "an Ingress of Istio's class that istiod does not serve (no IngressClass naming its controller)",
  reads: [GroupKind.Ingress],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const className = mesh.config.ingress.className;
    return context.snapshot.list(GroupKind.Ingress).flatMap((ingress) => {
      const spec = specOf(ingress, 'networking.k8s.io/Ingress');
      const annotated = ingress.metadata.annotations?.[Annotation.IngressClass];
      if ((annotated ?? spec.ingressClassName) !== className) return [];
      const { served, why } = ingressServed(context.snapshot, mesh.config, ingress);
      if (served) return [];
      const hosts = (spec.rules ?? []).map((r) => r.host ?? '*');
      return [
        findingOf(
          ingressNotServed,
          context,
          ingress,
          annotated !== undefined
            ? ['metadata', 'annotations', Annotation.IngressClass]
            : ['spec', 'ingressClassName'],
          `names Istio's ingress class ${className}, but istiod does not serve it: ${why}; requests for ${hosts.join(', ') || 'its hosts'} take whatever else the ingress gateways route, or nothing`,
          {
            fix: `create an IngressClass ${className} with spec.controller: ${IstioIngressController} (KServe's ${ModeName.Standard} install does), or set ingressControllerMode: DEFAULT in the mesh config`,
          },
        ),
      ];
    });
  },
};

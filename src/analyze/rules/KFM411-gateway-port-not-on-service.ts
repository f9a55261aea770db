/**
 * KFM411: an Istio Gateway whose selector matches no pod, or whose server port no Service of its pods
 * offers (docs/semantics.md, Gateways). A Gateway without pods configures nothing; a server on a port that
 * the gateway's Services neither expose nor target is unreachable from outside the pod, so its hosts are
 * served nowhere. Ports count as the Services' TCP ports and target ports, as Istio's port translation reads
 * them. An input without any gateway pod (none a Gateway selects, none labelled `istio` as Istio's gateway
 * charts label theirs) does not include the gateways, and is not judged.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { ProxyKind } from '../../mesh/workloads.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { selectorText } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'gateway.IngressGatewayPortAnalyzer';

export const gatewayPortNotOnService: Rule = {
  code: 'KFM411',
  name: 'gateway-port-not-on-service',
  severity: Severity.Error,
  description:
    "an Istio Gateway that selects no pod, or a server port its pods' Services do not offer: those hosts are served nowhere",
  reads: [GroupKind.IstioGateway],
  istio: [
    { analyzer, code: 'IST0101' },
    { analyzer, code: 'IST0162' },
    // istioctl's secret analyzer reports a Gateway without pods too, as its credentials' namespace is unknown.
    { analyzer: 'gateway.SecretAnalyzer', code: 'IST0101' },
  ],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    if (!mesh.workloads.some((w) => w.proxy === ProxyKind.Gateway || w.labels[Label.Istio] !== undefined))
      return [];
    return context.snapshot.list(GroupKind.IstioGateway).flatMap((gateway) => {
      const spec = specOf(gateway, 'networking.istio.io/Gateway');
      const selector = spec.selector ?? {};
      const selected = selectorText(selector);
      const pods = mesh.workloads.filter((w) => labelsMatch(w.labels, selector));
      if (pods.length === 0)
        return [
          findingOf(
            gatewayPortNotOnService,
            context,
            gateway,
            ['spec', 'selector'],
            `selects ${selected || 'every pod'}, which no pod carries: this Gateway configures nothing`,
            {
              fix: 'correct the selector to the labels of the gateway pods (istio: ingressgateway for the default ingress gateway)',
              istio: [
                { analyzer, code: 'IST0101' },
                { analyzer: 'gateway.SecretAnalyzer', code: 'IST0101' },
              ],
            },
          ),
        ];
      const offered = new Set<number>();
      for (const service of mesh.services)
        if (service.selector && Object.keys(service.selector).length > 0)
          for (const pod of pods) {
            if (service.namespace !== pod.namespace || !labelsMatch(pod.labels, service.selector)) continue;
            const written = specOf(service.object, '/Service').ports ?? [];
            for (const port of written) {
              if ((port.protocol ?? 'TCP') !== 'TCP') continue;
              if (port.port !== undefined) offered.add(port.port);
              if (typeof port.targetPort === 'number') offered.add(port.targetPort);
            }
          }
      return (spec.servers ?? []).flatMap((server, i) => {
        const number = server.port?.number;
        if (number === undefined || offered.has(number)) return [];
        return [
          findingOf(
            gatewayPortNotOnService,
            context,
            gateway,
            ['spec', 'servers', i, 'port', 'number'],
            `serves port ${number}, which no Service of its pods (${selected}) exposes or targets: its hosts are served nowhere`,
            {
              fix: `add port ${number} to the gateway's Service, or use one of its ports`,
              istio: { analyzer, code: 'IST0162' },
            },
          ),
        ];
      });
    });
  },
};

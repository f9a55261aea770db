/**
 * KFM701: a Service port whose protocol Istio cannot tell from its name or `appProtocol`
 * (docs/semantics.md, Sidecar outbound: the listener). Istio then sniffs the protocol of each connection,
 * which adds latency to the first bytes and, for server-first protocols (databases), fails; and the port
 * cannot be counted on for HTTP routing or L7 policy. Istio's own control plane (labelled `istio` or
 * `release: istio`) and the Services of gateways Istio deploys are left alone, as istioctl does.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { Protocol, protocolOf } from '../../mesh/services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { isIstioOrSystem } from '../evidence.ts';

export const portProtocolUnknown: Rule = {
  code: 'KFM701',
  name: 'port-protocol-unknown',
  severity: Severity.Info,
  description:
    'a Service port whose protocol its name and appProtocol do not give: Istio sniffs each connection (server-first protocols fail, HTTP routing and L7 policy are not assured)',
  reads: [GroupKind.Service],
  istio: [
    { analyzer: 'service.PortNameAnalyzer', code: 'IST0118' },
    { analyzer: 'service.PortNameAnalyzer', code: 'IST0150' },
  ],
  check(context: AnalyzeContext): Finding[] {
    return context.snapshot.list(GroupKind.Service).flatMap((service) => {
      if (isIstioOrSystem(service) || service.metadata.labels?.[Label.GatewayManaged] !== undefined)
        return [];
      const spec = specOf(service, '/Service');
      return (spec.ports ?? []).flatMap((port, i) => {
        const external = spec.type === 'ExternalName';
        if (protocolOf(port) !== Protocol.Unsupported && !(external && port.name === 'tcp')) return [];
        return [
          findingOf(
            portProtocolUnknown,
            context,
            service,
            ['spec', 'ports', i],
            external
              ? `port ${port.port ?? '?'}${port.name ? ` (${port.name})` : ''} of an ExternalName Service names no protocol Istio can route by name: requests to it are matched by port alone`
              : `port ${port.port ?? '?'}${port.name ? ` (${port.name})` : ''} names no protocol: Istio sniffs each connection to it`,
            {
              istio: { analyzer: 'service.PortNameAnalyzer', code: external ? 'IST0150' : 'IST0118' },
              fix: 'name the port `<protocol>[-<suffix>]` (http, http2, grpc, tcp, tls, https, ...) or set appProtocol',
            },
          ),
        ];
      });
    });
  },
};

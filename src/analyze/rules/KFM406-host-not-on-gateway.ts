/**
 * KFM406: a VirtualService bound to a gateway none of whose servers (Istio Gateway) or listeners (Gateway
 * API Gateway) take any of its hosts, counting a server host's namespace part (docs/semantics.md, Gateway
 * hosts). The gateway has no virtual host for it, so its routes are never served there; a gateway that does
 * not exist serves no host either. Internal gateway names are KFM405's.
 */
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf } from '../../model/specs.ts';
import { intersectHosts, serverHostFor } from '../../mesh/gateways.ts';
import { gatewayBindings } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const hostNotOnGateway: Rule = {
  code: 'KFM406',
  name: 'host-not-on-gateway',
  severity: Severity.Error,
  description:
    'a VirtualService bound to a gateway that serves none of its hosts: its routes are not served there',
  reads: [GroupKind.VirtualService],
  istio: [{ analyzer: 'virtualservice.GatewayAnalyzer', code: 'IST0132' }],
  check(context: AnalyzeContext): Finding[] {
    return gatewayBindings(context).flatMap(({ vs, name, index, gateway, internal }) => {
      if (internal) return [];
      const hosts = gatewayHosts(gateway, vs.namespace);
      if (hosts.some((g) => vs.hosts.some((h) => intersectHosts(g, h)))) return [];
      return [
        findingOf(
          hostNotOnGateway,
          context,
          vs.source,
          ['spec', 'gateways', index],
          hosts.length === 0
            ? `bound to gateway ${name}, which takes no host from namespace ${vs.namespace}: its routes are not served there`
            : `bound to gateway ${name}, which takes ${hosts.join(', ')} and none of ${vs.hosts.join(', ')}: its routes are not served there`,
          {
            fix: `add a host of this VirtualService to the gateway's servers, or bind the VirtualService to the gateway that serves it`,
          },
        ),
      ];
    });
  },
};

/** The hosts a gateway takes from VirtualServices of a namespace (`*` for a listener without hostname). */
function gatewayHosts(gateway: KubeObject | undefined, vsNamespace: string): string[] {
  if (!gateway) return [];
  const ns = gateway.metadata.namespace ?? 'default';
  if (gateway.apiVersion.startsWith('gateway.networking.k8s.io/'))
    return (specOf(gateway, 'gateway.networking.k8s.io/Gateway').listeners ?? []).map(
      (l) => l.hostname || '*',
    );
  return (specOf(gateway, 'networking.istio.io/Gateway').servers ?? []).flatMap((server) =>
    (server.hosts ?? []).flatMap((entry) => serverHostFor(entry, ns, vsNamespace) ?? []),
  );
}

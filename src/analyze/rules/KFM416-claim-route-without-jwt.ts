/**
 * KFM416: a VirtualService that routes on a JWT claim (`@request.auth.claims.*` in a header match) at an
 * Istio gateway whose pods no RequestAuthentication covers (one of the root namespace or the pods'
 * namespace whose selector matches them, or that has none) (docs/semantics.md, Gateways). Without a
 * RequestAuthentication the gateway validates no token and knows no claims: the match never holds, and
 * requests fall through to the next route.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, type VirtualServiceSpec } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { Mesh, writtenAsVirtualService } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const ClaimPrefix = '@request.auth.claims';

export const claimRouteWithoutJwt: Rule = {
  code: 'KFM416',
  name: 'claim-route-without-jwt',
  severity: Severity.Warning,
  description:
    'a route on a JWT claim at a gateway whose pods no RequestAuthentication covers: the claim is never known, the route never taken',
  reads: [GroupKind.VirtualService],
  istio: [{ analyzer: 'virtualservice.JWTClaimRouteAnalyzer', code: 'IST0149' }],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const mesh = context.mesh();
    const root = mesh.config.rootNamespace;
    const authentications = snapshot.list(GroupKind.RequestAuthentication);
    const covered = (namespace: string, labels: Readonly<Record<string, string>>) =>
      authentications.some((ra) => {
        const ns = ra.metadata.namespace ?? 'default';
        if (ns !== root && ns !== namespace) return false;
        const selector = specOf(ra, 'security.istio.io/RequestAuthentication').selector?.matchLabels;
        return selector === undefined || labelsMatch(labels, selector);
      });
    return mesh.virtualServices.filter(writtenAsVirtualService).flatMap((vs) => {
      const claim = claimKey(specOf(vs.source, 'networking.istio.io/VirtualService'));
      if (!claim) return [];
      const uncovered = vs.gateways.flatMap((name) => {
        if (name === Mesh) return [];
        const [ns = '', gatewayName = ''] = name.split('/');
        const gateway = snapshot.get(GroupKind.IstioGateway, ns, gatewayName);
        if (!gateway) return [];
        const selector = specOf(gateway, 'networking.istio.io/Gateway').selector ?? {};
        const pods = mesh.workloads.filter(
          (w) => labelsMatch(w.labels, selector) && !covered(w.namespace, w.labels),
        );
        return pods.length > 0 ? [`${name} (pods of ${pods[0]?.namespace}/${pods[0]?.name})`] : [];
      });
      if (uncovered.length === 0) return [];
      return [
        findingOf(
          claimRouteWithoutJwt,
          context,
          vs.source,
          ['spec', 'http'],
          `routes on ${claim} at gateway ${uncovered.join(', ')}, whose pods no RequestAuthentication covers: the claim is never known there, so the route is never taken`,
          {
            fix: 'add a RequestAuthentication for the gateway pods (in their namespace or the root namespace) with the issuer of the token',
          },
        ),
      ];
    });
  },
};

function claimKey(spec: VirtualServiceSpec): string | undefined {
  for (const rule of spec.http ?? [])
    for (const match of rule.match ?? [])
      for (const key of [...Object.keys(match.headers ?? {}), ...Object.keys(match.withoutHeaders ?? {})])
        if (key.startsWith(ClaimPrefix)) return key;
  return undefined;
}

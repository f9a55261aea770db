/**
 * `kfmesh analyze`: every rule over a snapshot, findings sorted by file position (then code and object),
 * the same for the same input. Rules share one compiled mesh.
 */
import type { Finding, Severity } from '../model/finding.ts';
import { formatLocation } from '../model/errors.ts';
import { compareRefs } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { compileMesh } from '../mesh/mesh.ts';
import type { IstioVersion } from '../mesh/istio-version.ts';
import type { AnalyzeContext, Rule } from './rule.ts';
import type { Selection } from './select.ts';
import { withoutSuppressed, type Suppression } from './suppress.ts';
import { passthroughForMeshClients } from './rules/KFM101-passthrough-for-mesh-clients.ts';
import { internalHostNotBoundToMesh } from './rules/KFM102-internal-host-not-bound-to-mesh.ts';
import { controllerConfigNamesMissing } from './rules/KFM103-controller-config-names-missing.ts';
import { l7PolicyWithoutWaypoint } from './rules/KFM201-l7-policy-without-waypoint.ts';
import { missingWaypoint } from './rules/KFM202-missing-waypoint.ts';
import { unusedWaypoint } from './rules/KFM203-unused-waypoint.ts';
import { sidecarClientSkipsWaypoint } from './rules/KFM204-sidecar-client-skips-waypoint.ts';
import { podAddressSkipsWaypoint } from './rules/KFM205-pod-address-skips-waypoint.ts';
import { injectionAndAmbient } from './rules/KFM206-injection-and-ambient.ts';
import { optedOutPodEnrolled } from './rules/KFM207-opted-out-pod-enrolled.ts';
import { networkPolicyBlocksHbone } from './rules/KFM208-network-policy-blocks-hbone.ts';
import { sidecarResourceOnAmbient } from './rules/KFM209-sidecar-resource-on-ambient.ts';
import { selectorOnGatewayApiPods } from './rules/KFM210-selector-on-gateway-api-pods.ts';
import { policyTargetNotEnforced } from './rules/KFM211-policy-target-not-enforced.ts';
import { waypointRefusesTraffic } from './rules/KFM212-waypoint-refuses-traffic.ts';
import { ingressSkipsWaypoint } from './rules/KFM213-ingress-skips-waypoint.ts';
import { l7ResourceOnAmbientPods } from './rules/KFM214-l7-resource-on-ambient-pods.ts';
import { routeToMissingTarget } from './rules/KFM401-route-to-missing-target.ts';
import { conflictingVirtualServices } from './rules/KFM402-conflicting-virtual-services.ts';
import { exportHidesRoute } from './rules/KFM403-export-hides-route.ts';
import { ingressNotServed } from './rules/KFM404-ingress-not-served.ts';
import { missingGateway } from './rules/KFM405-missing-gateway.ts';
import { hostNotOnGateway } from './rules/KFM406-host-not-on-gateway.ts';
import { invalidExportTo } from './rules/KFM407-invalid-export-to.ts';
import { gatewayRouteSkipsSubsets } from './rules/KFM408-gateway-route-skips-subsets.ts';
import { subsetSelectsNoPod } from './rules/KFM409-subset-selects-no-pod.ts';
import { tlsWithoutCa } from './rules/KFM410-tls-without-ca.ts';
import { gatewayPortNotOnService } from './rules/KFM411-gateway-port-not-on-service.ts';
import { conflictingGateways } from './rules/KFM412-conflicting-gateways.ts';
import { sidecarResourceScope } from './rules/KFM413-sidecar-resource-scope.ts';
import { serviceEntryWithoutAddress } from './rules/KFM414-service-entry-without-address.ts';
import { conflictingServiceEntryProtocols } from './rules/KFM415-conflicting-service-entry-protocols.ts';
import { claimRouteWithoutJwt } from './rules/KFM416-claim-route-without-jwt.ts';
import { deprecatedFields } from './rules/KFM417-deprecated-fields.ts';
import { ruleNeverUsed } from './rules/KFM418-rule-never-used.ts';
import { gatewayCredential } from './rules/KFM419-gateway-credential.ts';
import { httpDenyRefusesTcp } from './rules/KFM420-http-deny-refuses-tcp.ts';
import { gatewaySharedCertificate } from './rules/KFM421-gateway-shared-certificate.ts';
import { destinationRuleHostUnknown } from './rules/KFM422-destination-rule-host-unknown.ts';
import { rejectedByIstioValidation } from './rules/KFM423-rejected-by-istio-validation.ts';
import { envoyFilterNotModelled } from './rules/KFM424-envoy-filter-not-modelled.ts';
import { refusedByEnvoy } from './rules/KFM425-refused-by-envoy.ts';
import { policySelectsNoWorkload } from './rules/KFM601-policy-selects-no-workload.ts';
import { policyNamesMissingNamespace } from './rules/KFM602-policy-names-missing-namespace.ts';
import { meshRouteCost } from './rules/KFM501-mesh-route-cost.ts';
import { portProtocolUnknown } from './rules/KFM701-port-protocol-unknown.ts';
import { appRunsAsProxyUid } from './rules/KFM702-app-runs-as-proxy-uid.ts';
import { servicePortsConflict } from './rules/KFM703-service-ports-conflict.ts';
import { namespaceInjection } from './rules/KFM704-namespace-injection.ts';
import { podMissingProxy } from './rules/KFM705-pod-missing-proxy.ts';
import { istioAnnotations } from './rules/KFM706-istio-annotations.ts';
import { alphaAnnotations } from './rules/KFM707-alpha-annotations.ts';

/** Every rule, by code. */
export const rules: readonly Rule[] = [
  passthroughForMeshClients,
  internalHostNotBoundToMesh,
  controllerConfigNamesMissing,
  l7PolicyWithoutWaypoint,
  missingWaypoint,
  unusedWaypoint,
  sidecarClientSkipsWaypoint,
  podAddressSkipsWaypoint,
  injectionAndAmbient,
  optedOutPodEnrolled,
  networkPolicyBlocksHbone,
  sidecarResourceOnAmbient,
  selectorOnGatewayApiPods,
  policyTargetNotEnforced,
  waypointRefusesTraffic,
  ingressSkipsWaypoint,
  l7ResourceOnAmbientPods,
  routeToMissingTarget,
  conflictingVirtualServices,
  exportHidesRoute,
  ingressNotServed,
  missingGateway,
  hostNotOnGateway,
  invalidExportTo,
  gatewayRouteSkipsSubsets,
  subsetSelectsNoPod,
  tlsWithoutCa,
  gatewayPortNotOnService,
  conflictingGateways,
  sidecarResourceScope,
  serviceEntryWithoutAddress,
  conflictingServiceEntryProtocols,
  claimRouteWithoutJwt,
  deprecatedFields,
  ruleNeverUsed,
  gatewayCredential,
  httpDenyRefusesTcp,
  gatewaySharedCertificate,
  destinationRuleHostUnknown,
  rejectedByIstioValidation,
  envoyFilterNotModelled,
  refusedByEnvoy,
  meshRouteCost,
  policySelectsNoWorkload,
  policyNamesMissingNamespace,
  portProtocolUnknown,
  appRunsAsProxyUid,
  servicePortsConflict,
  namespaceInjection,
  podMissingProxy,
  istioAnnotations,
  alphaAnnotations,
];

export interface AnalyzeOptions {
  clusterDomain?: string;
  /** The Istio version to simulate (default: the input's). */
  istioVersion?: IstioVersion;
  /** The time certificates are judged at; without it, their validity periods are not checked. */
  now?: Date;
  /** The rules to run and the findings to keep (`--analyzer`; default: every rule, every finding). */
  selection?: Selection;
  /** Codes not reported on the resources named (`--suppress`), beside the objects' own annotations. */
  suppress?: readonly Suppression[];
}

/**
 * Runs every rule (or the selected ones) whose inputs are present (a rule without objects of the kinds it
 * reads finds nothing), less the findings suppressed by annotation or by `suppress`.
 */
export function analyze(snapshot: Snapshot, options: AnalyzeOptions = {}): Finding[] {
  // Compiled whatever rules run: compiling checks the input (a malformed NetworkPolicy is an error even
  // where no rule that reads NetworkPolicies runs).
  const mesh = compileMesh(snapshot, {
    ...(options.clusterDomain ? { clusterDomain: options.clusterDomain } : {}),
    ...(options.istioVersion ? { istioVersion: options.istioVersion } : {}),
  });
  const context: AnalyzeContext = {
    snapshot,
    mesh: () => mesh,
    ...(options.now ? { now: options.now } : {}),
  };
  const chosen = options.selection?.rules ?? rules;
  const findings = chosen
    .filter((rule) => rule.reads.some((kind) => snapshot.holds(kind)))
    .flatMap((rule) => rule.check(context))
    .filter((f) => options.selection?.keeps(f) ?? true);
  return withoutSuppressed(findings, snapshot, options.suppress).sort(compareFindings);
}

const rank: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

/** At or above a severity (`never`: none counts). */
export function atOrAbove(finding: Finding, threshold: Severity | 'never'): boolean {
  return threshold !== 'never' && rank[finding.severity] <= rank[threshold];
}

function compareFindings(a: Finding, b: Finding): number {
  const fa = a.location?.file ?? '';
  const fb = b.location?.file ?? '';
  if (fa !== fb) return fa < fb ? -1 : 1;
  const la = a.location?.line ?? 0;
  const lb = b.location?.line ?? 0;
  if (la !== lb) return la - lb;
  if (a.code !== b.code) return a.code < b.code ? -1 : 1;
  return (
    compareRefs(a.object, b.object) ||
    ((a.field ?? '') < (b.field ?? '') ? -1 : (a.field ?? '') > (b.field ?? '') ? 1 : 0)
  );
}

/** The findings as `kfmesh analyze -o json` prints them: counts, the rules, and each finding with its location as text. */
export interface FindingsDocument {
  summary: { findings: number; error: number; warning: number; info: number };
  rules: Pick<Rule, 'code' | 'name' | 'severity' | 'description' | 'istio'>[];
  findings: (Omit<Finding, 'location'> & { location?: string | undefined })[];
}

export function findingsDocument(findings: readonly Finding[]): FindingsDocument {
  const counts = { error: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  const summary = { findings: findings.length, ...counts };
  // The location as text, in the key's own place (JSON leaves out a finding's undefined location).
  const withText = findings.map((f) => ({
    ...f,
    location: f.location ? formatLocation(f.location) : undefined,
  }));
  return {
    summary,
    rules: rules.map(({ code, name, severity, description, istio }) => ({
      code,
      name,
      severity,
      description,
      ...(istio ? { istio: [...istio] } : {}),
    })),
    findings: withText,
  };
}

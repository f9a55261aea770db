/**
 * The analyzers of `istioctl analyze` (Istio 1.31's `pkg/config/analysis/analyzers`) that no kfmesh rule
 * corresponds to: those that do not apply to a Kubeflow/KServe platform's objects, with the reason, and
 * those that apply but have no kfmesh rule yet. The analyzers kfmesh does cover are the ones its rules name
 * in their `istio` metadata (rule.ts). docs/analyzers.md lists all three.
 */

/** An Istio analyzer kfmesh leaves out, and why. */
export interface UncoveredAnalyzer {
  analyzer: string;
  reason: string;
}

/** Analyzers about Istio's own installation, or about kinds kfmesh does not model. */
export const notApplicable: readonly UncoveredAnalyzer[] = [
  {
    analyzer: 'authn.BlockedCIDRsAnalyzer',
    reason: "checks istiod's own environment (BLOCKED_CIDRS_IN_JWKS_URIS), part of installing Istio",
  },
  {
    analyzer: 'conditions.ConditionAnalyzer',
    reason:
      "reads the status conditions controllers write; kfmesh checks the configuration, not controllers' reports",
  },
  {
    analyzer: 'envoyfilter.EnvoyPatchAnalyzer',
    reason:
      "checks how an EnvoyFilter's patches are ordered and whether they rely on others; kfmesh does not apply EnvoyFilter patches (neither Kubeflow nor KServe writes one) and reports each EnvoyFilter as outside its model instead (KFM424)",
  },
  {
    analyzer: 'externalcontrolplane.ExternalControlPlaneAnalyzer',
    reason: 'checks the webhooks of an istiod running outside the cluster, part of installing Istio',
  },
  {
    analyzer: 'injection.ImageAnalyzer',
    reason:
      "compares running pods' proxy images with the injector's template, an Istio upgrade check; kfmesh reads no injector template",
  },
  {
    analyzer: 'injection.ImageAutoAnalyzer',
    reason:
      "checks deployments of Istio's gateway chart (image: auto, filled in by the injector) against the injection webhooks' selectors, part of installing a gateway; kfmesh reads no webhook configurations",
  },
  {
    analyzer: 'k8sgateway.CRDVersionAnalyzer',
    reason: 'checks the installed Gateway API CRDs; kfmesh reads objects, not CRDs',
  },
  {
    analyzer: 'multicluster.MeshNetworksAnalyzer',
    reason: "checks a multi-network mesh's meshNetworks; kfmesh models one cluster",
  },
  {
    analyzer: 'multicluster.ServiceAnalyzer',
    reason:
      'compares Services of one name across the clusters of a multi-cluster mesh; kfmesh models one cluster',
  },
  {
    analyzer: 'telemetry.DefaultSelectorAnalyzer',
    reason: 'Telemetry resources configure metrics and tracing providers; kfmesh does not model them',
  },
  {
    analyzer: 'telemetry.LightstepAnalyzer',
    reason: 'checks a tracing provider of the mesh configuration; kfmesh does not model telemetry providers',
  },
  {
    analyzer: 'telemetry.ProviderAnalyzer',
    reason: 'checks the telemetry providers of the mesh configuration; kfmesh does not model them',
  },
  {
    analyzer: 'telemetry.SelectorAnalyzer',
    reason: 'Telemetry resources configure metrics and tracing providers; kfmesh does not model them',
  },
  {
    analyzer: 'webhook.Analyzer',
    reason: "checks that Istio's own injection webhooks do not overlap, part of installing Istio",
  },
];

/** Analyzers that apply to a Kubeflow/KServe platform and have no kfmesh rule yet. */
export const notYetCovered: readonly UncoveredAnalyzer[] = [];

/** A message code of an analyzer kfmesh answers in part: the code it leaves out, and why. */
export interface UncoveredCode {
  analyzer: string;
  code: string;
  reason: string;
}

/** Codes of covered analyzers that no kfmesh rule gives, with the reason. */
export const uncoveredCodes: readonly UncoveredCode[] = [];

/**
 * Analyzers of Istio's code that `istioctl analyze` does not run (they are not in its `analyzers.All()`):
 * kfmesh may name them as counterparts, which Istio's own tests of them check.
 */
export const outsideIstioctl: readonly UncoveredAnalyzer[] = [
  {
    analyzer: 'maturity.AlphaAnalyzer',
    reason: "Istio's analyzer tests run it; istioctl analyze 1.31 does not (it is not in analyzers.All())",
  },
];

/**
 * Where kfmesh and istioctl part on purpose: messages istioctl gives that kfmesh does not, told apart by
 * the analyzer, the code and the message's text, with the reason (checked by the oracle test: a message of
 * these that kfmesh does give, or one that no longer occurs on any input, is no divergence).
 */
export interface Divergence {
  analyzer: string;
  code: string;
  /** istioctl's message text, as its template fills it. */
  text: RegExp;
  reason: string;
}

export const divergences: readonly Divergence[] = [
  {
    analyzer: 'virtualservice.GatewayAnalyzer',
    code: 'IST0101',
    text: /^Referenced gateway not found/,
    reason:
      "the pinned Istio's analyzer looks a VirtualService's gateways up among Istio Gateways only; Istio's published analyzer data (a later commit) counts a Gateway API Gateway of that name and checks its listeners' hostnames, and kfmesh's analyzer follows the published data (its trace follows the pinned Istio, which serves no such binding)",
  },
  {
    analyzer: 'virtualservice.GatewayAnalyzer',
    code: 'IST0132',
    text: / not found in Gateway /,
    reason: 'as the IST0101 above: a Gateway API Gateway counts, and its listeners give its hosts',
  },
  {
    analyzer: 'destinationrule.PodNotSelectedAnalyzer',
    code: 'IST0174',
    text: /^The host \*\./,
    reason:
      'istioctl looks a wildcard DestinationRule host up as a literal name, so it finds no Service under it; istiod applies the rule to every Service the wildcard covers, and kfmesh does as istiod does',
  },
  {
    analyzer: 'deployment.ServiceAssociationAnalyzer',
    code: 'IST0137',
    text: /using targetPort/,
    reason:
      'istioctl reports any target port that two Service ports reach; the sidecar serves such a port with one listener, which matters only when the two ports give it different protocols, and kfmesh reports only that case',
  },
  {
    analyzer: 'schemaValidation.CollectionValidationAnalyzer',
    code: 'IST0131',
    text: / of prefix .* on "/,
    reason:
      "istioctl's check of overlapping prefix matches reads a match without a method as GET and a regex header match as matching any value, so it calls matches unused that requests do take (a POST, another header value); kfmesh's KFM418 decides with the same matching the trace uses",
  },
];

/**
 * istioctl's names of the analyzers (what `istioctl analyze --analyzer` and `-L` take) where they differ
 * from the Go type kfmesh's rules name as counterparts (checked against istioctl by the oracle test).
 * Schema validation is one type under one name per kind: `schema.ValidationAnalyzer.<Kind>`.
 */
export const istioctlNames: Readonly<Record<string, string>> = {
  'authz.AuthorizationPoliciesAnalyzer': 'auth.AuthorizationPoliciesAnalyzer',
  'deployment.ApplicationUIDAnalyzer': 'applicationUID.Analyzer',
  'deployment.ServiceAssociationAnalyzer': 'deployment.MultiServiceAnalyzer',
  'deprecation.FieldAnalyzer': 'deprecation.DeprecationAnalyzer',
  'destinationrule.PodNotSelectedAnalyzer': 'destinationrule.SubsetSelectPodAnalyzer',
  'multicluster.MeshNetworksAnalyzer': 'meshnetworks.MeshNetworksAnalyzer',
  'multicluster.ServiceAnalyzer': 'services.MultiClusterServiceAnalyzer',
  'serviceentry.ProtocolAddressesAnalyzer': 'serviceentry.Analyzer',
};

/** The type of schema validation, which istioctl names once per kind it validates. */
export const schemaValidation = {
  type: 'schemaValidation.CollectionValidationAnalyzer',
  prefix: 'schema.ValidationAnalyzer.',
};

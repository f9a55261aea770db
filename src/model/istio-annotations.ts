/**
 * Istio's resource annotations, as its API declares them: name, maturity, whether deprecated, and the
 * kinds each belongs on (`Any`: every kind). The facts of istio/api `annotation/annotations.yaml` at commit
 * b8f8791 (July 2026; Istio 1.31 development pins a commit of August 2026); descriptions left out. The
 * annotation rules read it (docs/semantics.md, Istio annotations).
 */

/** An Istio annotation's maturity (`None`: not stated). */
export type AnnotationStatus = 'Alpha' | 'Beta' | 'Stable' | 'None';

/** One annotation of the catalogue. */
export interface IstioAnnotation {
  name: string;
  status: AnnotationStatus;
  deprecated: boolean;
  resources: readonly string[];
}

export const istioAnnotations: readonly IstioAnnotation[] = [
  { name: 'prometheus.istio.io/merge-metrics', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  {
    name: 'alpha.istio.io/kubernetes-serviceaccounts',
    status: 'Alpha',
    deprecated: true,
    resources: ['Service'],
  },
  {
    name: 'alpha.istio.io/canonical-serviceaccounts',
    status: 'Alpha',
    deprecated: true,
    resources: ['Service'],
  },
  { name: 'networking.istio.io/exportTo', status: 'Alpha', deprecated: false, resources: ['Service'] },
  { name: 'sidecar.istio.io/inject', status: 'Beta', deprecated: true, resources: ['Pod'] },
  { name: 'sidecar.istio.io/status', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/rewriteAppHTTPProbers', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/discoveryAddress', status: 'Alpha', deprecated: true, resources: ['Pod'] },
  { name: 'sidecar.istio.io/proxyImage', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/proxyImageType', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/proxyCPU', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/proxyCPULimit', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/proxyMemory', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/proxyMemoryLimit', status: 'None', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/interceptionMode', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/bootstrapOverride', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsInclusionPrefixes', status: 'Alpha', deprecated: true, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsInclusionSuffixes', status: 'Alpha', deprecated: true, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsInclusionRegexps', status: 'Alpha', deprecated: true, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsHistogramBuckets', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsFlushInterval', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsEvictionInterval', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsHistogramBins', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/userVolume', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/userVolumeMount', status: 'None', deprecated: false, resources: ['Pod'] },
  { name: 'status.sidecar.istio.io/port', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/logLevel', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/componentLogLevel', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/agentLogLevel', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/nativeSidecar', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  {
    name: 'readiness.status.sidecar.istio.io/initialDelaySeconds',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'readiness.status.sidecar.istio.io/periodSeconds',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'readiness.status.sidecar.istio.io/failureThreshold',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'readiness.status.sidecar.istio.io/applicationPorts',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  { name: 'traffic.istio.io/nodeSelector', status: 'Stable', deprecated: false, resources: ['Service'] },
  {
    name: 'traffic.sidecar.istio.io/includeOutboundIPRanges',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/excludeOutboundIPRanges',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/includeInboundPorts',
    status: 'None',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/excludeInboundPorts',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/excludeInterfaces',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/includeOutboundPorts',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/excludeOutboundPorts',
    status: 'Alpha',
    deprecated: false,
    resources: ['Pod'],
  },
  {
    name: 'traffic.sidecar.istio.io/kubevirtInterfaces',
    status: 'Alpha',
    deprecated: true,
    resources: ['Pod'],
  },
  { name: 'kubernetes.io/ingress.class', status: 'Stable', deprecated: false, resources: ['Ingress'] },
  { name: 'galley.istio.io/analyze-suppress', status: 'Alpha', deprecated: false, resources: ['Any'] },
  { name: 'proxy.istio.io/config', status: 'Beta', deprecated: false, resources: ['Pod'] },
  { name: 'istio.io/dry-run', status: 'Alpha', deprecated: false, resources: ['AuthorizationPolicy'] },
  { name: 'istio.io/rev', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'proxy.istio.io/overrides', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'inject.istio.io/templates', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/extraStatTags', status: 'Alpha', deprecated: true, resources: ['Pod'] },
  {
    name: 'istio.io/autoRegistrationGroup',
    status: 'Alpha',
    deprecated: false,
    resources: ['WorkloadEntry'],
  },
  { name: 'istio.io/workloadController', status: 'Alpha', deprecated: false, resources: ['WorkloadEntry'] },
  { name: 'istio.io/connectedAt', status: 'Alpha', deprecated: false, resources: ['WorkloadEntry'] },
  { name: 'istio.io/disconnectedAt', status: 'Alpha', deprecated: false, resources: ['WorkloadEntry'] },
  {
    name: 'topology.istio.io/controlPlaneClusters',
    status: 'Alpha',
    deprecated: false,
    resources: ['Namespace'],
  },
  { name: 'gateway.istio.io/controller-version', status: 'Alpha', deprecated: false, resources: ['Any'] },
  { name: 'ambient.istio.io/redirection', status: 'Beta', deprecated: false, resources: ['Pod'] },
  {
    name: 'ambient.istio.io/waypoint-inbound-binding',
    status: 'Alpha',
    deprecated: false,
    resources: ['GatewayClass', 'Gateway'],
  },
  { name: 'gateway.istio.io/service-account', status: 'Alpha', deprecated: false, resources: ['Gateway'] },
  { name: 'gateway.istio.io/name-override', status: 'Alpha', deprecated: false, resources: ['Gateway'] },
  { name: 'networking.istio.io/service-type', status: 'Alpha', deprecated: false, resources: ['Gateway'] },
  {
    name: 'networking.istio.io/traffic-distribution',
    status: 'Alpha',
    deprecated: false,
    resources: ['Namespace', 'Service', 'ServiceEntry'],
  },
  {
    name: 'istio.io/use-waypoint-canary-weight',
    status: 'Alpha',
    deprecated: false,
    resources: ['Service', 'ServiceEntry', 'Namespace'],
  },
  { name: 'ambient.istio.io/bypass-inbound-capture', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'istio.io/reroute-virtual-interfaces', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'ambient.istio.io/dns-capture', status: 'Alpha', deprecated: false, resources: ['Pod'] },
  { name: 'sidecar.istio.io/statsCompression', status: 'Alpha', deprecated: true, resources: ['Pod'] },
];

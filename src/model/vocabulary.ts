/**
 * The vocabulary kfmesh shares with Istio, Kubernetes, Gateway API, KServe, Knative and Kubeflow: label
 * and annotation keys, kinds and well-known names. Every other module names them through these constants
 * (lint refuses a key written as a literal elsewhere), so a key is spelled once. What each one means to the
 * system that defines it is in docs/semantics.md.
 */

/** Label keys (a few, such as `sidecar.istio.io/inject`, are read as annotations too). */
export const Label = {
  /** The Pod Security level a namespace enforces. */
  PodSecurityEnforce: 'pod-security.kubernetes.io/enforce',
  TopologyRegion: 'topology.kubernetes.io/region',
  TopologyZone: 'topology.kubernetes.io/zone',
  TopologySubzone: 'topology.istio.io/subzone',
  /** `false` on a ServiceEntry: istiod allocates it no address. */
  EnableAutoallocateIp: 'networking.istio.io/enable-autoallocate-ip',
  Hostname: 'kubernetes.io/hostname',
  // Istio: injection and revisions (docs/semantics.md, "Sidecar injection").
  IstioInjection: 'istio-injection',
  IstioRev: 'istio.io/rev',
  SidecarInject: 'sidecar.istio.io/inject',
  // Istio ambient mode (docs/semantics.md, "Ambient enrollment and waypoints").
  DataplaneMode: 'istio.io/dataplane-mode',
  UseWaypoint: 'istio.io/use-waypoint',
  UseWaypointNamespace: 'istio.io/use-waypoint-namespace',
  IngressUseWaypoint: 'istio.io/ingress-use-waypoint',
  WaypointFor: 'istio.io/waypoint-for',
  // Istio workload identity and telemetry.
  TlsMode: 'security.istio.io/tlsMode',
  CanonicalName: 'service.istio.io/canonical-name',
  CanonicalRevision: 'service.istio.io/canonical-revision',
  Tunnel: 'networking.istio.io/tunnel',
  // Istio gateways and Gateway API deployments.
  DisableGatewayPortTranslation: 'experimental.istio.io/disable-gateway-port-translation',
  IstioGatewayName: 'istio.io/gateway-name',
  GatewayManaged: 'gateway.istio.io/managed',
  GatewayName: 'gateway.networking.k8s.io/gateway-name',
  GatewayClassName: 'gateway.networking.k8s.io/gateway-class-name',
  // The plain `app` and `version` labels Istio falls back on for telemetry and canonical names.
  App: 'app',
  /** The label Istio's gateway charts give their pods (`istio: ingressgateway`). */
  Istio: 'istio',
  Version: 'version',
  // Kubernetes.
  MetadataName: 'kubernetes.io/metadata.name',
  ServiceName: 'kubernetes.io/service-name',
  AppName: 'app.kubernetes.io/name',
  AppVersion: 'app.kubernetes.io/version',
  AppComponent: 'app.kubernetes.io/component',
  AppPartOf: 'app.kubernetes.io/part-of',
  ManagedBy: 'app.kubernetes.io/managed-by',
  // KServe and Knative.
  InferenceService: 'serving.kserve.io/inferenceservice',
  KServeVisibility: 'networking.kserve.io/visibility',
  KnativeVisibility: 'networking.knative.dev/visibility',
  KnativeIngress: 'networking.internal.knative.dev/ingress',
  KnativeService: 'serving.knative.dev/service',
  KnativeRoute: 'serving.knative.dev/route',
  KnativeRevision: 'serving.knative.dev/revision',
  KnativeConfiguration: 'serving.knative.dev/configuration',
  // Kubeflow.
  KatibComponent: 'katib.kubeflow.org/component',
  // kfmesh's own: the mode a namespace runs in, and the owner of each object it applies.
  Mode: 'kfmesh.io/mode',
  OwnerKind: 'kfmesh.io/owner-kind',
  OwnerNamespace: 'kfmesh.io/owner-namespace',
  OwnerName: 'kfmesh.io/owner-name',
} as const;

/** Annotation keys. */
export const Annotation = {
  /** istioctl's: the message codes (or `*`) the analyzer does not report on this object. */
  AnalyzeSuppress: 'galley.istio.io/analyze-suppress',
  SidecarStatus: 'sidecar.istio.io/status',
  GatewayControllerVersion: 'gateway.istio.io/controller-version',
  InterceptionMode: 'sidecar.istio.io/interceptionMode',
  StatusPort: 'status.sidecar.istio.io/port',
  ReadinessInitialDelaySeconds: 'readiness.status.sidecar.istio.io/initialDelaySeconds',
  ReadinessPeriodSeconds: 'readiness.status.sidecar.istio.io/periodSeconds',
  ReadinessFailureThreshold: 'readiness.status.sidecar.istio.io/failureThreshold',
  IncludeOutboundIpRanges: 'traffic.sidecar.istio.io/includeOutboundIPRanges',
  ExcludeOutboundIpRanges: 'traffic.sidecar.istio.io/excludeOutboundIPRanges',
  IncludeInboundPorts: 'traffic.sidecar.istio.io/includeInboundPorts',
  ExcludeInboundPorts: 'traffic.sidecar.istio.io/excludeInboundPorts',
  ExcludeOutboundPorts: 'traffic.sidecar.istio.io/excludeOutboundPorts',
  ExcludeInterfaces: 'traffic.sidecar.istio.io/excludeInterfaces',
  KubevirtInterfaces: 'traffic.sidecar.istio.io/kubevirtInterfaces',
  RerouteVirtualInterfaces: 'istio.io/reroute-virtual-interfaces',
  PrometheusMergeMetrics: 'prometheus.istio.io/merge-metrics',
  ProxyCpu: 'sidecar.istio.io/proxyCPU',
  ProxyMemory: 'sidecar.istio.io/proxyMemory',
  ProxyCpuLimit: 'sidecar.istio.io/proxyCPULimit',
  ProxyMemoryLimit: 'sidecar.istio.io/proxyMemoryLimit',
  AmbientRedirection: 'ambient.istio.io/redirection',
  ExportTo: 'networking.istio.io/exportTo',
  IngressClass: 'kubernetes.io/ingress.class',
  LastApplied: 'kubectl.kubernetes.io/last-applied-configuration',
  DeploymentMode: 'serving.kserve.io/deploymentMode',
  Stop: 'serving.kserve.io/stop',
  StorageInitializerSourceUri: 'internal.serving.kserve.io/storage-initializer-sourceuri',
  KnativeIngressProvider: 'networking.knative.dev/ingress-provider',
  MinScale: 'autoscaling.knative.dev/min-scale',
  MaxScale: 'autoscaling.knative.dev/max-scale',
  NotebookRewriteUri: 'notebooks.kubeflow.org/http-rewrite-uri',
  NotebookHeadersRequestSet: 'notebooks.kubeflow.org/http-headers-request-set',
} as const;

/** Kubernetes `appProtocol` values that name a protocol (docs/semantics.md, Sidecar outbound: Listener). */
export const AppProtocol = {
  H2c: 'kubernetes.io/h2c',
  Ws: 'kubernetes.io/ws',
  Wss: 'kubernetes.io/wss',
} as const;

/** API groups kfmesh writes objects of (`GroupKind` names whole kinds). */
export const Group = {
  Core: '',
  IstioNetworking: 'networking.istio.io',
  IstioSecurity: 'security.istio.io',
  GatewayApi: 'gateway.networking.k8s.io',
} as const;

/** `group/Kind` keys of the kinds kfmesh owns objects for, applies, or names as a rule's input. */
export const GroupKind = {
  Namespace: '/Namespace',
  Service: '/Service',
  ConfigMap: '/ConfigMap',
  Secret: '/Secret',
  Pod: '/Pod',
  Certificate: 'cert-manager.io/Certificate',
  DestinationRule: 'networking.istio.io/DestinationRule',
  ValidatingWebhookConfiguration: 'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  MutatingWebhookConfiguration: 'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  ServiceEntry: 'networking.istio.io/ServiceEntry',
  Sidecar: 'networking.istio.io/Sidecar',
  InferenceService: 'serving.kserve.io/InferenceService',
  Profile: 'kubeflow.org/Profile',
  Notebook: 'kubeflow.org/Notebook',
  VirtualService: 'networking.istio.io/VirtualService',
  AuthorizationPolicy: 'security.istio.io/AuthorizationPolicy',
  Gateway: 'gateway.networking.k8s.io/Gateway',
  IstioGateway: 'networking.istio.io/Gateway',
  HTTPRoute: 'gateway.networking.k8s.io/HTTPRoute',
  Ingress: 'networking.k8s.io/Ingress',
  RequestAuthentication: 'security.istio.io/RequestAuthentication',
  Telemetry: 'telemetry.istio.io/Telemetry',
  WasmPlugin: 'extensions.istio.io/WasmPlugin',
  NetworkPolicy: 'networking.k8s.io/NetworkPolicy',
  Deployment: 'apps/Deployment',
  StatefulSet: 'apps/StatefulSet',
  DaemonSet: 'apps/DaemonSet',
  ReplicaSet: 'apps/ReplicaSet',
  Job: 'batch/Job',
  ServiceAccount: '/ServiceAccount',
  Node: '/Node',
  Endpoints: '/Endpoints',
  EndpointSlice: 'discovery.k8s.io/EndpointSlice',
  PeerAuthentication: 'security.istio.io/PeerAuthentication',
  EnvoyFilter: 'networking.istio.io/EnvoyFilter',
  IngressClass: 'networking.k8s.io/IngressClass',
  GatewayClass: 'gateway.networking.k8s.io/GatewayClass',
  ReferenceGrant: 'gateway.networking.k8s.io/ReferenceGrant',
  KnativeService: 'serving.knative.dev/Service',
} as const;

/** A kind as `group/Kind` (the core group empty: `/Service`), as the snapshot and `specOf` name kinds. */
export type GroupKindKey = string;

/** Istio's Gateway API classes: gateways Istio deploys, and waypoints. */
export const GatewayClass = {
  Istio: 'istio',
  Waypoint: 'istio-waypoint',
} as const;

/** The controller an IngressClass names for istiod to serve its Ingresses. */
export const IstioIngressController = 'istio.io/ingress-controller';

/** The value of `app.kubernetes.io/managed-by` on every object kfmesh applies. */
export const ManagedByValue = 'kfmesh';

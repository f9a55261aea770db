/**
 * The compiled mesh's shape: what Istio's control plane would know about a snapshot, indexed for
 * tracing. `compileMesh` (mesh.ts) builds it; the route-table builders it calls take it as input, so the
 * shape lives here, below both.
 */
import type { Snapshot } from '../load/snapshot.ts';
import type { IstioVersion, VersionBehaviour } from './istio-version.ts';
import type { Waypoint } from './ambient.ts';
import type { MeshPolicies } from './authorization.ts';
import type { MeshConfig } from '../load/mesh-config.ts';
import type { NetworkPolicies } from './network-policy.ts';
import type { SecurityPolicies } from './security.ts';
import type { MeshService } from './services.ts';
import type { ResolvedVirtualService } from './virtual-services.ts';
import type { Workload } from './workloads.ts';

/** Options of compilation. */
export interface CompileOptions {
  /** The Istio version to simulate (default: the input's, from its images; else the newest modelled). */
  istioVersion?: IstioVersion;
  clusterDomain?: string;
}

/** The compiled mesh. */
export interface Mesh {
  snapshot: Snapshot;
  version: IstioVersion;
  /** Where the version came from, in words (`istiod's image …`, `--istio-version`). */
  versionSource: string;
  behaviour: VersionBehaviour;
  config: MeshConfig;
  clusterDomain: string;
  workloads: Workload[];
  workloadByIp: Map<string, Workload>;
  /** `namespace/name` of the workload (Deployment, ...) → its representative pod. */
  workloadByName: Map<string, Workload>;
  services: MeshService[];
  serviceByHostname: Map<string, MeshService>;
  serviceByVip: Map<string, MeshService>;
  /** Concrete service hostname → the ExternalName services that alias it (when aliasing is on). */
  aliasesOf: Map<string, MeshService[]>;
  virtualServices: ResolvedVirtualService[];
  /** Some Service or VirtualService is exported to fewer than all namespaces (sidecar scopes then differ per namespace). */
  exportsRestricted: boolean;
  gateways: Map<Workload, GatewayProxy>;
  /** Waypoints by `namespace/name`. */
  waypoints: Map<string, Waypoint>;
  security: SecurityPolicies;
  authorization: MeshPolicies;
  /** The RequestAuthentications, attached to proxies as AuthorizationPolicies are. */
  requestAuthentication: MeshPolicies;
  /** Kubernetes NetworkPolicies, enforced on connections at the sending and receiving pod. */
  networkPolicies: NetworkPolicies;
}

/** One server of an Istio Gateway, as a gateway pod runs it. */
export interface GatewayServer {
  /** The Gateway object, `ns/name`. */
  gateway: string;
  /** `server.port.number`. */
  port: number;
  /** The port the pod listens on after translation through a selecting Service. */
  listenPort: number;
  protocol: string;
  /** `[namespace/]host` entries. */
  hosts: string[];
  tlsMode?: string;
  /** `server.tls.httpsRedirect`: plaintext requests for its hosts are answered 301 to https. */
  httpsRedirect?: boolean;
}

/** A gateway pod and its servers. */
export interface GatewayProxy {
  workload: Workload;
  servers: GatewayServer[];
  /** For a Gateway API gateway: its Gateway's name (policies with targetRefs to it apply). */
  gatewayApiName?: string;
}

/**
 * Istio versions and the behaviours that depend on them (docs/semantics.md, Behaviour by Istio version).
 * Every version-dependent decision of the simulator reads one of these flags, so the list below is the
 * complete answer to "what does --istio-version change".
 */

/** A minor Istio version. */
export interface IstioVersion {
  major: number;
  minor: number;
}

/** The oldest and newest versions modelled. */
export const OldestModelledVersion: IstioVersion = { major: 1, minor: 20 };
export const NewestModelledVersion: IstioVersion = { major: 1, minor: 31 };

/**
 * Parses `X.Y` (a patch `X.Y.Z` is accepted and ignored); undefined when the text is not a version or
 * names one outside the modelled range (an unmodelled version would be simulated as another one).
 */
export function parseIstioVersion(text: string): IstioVersion | undefined {
  const match = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(text.trim());
  if (!match) return undefined;
  const version = { major: Number(match[1]), minor: Number(match[2]) };
  return compareVersions(version, OldestModelledVersion) >= 0 &&
    compareVersions(version, NewestModelledVersion) <= 0
    ? version
    : undefined;
}

/** Why a version a user gave under `field` cannot be simulated. */
export function unmodelledVersion(field: string, text: string): string {
  return `${field} must be a modelled version X.Y (${modelledRange()}), got ${JSON.stringify(text)}`;
}

/** The modelled range as people write it: `1.20 to 1.31`. */
function modelledRange(): string {
  return `${formatIstioVersion(OldestModelledVersion)} to ${formatIstioVersion(NewestModelledVersion)}`;
}

/** Orders versions: negative when `a` is older than `b`. */
export function compareVersions(a: IstioVersion, b: IstioVersion): number {
  return a.major - b.major || a.minor - b.minor;
}

/** `X.Y`. */
export function formatIstioVersion(version: IstioVersion): string {
  return `${version.major}.${version.minor}`;
}

function atLeast(version: IstioVersion, minor: number): boolean {
  return version.major > 1 || (version.major === 1 && version.minor >= minor);
}

/** The version-dependent behaviours, resolved for one version. */
export interface VersionBehaviour {
  /**
   * ExternalName Services are aliases of the Service they name (no listener, no cluster; their names join
   * the target's virtual host). From 1.21 (`ENABLE_EXTERNAL_NAME_ALIAS` on by default); at 1.20 an
   * ExternalName is a mesh-external DNS service with its own ports, and a port-less one produces nothing (docs/semantics.md, V8).
   */
  externalNameAlias: boolean;
  /**
   * A VirtualService host that is an alias FQDN counts as a registry service when the alias declares the
   * port: from 1.24 (docs/semantics.md, V7). In 1.21–1.23 aliases are skipped and such a host is a literal (non-registry) host.
   */
  aliasHostsAreRegistryServices: boolean;
  /** Inbound passthrough cluster name (V12): `InboundPassthroughClusterIpv4` at 1.20, one name later. */
  inboundPassthroughCluster: string;
  /** Client-side `destination_service_namespace` from the upstream cluster's service first: from 1.23 (V4). */
  clientServiceNamespaceFromCluster: boolean;
  /** Client-side `destination_principal` falls back to the upstream peer's identity without mTLS: from 1.25 (V5). */
  clientPrincipalFromPeerIdentity: boolean;
  /** Waypoints report `reporter="waypoint"` from 1.22; `destination` before (V1). */
  waypointReporter: 'waypoint' | 'destination';
  /** Waypoint destination labels come from the upstream endpoint's peer info: from 1.22 (V3). */
  waypointDestinationFromEndpoint: boolean;
  /** Waypoint `destination_service_namespace` from the upstream cluster's service: from 1.25 (V2). */
  waypointServiceNamespaceFromCluster: boolean;
  /**
   * The status an HTTPRoute rule without any backendRef answers with (V13): 404 in the 1.30 releases, 500
   * before and from 1.31 (a rule whose backends all weigh 0 answers 500 in every version).
   */
  noBackendRefsStatus: 404 | 500;
}

/** The behaviours of one version. */
export function behaviourOf(version: IstioVersion): VersionBehaviour {
  return {
    externalNameAlias: atLeast(version, 21),
    aliasHostsAreRegistryServices: atLeast(version, 24),
    inboundPassthroughCluster: atLeast(version, 21)
      ? 'InboundPassthroughCluster'
      : 'InboundPassthroughClusterIpv4',
    clientServiceNamespaceFromCluster: atLeast(version, 23),
    clientPrincipalFromPeerIdentity: atLeast(version, 25),
    waypointReporter: atLeast(version, 22) ? 'waypoint' : 'destination',
    waypointDestinationFromEndpoint: atLeast(version, 22),
    waypointServiceNamespaceFromCluster: atLeast(version, 25),
    noBackendRefsStatus: atLeast(version, 30) && !atLeast(version, 31) ? 404 : 500,
  };
}

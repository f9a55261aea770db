/**
 * Workload identities as Istio gives them and policies name them (docs/semantics.md, mTLS and identity;
 * Gateway API deployments): one home for the principal format and the service accounts Istio creates.
 */

/** A service account: its namespace and name. */
export interface ServiceAccountRef {
  namespace: string;
  serviceAccount: string;
}

/** `<trustDomain>/ns/<ns>/sa/<sa>`: a workload's SPIFFE identity without the scheme, as policies write principals. */
export function principalOf(account: ServiceAccountRef, trustDomain: string): string {
  return `${trustDomain}/ns/${account.namespace}/sa/${account.serviceAccount}`;
}

/** The SPIFFE URI of a workload. */
export function spiffeOf(account: ServiceAccountRef, trustDomain: string): string {
  return `spiffe://${principalOf(account, trustDomain)}`;
}

/**
 * The service account of the pods Istio deploys for a Gateway API gateway: `<name>-istio` for class
 * `istio`; a waypoint (class `istio-waypoint`) keeps `<name>`.
 */
export function gatewayServiceAccount(name: string, waypoint = false): string {
  return waypoint ? name : `${name}-istio`;
}

/** The service account a principal (`<trustDomain>/ns/<ns>/sa/<sa>`, or its SPIFFE URI) names; undefined for any other text. */
export function accountOfPrincipal(principal: string | undefined): ServiceAccountRef | undefined {
  const m = principal === undefined ? null : /\/ns\/([^/]+)\/sa\/([^/]+)$/.exec(principal);
  return m?.[1] && m[2] ? { namespace: m[1], serviceAccount: m[2] } : undefined;
}

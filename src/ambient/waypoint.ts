/** Waypoints and the namespace labels that enroll a namespace in ambient mode (istio-dataplane-semantics.md §5). */
import type { KubeObject } from '../model/object.ts';
import { inventedMeta } from '../model/ownership.ts';

/** Namespace labels of ambient mode. */
export const DataplaneModeLabel = 'istio.io/dataplane-mode';
export const UseWaypointLabel = 'istio.io/use-waypoint';
export const IngressUseWaypointLabel = 'istio.io/ingress-use-waypoint';
export const WaypointForLabel = 'istio.io/waypoint-for';
/** The sidecar injection label: `disabled` in an ambient namespace, so no sidecar comes back. */
export const SidecarInjectionLabel = 'istio-injection';

/** A waypoint: a Gateway of class `istio-waypoint` with the HBONE listener, for service traffic. */
export function waypointFor(namespace: string, name: string, owner: KubeObject): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: inventedMeta(owner, name, namespace, { [WaypointForLabel]: 'service' }),
    spec: {
      gatewayClassName: 'istio-waypoint',
      listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }],
    },
  };
}

/** True when the snapshot objects hold a waypoint Gateway in the namespace. */
export function hasWaypoint(objects: readonly KubeObject[], namespace: string): boolean {
  return objects.some(
    (o) =>
      o.kind === 'Gateway' &&
      o.metadata.namespace === namespace &&
      (o['spec'] as { gatewayClassName?: string } | undefined)?.gatewayClassName === 'istio-waypoint',
  );
}

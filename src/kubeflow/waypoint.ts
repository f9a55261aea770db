/** Waypoints: the Gateway of class `istio-waypoint` kfmesh deploys for a namespace (docs/semantics.md, "Ambient enrollment and waypoints"). */
import type { KubeObject } from '../model/object.ts';
import { inventedMeta } from '../model/ownership.ts';
import { GatewayClass, Label } from '../model/vocabulary.ts';
import { gatewayClassOf } from '../model/specs.ts';

/** A waypoint: a Gateway of class `istio-waypoint` with the HBONE listener, for service traffic. */
export function waypointFor(namespace: string, name: string, owner: KubeObject): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: inventedMeta(owner, name, namespace, { [Label.WaypointFor]: 'service' }),
    spec: {
      gatewayClassName: GatewayClass.Waypoint,
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
      gatewayClassOf(o) === GatewayClass.Waypoint,
  );
}

/**
 * `kfmesh migrate --to ambient`: a whole sidecar-mode configuration converted to ambient mode, with a
 * report of what each input object became.
 *
 * - Istio Gateways with routes → Gateway API Gateways (class istio); their VirtualServices → HTTPRoutes.
 * - Mesh-bound VirtualServices → HTTPRoutes with the Services as parents, served by a waypoint.
 * - AuthorizationPolicies: kept at ztunnel when it can enforce them whole; otherwise enforced whole at a
 *   waypoint (targetRefs) with ztunnel keeping the rules it can enforce whole plus one admitting the
 *   waypoint. Policies of ingress gateway pods move onto the Gateway API gateway with targetRefs, and
 *   the old gateway's identity becomes the new gateway's (`<gateway>-istio`) wherever a policy names it.
 * - Waypoints only where L7 is needed, `istio.io/use-waypoint` on exactly the Services (or namespaces)
 *   that need one, mesh-wide policies copied onto the waypoint class.
 * - Namespaces: `istio-injection` → `istio.io/dataplane-mode: ambient`; pods that opted out stay out.
 * - Sidecars and EnvoyFilters are left out, listed with what to do; DestinationRules lose ISTIO_MUTUAL.
 * - The mesh config turns HBONE on for the sidecars that remain, so ambient clients reach them with an identity.
 * - NetworkPolicies admit the converted gateway and HBONE; behind a waypoint, the sources they admitted
 *   are enforced at the waypoint (a DENY per Service) and the waypoint's pods are admitted; the ports
 *   they admitted per source, which HBONE blurs, at ztunnel (a DENY per workload).
 */
import { compareRefs, objectKey, refOf, type KubeObject } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { Outcome } from './migration-report.ts';
import { Migration, type MigrateOptions, type MigrationResult } from './context.ts';
import { gateways, istioIngresses } from './ingress.ts';
import { virtualServices } from './mesh-routes.ts';
import {
  attachPolicies,
  authorizationPolicies,
  classifyPolicies,
  requestAuthentications,
} from './authorization.ts';
import {
  destinationRules,
  keptNamespaces,
  namespacesAndWorkloads,
  sidecarOnlyObjects,
  waypoints,
} from './namespaces.ts';
import { controllerOwned, serverlessModels } from './controllers.ts';
import { profileControllerPrincipal } from './controller-config.ts';
import { networkPolicies } from './network-policies.ts';
import { waypointSources } from './waypoint-sources.ts';
import { hbonePorts } from './hbone-ports.ts';
import { sidecarHbone } from './sidecar-hbone.ts';

export type { MigrateOptions, MigrationResult } from './context.ts';

/** Converts a sidecar-mode configuration to ambient mode. */
export function migrateToAmbient(snapshot: Snapshot, options: MigrateOptions = {}): MigrationResult {
  const m = new Migration(snapshot, options);
  for (const object of snapshot.all()) {
    const ref = refOf(object);
    m.out.set(objectKey(ref), object);
    const location = snapshot.locate(object);
    m.entries.set(objectKey(ref), {
      object: ref,
      ...(location ? { location } : {}),
      outcome: Outcome.Kept,
      became: [ref],
      notes: [],
    });
  }
  // The phases, in order: each reads what the ones before it learnt.
  keptNamespaces(m);
  gateways(m);
  profileControllerPrincipal(m);
  virtualServices(m);
  classifyPolicies(m);
  attachPolicies(m);
  authorizationPolicies(m);
  requestAuthentications(m);
  waypoints(m);
  namespacesAndWorkloads(m);
  sidecarOnlyObjects(m);
  destinationRules(m);
  istioIngresses(m);
  networkPolicies(m);
  waypointSources(m);
  hbonePorts(m);
  serverlessModels(m);
  controllerOwned(m);
  sidecarHbone(m);
  const objects: KubeObject[] = [...m.out.values()].sort((a, b) => compareRefs(refOf(a), refOf(b)));
  return { objects, report: { entries: [...m.entries.values()], added: m.added } };
}

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
import type { Snapshot } from '../load/snapshot.ts';
import { MigrationInput, type MigrateOptions, type MigrationResult } from './context.ts';
import { Output } from './output.ts';
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
import { sidecarCapture } from './sidecar-capture.ts';

export type { MigrateOptions, MigrationResult } from './context.ts';

/**
 * Converts a sidecar-mode configuration to ambient mode. Each phase is a function of the input, the
 * facts of the phases before it (its parameter type names them, so it cannot run before the phases that
 * learn them) and the output they left, read-only; it returns its edits and its own facts, and only this
 * function applies edits. The facts go forward: which namespaces stay in sidecar mode; the new gateways;
 * the mesh routes; the waypoint plan; which waypoint Services each policy is enforced for.
 */
export function migrateToAmbient(
  snapshot: Snapshot,
  options: MigrateOptions = {},
  /** Where the edits go (a test passes one that checks each phase as it applies it). */
  output: Output = new Output(snapshot),
): MigrationResult {
  const input = new MigrationInput(snapshot, options);
  const scope = output.apply(() => keptNamespaces({ input }));
  const gatewayPlan = output.apply(() => gateways({ input, scope }, output));
  output.apply(() => profileControllerPrincipal({ input, gateways: gatewayPlan }, output));
  const routed = output.apply(() => virtualServices({ input, scope, gateways: gatewayPlan }, output));
  const { routes } = routed;
  const waypointPlan = output.apply(() => classifyPolicies({ input, scope, routes }, routed.needs));
  const planned = { input, scope, gateways: gatewayPlan, routes, waypoints: waypointPlan };
  const facts = { ...planned, attachments: output.apply(() => attachPolicies(planned, output)) };
  output.apply(() => authorizationPolicies(facts, output));
  output.apply(() => requestAuthentications(facts, output));
  output.apply(() => waypoints(facts, output));
  output.apply(() => namespacesAndWorkloads(facts, output));
  // After the templates' own labels: it adds to them.
  output.apply(() => sidecarCapture(facts, output));
  output.apply(() => sidecarOnlyObjects(facts, output));
  output.apply(() => destinationRules(facts, output));
  output.apply(() => istioIngresses(facts, output));
  // The NetworkPolicy phases read the policies as the one before left them: converted gateways
  // admitted, then the waypoint's pods admitted, then the port limits.
  output.apply(() => networkPolicies(facts, output));
  output.apply(() => waypointSources(facts, output));
  output.apply(() => hbonePorts(facts, output));
  output.apply(() => serverlessModels(facts, output));
  output.apply(() => sidecarHbone(facts, output));
  // Last: it reads what became of every object.
  output.apply(() => controllerOwned(facts, output));
  return { ...output.result(), kept: scope.kept };
}

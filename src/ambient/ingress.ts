/**
 * Migration phase: ingress. Istio Gateways that VirtualServices bind become Gateway API Gateways of class
 * istio (the rest are left out); the old gateway identity is mapped to the new one for the policies that
 * name it. Kubernetes Ingresses of class istio are reported: no Gateway API gateway serves them.
 */
import { specOf } from '../model/specs.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { resolveGatewayName } from '../mesh/virtual-services.ts';
import { Annotation, GroupKind } from '../model/vocabulary.ts';
import { step, type Facts, type GatewayPlan, type NewGateway } from './context.ts';
import type { Workload } from '../mesh/workloads.ts';
import type { OutputView, Phase } from './output.ts';
import { convertGateway, gatewayApiPrincipal } from './gateways.ts';
import { type Note, action, changed } from './migration-report.ts';
import { principalOf } from '../model/identity.ts';
import { gatewaysNamedByControllers } from './controller-config.ts';

/** Istio Gateways bound by some VirtualService become Gateway API Gateways; the rest are left out. */
export function gateways(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase<GatewayPlan> {
  const m = step(facts, output);
  const newGateways = new Map<string, NewGateway>();
  const oldGatewaysInUse = new Set<Workload>();
  const keptForControllers = new Set<string>();
  const namedByControllers = gatewaysNamedByControllers(m.input);
  const bound = new Set<string>();
  const boundByKept = new Set<string>();
  for (const vs of m.input.snapshot.list(GroupKind.VirtualService)) {
    const ns = vs.metadata.namespace ?? 'default';
    const gateways = specOf(vs, 'networking.istio.io/VirtualService').gateways ?? [];
    for (const g of gateways) (m.scope.isKept(ns) ? boundByKept : bound).add(resolveGatewayName(g, ns));
  }
  for (const gateway of m.input.snapshot.list(GroupKind.IstioGateway)) {
    const ns = gateway.metadata.namespace ?? 'default';
    const name = gateway.metadata.name ?? '';
    const selector = specOf(gateway, 'networking.istio.io/Gateway').selector ?? {};
    const pods = m.input.mesh.workloads.filter(
      (w) => Object.keys(selector).length > 0 && labelsMatch(w.labels, selector),
    );
    const controllers = namedByControllers.get(`${ns}/${name}`) ?? [];
    const servesSidecars = boundByKept.has(`${ns}/${name}`) || m.scope.isKept(ns);
    const stays = servesSidecars || controllers.length > 0;
    if (stays) for (const pod of pods) oldGatewaysInUse.add(pod);
    for (const use of controllers) {
      const where = `ConfigMap ${use.configMap.metadata.namespace ?? 'default'}/${use.configMap.metadata.name ?? ''} ${use.field}`;
      m.draft.note(
        gateway,
        action('', `kept, with its pods: ${use.builds} (${where}); to retire it, ${use.retire}`),
      );
    }
    if (!bound.has(`${ns}/${name}`)) {
      if (stays) {
        if (servesSidecars)
          m.draft.note(
            gateway,
            changed('', `kept: it serves routes of namespaces that stay in sidecar mode`),
          );
        continue;
      }
      m.draft.replace(gateway, []);
      m.draft.note(
        gateway,
        changed('', 'no VirtualService is bound to it: there is nothing to serve, so it is not converted'),
      );
      continue;
    }
    const notes: Note[] = [];
    const converted = convertGateway(gateway, notes);
    m.draft.replace(gateway, stays ? [gateway, converted] : [converted]);
    if (stays && !servesSidecars) keptForControllers.add(`${ns}/${name}`);
    if (stays)
      notes.push(
        changed(
          '',
          `also kept as it is: ${servesSidecars ? 'it serves routes of namespaces that stay in sidecar mode' : "the platform's controllers build on it"}`,
        ),
      );
    m.draft.note(gateway, ...notes);
    const principal = gatewayApiPrincipal(m.input.trustDomain, ns, name);
    newGateways.set(`${ns}/${name}`, { namespace: ns, name, principal, pods });
    m.draft.note(
      gateway,
      action(
        '',
        `Istio deploys the gateway as Deployment and Service ${ns}/${name}-istio: point DNS or the load balancer at that Service for the converted routes, then ${stays ? 'keep' : 'remove'} the old gateway pods (${[...new Set(pods.map((p) => `${p.namespace}/${p.name}`))].join(', ') || 'none found'})${stays ? `, which go on serving ${servesSidecars ? 'the namespaces that stay in sidecar mode' : 'what the controllers create on the old gateway'}` : ''}`,
      ),
    );
  }
  return m.draft.done<GatewayPlan>({
    newGateways,
    principalRenames: renames(newGateways, oldGatewaysInUse, m.input.trustDomain),
    oldGatewaysInUse,
    keptForControllers,
  });
}

/**
 * Old gateway principal → the principals of the new gateways that replace its pods; an old gateway that
 * stays (it serves sidecar-mode routes, or controllers build on it) keeps its identity beside them.
 */
function renames(
  newGateways: ReadonlyMap<string, NewGateway>,
  inUse: ReadonlySet<Workload>,
  trustDomain: string,
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const { pods, principal } of newGateways.values())
    for (const pod of pods) {
      const old = principalOf(pod, trustDomain);
      const list = out.get(old) ?? [];
      if (!list.includes(principal)) list.push(principal);
      out.set(old, list.sort());
    }
  for (const pod of inUse) {
    const old = principalOf(pod, trustDomain);
    const list = out.get(old);
    if (list && !list.includes(old)) out.set(old, [...list, old].sort());
  }
  return out;
}

/** Kubernetes Ingresses of class istio are served by the Istio gateway pods, not a Gateway API gateway. */
export function istioIngresses(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const ingress of m.input.snapshot.list(GroupKind.Ingress)) {
    if (m.scope.isKept(ingress.metadata.namespace ?? 'default')) continue;
    const spec = specOf(ingress, 'networking.k8s.io/Ingress');
    const istioClass =
      spec.ingressClassName === 'istio' ||
      ingress.metadata.annotations?.[Annotation.IngressClass] === 'istio';
    if (!istioClass) continue;
    m.draft.note(
      ingress,
      action(
        'spec.ingressClassName',
        'served by the Istio ingress gateway pods, not by a Gateway API gateway: write it as an HTTPRoute (for KServe: enableGatewayApi in inferenceservice-config), or keep those pods running',
      ),
    );
  }
  return m.draft.done();
}

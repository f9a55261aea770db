/**
 * Migration phase: ingress. Istio Gateways that VirtualServices bind become Gateway API Gateways of class
 * istio (the rest are left out); the old gateway identity is mapped to the new one for the policies that
 * name it. Kubernetes Ingresses of class istio are reported: no Gateway API gateway serves them.
 */
import { specOf } from '../model/specs.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { resolveGatewayName } from '../mesh/virtual-services.ts';
import { Annotation, GroupKind } from '../model/vocabulary.ts';
import { Migration } from './context.ts';
import { convertGateway, gatewayApiPrincipal } from './gateways.ts';
import { type Note, action, changed } from './migration-report.ts';
import { principalOf } from '../model/identity.ts';
import { gatewaysNamedByControllers } from './controller-config.ts';

/** Istio Gateways bound by some VirtualService become Gateway API Gateways; the rest are left out. */
export function gateways(m: Migration): void {
  const namedByControllers = gatewaysNamedByControllers(m);
  const bound = new Set<string>();
  const boundByKept = new Set<string>();
  for (const vs of m.snapshot.list(GroupKind.VirtualService)) {
    const ns = vs.metadata.namespace ?? 'default';
    const gateways = specOf(vs, 'networking.istio.io/VirtualService').gateways ?? [];
    for (const g of gateways) (m.isKept(ns) ? boundByKept : bound).add(resolveGatewayName(g, ns));
  }
  for (const gateway of m.snapshot.list(GroupKind.IstioGateway)) {
    const ns = gateway.metadata.namespace ?? 'default';
    const name = gateway.metadata.name ?? '';
    const selector = specOf(gateway, 'networking.istio.io/Gateway').selector ?? {};
    const pods = m.mesh.workloads.filter(
      (w) => Object.keys(selector).length > 0 && labelsMatch(w.labels, selector),
    );
    const controllers = namedByControllers.get(`${ns}/${name}`) ?? [];
    const servesSidecars = boundByKept.has(`${ns}/${name}`) || m.isKept(ns);
    const stays = servesSidecars || controllers.length > 0;
    if (stays) for (const pod of pods) m.oldGatewaysInUse.add(pod);
    for (const use of controllers) {
      const where = `ConfigMap ${use.configMap.metadata.namespace ?? 'default'}/${use.configMap.metadata.name ?? ''} ${use.field}`;
      m.note(
        gateway,
        action('', `kept, with its pods: ${use.builds} (${where}); to retire it, ${use.retire}`),
      );
    }
    if (!bound.has(`${ns}/${name}`)) {
      if (stays) {
        if (servesSidecars)
          m.note(gateway, changed('', `kept: it serves routes of namespaces that stay in sidecar mode`));
        continue;
      }
      m.replace(gateway, []);
      m.note(
        gateway,
        changed('', 'no VirtualService is bound to it: there is nothing to serve, so it is not converted'),
      );
      continue;
    }
    const notes: Note[] = [];
    const converted = convertGateway(gateway, notes);
    m.replace(gateway, stays ? [gateway, converted] : [converted]);
    if (stays && !servesSidecars) m.gatewaysKeptForControllers.add(`${ns}/${name}`);
    if (stays)
      notes.push(
        changed(
          '',
          `also kept as it is: ${servesSidecars ? 'it serves routes of namespaces that stay in sidecar mode' : "the platform's controllers build on it"}`,
        ),
      );
    m.entry(gateway).notes.push(...notes);
    const principal = gatewayApiPrincipal(m.trustDomain, ns, name);
    m.newGateways.set(`${ns}/${name}`, { namespace: ns, name, principal, pods });
    m.note(
      gateway,
      action(
        '',
        `Istio deploys the gateway as Deployment and Service ${ns}/${name}-istio: point DNS or the load balancer at that Service for the converted routes, then ${stays ? 'keep' : 'remove'} the old gateway pods (${[...new Set(pods.map((p) => `${p.namespace}/${p.name}`))].join(', ') || 'none found'})${stays ? `, which go on serving ${servesSidecars ? 'the namespaces that stay in sidecar mode' : 'what the controllers create on the old gateway'}` : ''}`,
      ),
    );
    for (const pod of pods) {
      const old = principalOf(pod, m.trustDomain);
      const list = m.principalRenames.get(old) ?? [];
      if (!list.includes(principal)) list.push(principal);
      m.principalRenames.set(old, list.sort());
    }
  }
  // An old gateway that still serves sidecar-mode routes keeps its identity beside the new ones.
  for (const pod of m.oldGatewaysInUse) {
    const old = principalOf(pod, m.trustDomain);
    const list = m.principalRenames.get(old);
    if (list && !list.includes(old)) m.principalRenames.set(old, [...list, old].sort());
  }
}

/** Kubernetes Ingresses of class istio are served by the Istio gateway pods, not a Gateway API gateway. */
export function istioIngresses(m: Migration): void {
  for (const ingress of m.snapshot.list(GroupKind.Ingress)) {
    if (m.isKept(ingress.metadata.namespace ?? 'default')) continue;
    const spec = specOf(ingress, 'networking.k8s.io/Ingress');
    const istioClass =
      spec.ingressClassName === 'istio' ||
      ingress.metadata.annotations?.[Annotation.IngressClass] === 'istio';
    if (!istioClass) continue;
    m.note(
      ingress,
      action(
        'spec.ingressClassName',
        'served by the Istio ingress gateway pods, not by a Gateway API gateway: write it as an HTTPRoute (for KServe: enableGatewayApi in inferenceservice-config), or keep those pods running',
      ),
    );
  }
}

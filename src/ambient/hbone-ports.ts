/**
 * Migration phase: the ports a NetworkPolicy admits, enforced at ztunnel (docs/semantics.md, NetworkPolicy
 * and The migration). In ambient mode every mesh connection reaches a pod over HBONE on 15008, so a rule
 * that limited the ports of its sources, once it admits 15008 (network-policies.ts), admits them on every
 * port. Where the pod's policies admitted different sources on different ports, ztunnel, which sees the
 * connection's own port, gets a DENY AuthorizationPolicy for the pod's workload that refuses, port by port,
 * the sources those ports did not admit (and, on ports no rule names, those no port-less rule admitted).
 */
import type { NetworkPolicies } from '../mesh/network-policy.ts';
import { HboneTargetPort } from '../mesh/trace/network.ts';
import type { Workload } from '../mesh/workloads.ts';
import { servicePortsOf } from '../mesh/services.ts';
import { Group } from '../model/vocabulary.ts';
import { InjectedLabelKeys } from '../model/sidecar.ts';
import type { AuthorizationRule } from '../model/specs.ts';
import { step, type Facts, type Step } from './context.ts';
import type { OutputView, Phase } from './output.ts';
import {
  admittedKey,
  convertedNetworkPolicies,
  noteOnPolicies,
  notesFor,
  denyRule,
  identitiesOf,
  sourcesOf,
  type Admitted,
  type Source,
} from './admitted.ts';

/** Adds, for each workload going ambient whose NetworkPolicies admit different sources per port, the DENY at ztunnel. */
export function hbonePorts(
  facts: Pick<Facts, 'input' | 'scope' | 'gateways' | 'waypoints'>,
  output: OutputView,
): Phase {
  const m = step(facts, output);
  const converted = convertedNetworkPolicies(m);
  if (!converted) return m.draft.done();
  const { policies, byName } = converted;
  const sources = sourcesOf(m);
  const done = new Set<string>();
  for (const pod of [...m.scope.sidecarPods().values()].flat()) {
    const workload = `${pod.namespace}/${pod.name}`;
    if (done.has(workload)) continue;
    done.add(workload);
    const name = m.draft.freeName(
      Group.IstioSecurity,
      'AuthorizationPolicy',
      pod.namespace,
      `${pod.name}-network-policy-ports`,
    );
    const limits = portLimits(m, policies, sources, pod, `${pod.namespace}/${name}`);
    if (!limits) continue;
    m.draft.add(
      {
        apiVersion: `${Group.IstioSecurity}/v1`,
        kind: 'AuthorizationPolicy',
        metadata: { name, namespace: pod.namespace },
        spec: {
          selector: { matchLabels: selectorOf(pod) },
          action: 'DENY',
          rules: limits.rules,
        },
      },
      `the ports NetworkPolicy ${limits.by.join(', ')} admits to the pods of ${workload}, per source, enforced at ztunnel: over HBONE every connection arrives on ${HboneTargetPort}`,
    );
    noteOnPolicies(
      m,
      byName,
      limits.by,
      `its port limits for ${workload} are enforced at ztunnel too, by AuthorizationPolicy ${pod.namespace}/${name}`,
      limits.notes,
    );
  }
  return m.draft.done();
}

/** What a port admits when no rule limits its sources. */
const everyone: Admitted = {
  everyone: true,
  namespaces: new Set(),
  principals: new Set(),
  ipBlocks: new Set(),
};

/**
 * The DENY rules that keep a pod's per-port sources, or undefined when every port admits what 15008 now
 * does: for each port a rule or a Service names, and for every other port together.
 */
function portLimits(
  m: Step<'input' | 'waypoints'>,
  policies: NetworkPolicies,
  sources: readonly Source[],
  pod: Workload,
  deny: string,
) {
  const onHbone = policies.admittedPeers(pod, HboneTargetPort);
  const { ports: named, ranges } = policies.ingressPorts(pod);
  if (named.length === 0 && ranges.length === 0) return undefined;
  const { notes, note } = notesFor(deny);
  // Behind a waypoint ztunnel sees the waypoint as the source; the waypoint's own DENY judges the client.
  const waypoint = m.waypoints.behindWaypoint(pod) ? m.input.waypointPrincipal(pod.namespace) : undefined;
  const admittedOn = (port: number): Admitted | undefined => {
    const peers = policies.admittedPeers(pod, port);
    if (peers.open) return undefined;
    const admitted = identitiesOf(policies, peers.peers, sources, note);
    if (waypoint) admitted.principals.add(waypoint);
    return admitted;
  };
  // A port needs no rule when the same peers admit it as admit 15008, which the NetworkPolicy enforces
  // itself (compared as the policies state them: identities may say less than a peer does).
  const peersOn = (port: number) => {
    const peers = policies.admittedPeers(pod, port);
    return peers.open
      ? 'open'
      : peers.peers
          .map((p) => JSON.stringify([p.policy, p.peer]))
          .sort()
          .join('\n');
  };
  const wide = peersOn(HboneTargetPort);
  const inRange = (p: number) => ranges.some(([from, to]) => p >= from && p <= to);
  const servicePorts = servicePortsOf(m.input.mesh, pod).map((p) => p.targetPort);
  const listed = [...new Set([...named, ...servicePorts, ...pod.containerPorts.values()])]
    .filter((p) => p !== HboneTargetPort)
    .sort((a, b) => a - b);
  const rules: AuthorizationRule[] = [];
  const byKey = new Map<string, { ports: number[]; admitted: Admitted }>();
  for (const port of listed) {
    if (peersOn(port) === wide) continue;
    const admitted = admittedOn(port) ?? everyone;
    if (admitted.everyone) continue;
    const key = admittedKey(admitted);
    const group = byKey.get(key) ?? { ports: [], admitted };
    group.ports.push(port);
    byKey.set(key, group);
  }
  for (const { ports, admitted } of byKey.values()) rules.push(denyRule(ports, admitted));
  // Every other port: a port no rule and no Service names (ranges count as named).
  let other = 65535;
  while (other > 1 && (listed.includes(other) || inRange(other) || other === HboneTargetPort)) other--;
  const rest = admittedOn(other) ?? everyone;
  if (!rest.everyone && peersOn(other) !== wide) {
    const { to: _to, ...from } = denyRule([], rest);
    rules.push({
      ...from,
      to: [{ operation: { notPorts: [...listed, ...rangePorts(ranges)].map(String) } }],
    });
  }
  if (rules.length === 0) return undefined;
  return { rules: rules.map(identifiedOnly), by: [...onHbone.by].sort(), notes };
}

/**
 * A rule narrowed to connections with an identity (`principals: ["*"]`): only HBONE blurs the port; a
 * plaintext connection arrives on its own port, where the NetworkPolicy judges it as before.
 */
function identifiedOnly(rule: AuthorizationRule): AuthorizationRule {
  const from = rule.from ?? [{ source: {} }];
  return { ...rule, from: from.map((f) => ({ ...f, source: { principals: ['*'], ...f.source } })) };
}

/** The ports of small ranges, one by one (a range that names more than 64 is left to the NetworkPolicy). */
function rangePorts(ranges: readonly [number, number][]): number[] {
  return ranges.flatMap(([from, to]) =>
    to - from < 64 ? Array.from({ length: to - from + 1 }, (_, i) => from + i) : [],
  );
}

/** The labels that select the pods of a workload (its pods' own, without the per-revision hash). */
function selectorOf(pod: Workload): Record<string, string> {
  // Not the injector's labels: the pod has none of them once it runs without its sidecar.
  return Object.fromEntries(
    Object.entries(pod.labels).filter(([k]) => k !== 'pod-template-hash' && !InjectedLabelKeys.includes(k)),
  );
}

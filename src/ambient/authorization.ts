/**
 * Migration phase: authorization. AuthorizationPolicies stay at ztunnel when it can enforce them whole;
 * otherwise a waypoint enforces them whole (targetRefs) and ztunnel keeps the rules it can enforce whole
 * plus one admitting the waypoint. Policies of ingress gateway pods move onto the Gateway API gateways;
 * mesh-wide ones get a copy on the waypoint class. RequestAuthentications follow the policies that read
 * their tokens.
 */
import { specOf, type AuthorizationPolicySpec, type PolicyTargetRef, isKind } from '../model/specs.ts';
import type { MeshService } from '../mesh/services.ts';
import type { Workload } from '../mesh/workloads.ts';
import { addTo } from '../model/multimap.ts';
import type { KubeObject } from '../model/object.ts';
import { GatewayClass, GroupKind, Group } from '../model/vocabulary.ts';
import {
  WaypointPlan,
  selectedGateways,
  step,
  type Attachments,
  type Facts,
  type NewGateway,
  type Step,
  type WaypointNeed,
  actionOf,
  isTargeted,
  policySpecOf,
  type PolicySpec,
} from './context.ts';
import { type Note, Outcome, action, changed } from './migration-report.ts';
import { learnt, type OutputView, type Phase } from './output.ts';
import {
  renamePrincipals,
  needsWaypoint,
  withServicePorts,
  withTargetRefs,
  ztunnelPart,
} from './policies.ts';
import { waypointReasonsOf } from '../mesh/ambient.ts';
import { isProfileOwnerPolicy, WaypointOwnerPolicyName } from '../kubeflow/profile.ts';

/** What the phases that write policies read. */
type AuthFacts = 'input' | 'scope' | 'gateways' | 'waypoints' | 'attachments';
type AuthStep = Step<AuthFacts>;

/**
 * Which Services and namespaces need a waypoint: the ones the mesh routes named (`needs`), and the ones
 * whose pods a policy needing L7 selects (a namespace-wide one: every Service of the namespace).
 */
export function classifyPolicies(
  { input, scope, routes }: Pick<Facts, 'input' | 'scope' | 'routes'>,
  needs: readonly WaypointNeed[],
): Phase<WaypointPlan> {
  const all = [...needs];
  const namespaces = new Map<string, string[]>();
  const policies = [
    ...input.snapshot
      .list(GroupKind.AuthorizationPolicy)
      .map((p) => ({ p, l7: needsWaypoint(specOf(p, 'security.istio.io/AuthorizationPolicy')) })),
    ...input.snapshot.list(GroupKind.RequestAuthentication).map((p) => ({ p, l7: true })),
  ];
  for (const { p, l7 } of policies) {
    const spec = policySpecOf(p);
    if (!l7 || isTargeted(spec) || input.isMeshWide(p)) continue;
    const pods = scope.selected(p);
    if (pods.length === 0) continue;
    const ns = p.metadata.namespace ?? 'default';
    const what = `${p.kind} ${ns}/${p.metadata.name}`;
    if (spec.selector === undefined) addTo(namespaces, ns, what);
    else for (const service of input.servicesOf(pods)) all.push({ service, reason: what });
  }
  if (namespaces.size > 0)
    for (const service of input.mesh.services)
      if (
        namespaces.has(service.namespace) &&
        service.type !== 'ExternalName' &&
        service.type !== 'ServiceEntry'
      )
        all.push({ service, reason: `namespace ${service.namespace} uses a waypoint` });
  const waypointNamespaces = new Map([...namespaces].map(([ns, r]) => [ns, new Set(r)]));
  return learnt(new WaypointPlan(input, routes, all, waypointNamespaces));
}

/**
 * Which waypoint Services each policy must be enforced for. A waypoint judges a request by the Service
 * addressed, before routing, while a sidecar judged it by the pod it reached; so a Service takes the
 * policies of every pod it can send requests to (its own, and its mesh routes' backends'). Its DENY and
 * CUSTOM policies are all of them (more refusals, never fewer). Its ALLOW policies are those pods' when
 * every such pod has the same ones; when they differ no union of them is safe, so the Service takes none
 * and an ALLOW with no rules refuses what no other policy allows (fail closed, reported).
 */
export function attachPolicies(
  facts: Pick<Facts, 'input' | 'scope' | 'waypoints'>,
  output: OutputView,
): Phase<Attachments> {
  const m = step(facts, output);
  const attachments = new Map<KubeObject, MeshService[]>();
  const attach = (policy: KubeObject, service: MeshService) => {
    const list = attachments.get(policy) ?? [];
    if (!list.includes(service)) list.push(service);
    attachments.set(policy, list);
  };
  const podPolicies = new Map<Workload, KubeObject[]>();
  for (const policy of m.input.snapshot.list(GroupKind.AuthorizationPolicy)) {
    const spec = policySpecOf(policy);
    if (m.scope.isKept(policy.metadata.namespace ?? 'default') || m.input.isMeshWide(policy)) continue;
    if (isTargeted(spec)) continue;
    if (spec.selector === undefined && m.waypoints.namespaces.has(policy.metadata.namespace ?? 'default'))
      continue; // the namespace's waypoint takes it whole (targetRefs to the waypoint)
    for (const pod of m.scope.selected(policy)) addTo(podPolicies, pod, policy);
  }
  const keyOfPolicy = (p: KubeObject) => `${p.metadata.namespace}/${p.metadata.name}`;
  for (const [key, { service }] of [...m.waypoints.services].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const reached = m.scope.podsOfServices([key, ...(m.waypoints.routes.routesTo.get(key) ?? [])]);
    const allowSets = new Set<string>();
    for (const pod of reached) {
      const policies = (podPolicies.get(pod) ?? []).filter((p) => actionOf(p) === 'ALLOW');
      allowSets.add(policies.map(keyOfPolicy).sort().join('\n'));
      for (const p of podPolicies.get(pod) ?? []) if (actionOf(p) !== 'ALLOW') attach(p, service);
    }
    if (allowSets.size <= 1) {
      for (const pod of reached)
        for (const p of podPolicies.get(pod) ?? []) if (actionOf(p) === 'ALLOW') attach(p, service);
      continue;
    }
    const name = m.draft.freeName(
      Group.IstioSecurity,
      'AuthorizationPolicy',
      service.namespace,
      `${service.name}-waypoint-allow-nothing`,
    );
    m.draft.add(
      {
        apiVersion: `${Group.IstioSecurity}/v1`,
        kind: 'AuthorizationPolicy',
        metadata: { name, namespace: service.namespace },
        spec: { targetRefs: [{ group: '', kind: 'Service', name: service.name }], action: 'ALLOW' },
      },
      `needs a person: mesh routes send Service ${key}'s requests to pods whose ALLOW policies differ, and a waypoint judges by the Service addressed; this refuses what no other policy of the Service allows until the policies are written for ${key}`,
    );
  }
  return m.draft.done<Attachments>(attachments);
}

/**
 * The targetRefs that make waypoints enforce a policy for these pods, by the namespace they must be
 * written in (a policy can only target objects of its own namespace; a root-namespace policy with a
 * selector reaches pods everywhere, so it needs a copy in each of their namespaces).
 */
function waypointTargets(
  m: AuthStep,
  policy: KubeObject,
  pods: readonly Workload[],
): Map<string, PolicyTargetRef[]> {
  const ns = policy.metadata.namespace ?? 'default';
  if (policySpecOf(policy).selector === undefined && m.waypoints.namespaces.has(ns))
    return new Map([[ns, [{ group: Group.GatewayApi, kind: 'Gateway', name: m.input.waypointName }]]]);
  const out = new Map<string, PolicyTargetRef[]>();
  const services =
    policy.kind === 'AuthorizationPolicy'
      ? (m.attachments.get(policy) ?? [])
      : m.waypoints
          .servicesReaching(pods)
          .filter((s) => m.waypoints.services.has(`${s.namespace}/${s.name}`));
  for (const s of [...services].sort((a, b) =>
    `${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1,
  ))
    addTo(out, s.namespace, { group: '', kind: 'Service', name: s.name });
  return out;
}

/** One copy of a policy per namespace of its targets, each with its targetRefs. */
function targetedCopies(
  m: AuthStep,
  policy: KubeObject,
  spec: PolicySpec,
  targets: Map<string, PolicyTargetRef[]>,
  make: (name: string, namespace: string, spec: PolicySpec) => KubeObject,
  name: string,
): { outputs: KubeObject[]; text: string; names: string[] } {
  const ns = policy.metadata.namespace ?? 'default';
  const outputs: KubeObject[] = [];
  const parts: string[] = [];
  const names: string[] = [];
  for (const [tns, refs] of [...targets].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const n = tns === ns ? name : m.draft.freeName(Group.IstioSecurity, policy.kind, tns, name);
    names.push(`${tns}/${n}`);
    const ported = withServicePorts(spec, servicePortsOf(m, tns, refs));
    outputs.push(make(n, tns, withTargetRefs(ported.spec, refs)));
    const what = refs.map((t) => `${t['kind']} ${t['name']}`).join(', ');
    const ports =
      ported.changed.length > 0
        ? `, pod ports as the Service ports the waypoint sees: ${ported.changed.join('; ')}`
        : '';
    parts.push(`${tns === ns ? what : `${what} in ${tns} (copy ${tns}/${n})`}${ports}`);
  }
  return { outputs, text: parts.join('; '), names };
}

/** Pod port → the ports of the targeted Services (a namespace's waypoint: all its Services) that send to it. */
function servicePortsOf(
  m: AuthStep,
  namespace: string,
  refs: readonly PolicyTargetRef[],
): Map<string, string[]> {
  const names = new Set(refs.filter((r) => r['kind'] === 'Service').map((r) => r['name']));
  const wholeNamespace = refs.some((r) => r['kind'] === 'Gateway');
  const out = new Map<string, string[]>();
  for (const s of m.input.selectingServices(namespace)) {
    if (!wholeNamespace && !names.has(s.name)) continue;
    for (const port of s.ports) {
      const endpoint = s.endpoints[0];
      const target = endpoint
        ? endpoint.portFor(port)
        : typeof port.targetPort === 'number'
          ? port.targetPort
          : port.port;
      const list = out.get(String(target)) ?? [];
      if (!list.includes(String(port.port))) list.push(String(port.port));
      out.set(String(target), list.sort());
    }
  }
  return out;
}

export function authorizationPolicies(facts: Pick<Facts, AuthFacts>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const policy of m.input.snapshot.list(GroupKind.AuthorizationPolicy)) {
    if (m.scope.isKept(policy.metadata.namespace ?? 'default')) continue;
    const { spec, renamed } = renamePrincipals(
      specOf(policy, 'security.istio.io/AuthorizationPolicy'),
      m.gateways.principalRenames,
    );
    const renameNotes = renamed.map((p) =>
      changed(
        'spec.rules',
        `principal ${p} (the Istio ingress gateway) → ${(m.gateways.principalRenames.get(p) ?? []).join(', ')} (the Gateway API gateway)`,
      ),
    );
    const make = (n: string, namespace: string, s: PolicySpec): KubeObject => ({
      apiVersion: `${Group.IstioSecurity}/v1`,
      kind: 'AuthorizationPolicy',
      metadata: {
        name: n,
        namespace,
        ...(policy.metadata.labels ? { labels: { ...policy.metadata.labels } } : {}),
        ...(policy.metadata.annotations ? { annotations: { ...policy.metadata.annotations } } : {}),
      },
      spec: s,
    });
    const converted =
      spec['targetRefs'] !== undefined || spec['targetRef'] !== undefined
        ? { outputs: [{ ...policy, spec }], notes: [] }
        : m.input.isMeshWide(policy)
          ? meshWidePolicy(m, policy, spec, make)
          : selectorPolicy(m, policy, spec, make);
    m.draft.note(policy, ...renameNotes, ...converted.notes);
    const [only] = converted.outputs;
    const unchanged =
      converted.outputs.length === 1 &&
      only?.metadata.name === policy.metadata.name &&
      only?.metadata.namespace === policy.metadata.namespace &&
      only !== undefined &&
      isKind(only, 'security.istio.io/AuthorizationPolicy') &&
      specOf(only, 'security.istio.io/AuthorizationPolicy') === spec;
    m.draft.replace(
      policy,
      converted.outputs,
      unchanged ? (renamed.length > 0 ? Outcome.Changed : Outcome.Kept) : Outcome.Converted,
    );
  }
  return m.draft.done();
}

/** A mesh-wide policy stays for ztunnel and gateways; waypoints get a copy on their class. */
function meshWidePolicy(
  m: AuthStep,
  policy: KubeObject,
  spec: AuthorizationPolicySpec,
  make: (name: string, namespace: string, spec: PolicySpec) => KubeObject,
): { outputs: KubeObject[]; notes: Note[] } {
  const ns = policy.metadata.namespace ?? 'default';
  const outputs: KubeObject[] = [{ ...policy, spec }];
  const notes: Note[] = [];
  if (m.waypoints.services.size > 0 || m.waypoints.namespaces.size > 0) {
    const name = m.draft.freeName(
      Group.IstioSecurity,
      'AuthorizationPolicy',
      ns,
      `${policy.metadata.name}-waypoints`,
    );
    const classRef = { group: Group.GatewayApi, kind: 'GatewayClass', name: GatewayClass.Waypoint };
    outputs.push(make(name, ns, withTargetRefs(spec, [classRef])));
    notes.push(
      changed(
        '',
        `mesh-wide: waypoints take only policies that target them, so a copy targets the waypoint class (${name})`,
      ),
    );
  }
  const reasons = waypointReasonsOf(spec);
  if (reasons.length > 0)
    notes.push(
      action(
        'spec.rules',
        `a mesh-wide policy ztunnel cannot enforce whole (${reasons.join(', ')}): ALLOW rules with HTTP conditions match nothing there, and it does not run CUSTOM or AUDIT policies; move those to waypoints`,
      ),
    );
  return { outputs, notes };
}

/**
 * A policy with a selector (or none, namespace-wide): onto the new gateways when it selects ingress
 * gateway pods; onto waypoints, with its ztunnel part, when its pods need one; else as it is.
 */
function selectorPolicy(
  m: AuthStep,
  policy: KubeObject,
  spec: AuthorizationPolicySpec,
  make: (name: string, namespace: string, spec: PolicySpec) => KubeObject,
): { outputs: KubeObject[]; notes: Note[] } {
  const outputs: KubeObject[] = [];
  const notes: Note[] = [];
  const moved = ontoNewGateways(m, policy, spec, make);
  outputs.push(...moved.outputs);
  notes.push(...moved.notes);
  const pods = m.scope.selected(policy);
  const behind = pods.filter((p) => m.waypoints.behindWaypoint(p));
  if (pods.length > 0 && (needsWaypoint(spec) || behind.length > 0)) {
    const onWaypoints = ontoWaypoints(m, policy, spec, pods, behind, make);
    outputs.push(...onWaypoints.outputs);
    notes.push(...onWaypoints.notes);
  } else if (pods.length > 0 || moved.outputs.length === 0) {
    outputs.push({ ...policy, spec });
  }
  if (moved.outputs.length > 0 && m.input.selectsPod(policy, m.gateways.oldGatewaysInUse)) {
    outputs.push(policy);
    notes.push(
      changed(
        '',
        'also kept as it is: the old gateway stays (it serves namespaces that stay in sidecar mode, or controllers build on it)',
      ),
    );
  }
  return { outputs, notes };
}

/** A policy whose pods sit (or must sit) behind waypoints: enforced there whole, and its ztunnel part. */
function ontoWaypoints(
  m: AuthStep,
  policy: KubeObject,
  spec: AuthorizationPolicySpec,
  pods: readonly Workload[],
  behind: readonly Workload[],
  make: (name: string, namespace: string, spec: PolicySpec) => KubeObject,
): { outputs: KubeObject[]; notes: Note[] } {
  const ns = policy.metadata.namespace ?? 'default';
  const name = policy.metadata.name ?? '';
  const targets = waypointTargets(m, policy, behind.length > 0 ? behind : pods);
  if (targets.size === 0) {
    // No waypoint can serve these pods: ztunnel alone enforces what it can. An ALLOW's HTTP rules
    // match nothing there (narrower); a DENY keeps each rule's L4 part (broader), never less.
    const l4 = (spec['action'] ?? 'ALLOW') === 'DENY' ? ztunnelPart(spec, []) : undefined;
    return {
      outputs: [l4 ? make(name, ns, l4) : { ...policy, spec }],
      notes: [
        action(
          'spec.rules',
          'HTTP conditions need a waypoint, and no Service selects these pods for one to serve: ztunnel enforces the policy, where ALLOW rules with HTTP conditions match nothing and DENY rules apply on their L4 part alone',
        ),
      ],
    };
  }
  // The profile controller rewrites its owner policy to the sidecar form on every reconcile: the
  // waypoint form goes beside it under kfmesh's name, and the original stays (at ztunnel only its rules
  // without HTTP conditions count, which the ztunnel part below holds too).
  const rewritten = isProfileOwnerPolicy(m.input.snapshot, policy);
  const targeted = targetedCopies(
    m,
    policy,
    spec,
    targets,
    make,
    rewritten ? m.draft.freeName(Group.IstioSecurity, policy.kind, ns, WaypointOwnerPolicyName) : name,
  );
  const outputs = [...targeted.outputs];
  if (rewritten) outputs.push(policy);
  const waypoints = [...new Set(behind.map((p) => m.input.waypointPrincipal(p.namespace)))];
  const l4 = ztunnelPart(spec, waypoints);
  const l4Name = m.draft.freeName(Group.IstioSecurity, 'AuthorizationPolicy', ns, `${name}-l4`);
  if (l4) outputs.push(make(l4Name, ns, l4));
  const kept =
    (spec['action'] ?? 'ALLOW') === 'ALLOW'
      ? `the rules it can enforce whole${waypoints.length > 0 ? ' and one admitting the waypoint' : ''}`
      : 'the L4 part of each rule, except for the waypoint';
  return {
    outputs,
    notes: [
      changed(
        'spec.selector',
        `enforced at the waypoint (targets ${targeted.text})${l4 ? `; ztunnel keeps ${kept} (${l4Name})` : ''}`,
      ),
      ...(rewritten
        ? [
            changed(
              '',
              `the profile controller rewrites this policy on every reconcile: also kept as it is, and its waypoint form is written as ${targeted.names.join(', ')}`,
            ),
          ]
        : []),
    ],
  };
}

/**
 * A policy of ingress gateway pods, moved onto the Gateway API gateways that replace those pods with
 * `targetRefs`: one copy per gateway namespace (a policy can only target objects of its own namespace).
 */
function ontoNewGateways(
  m: AuthStep,
  policy: KubeObject,
  spec: PolicySpec,
  make: (name: string, namespace: string, spec: PolicySpec) => KubeObject,
): { outputs: KubeObject[]; notes: Note[] } {
  const ns = policy.metadata.namespace ?? 'default';
  const name = policy.metadata.name ?? '';
  const byNamespace = new Map<string, NewGateway[]>();
  for (const g of selectedGateways(m.input, m.gateways, policy)) addTo(byNamespace, g.namespace, g);
  const outputs: KubeObject[] = [];
  const notes: Note[] = [];
  for (const [gns, list] of [...byNamespace].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const n = gns === ns ? name : m.draft.freeName(Group.IstioSecurity, policy.kind, gns, name);
    const targetRefs = list.map((g) => ({ group: Group.GatewayApi, kind: 'Gateway', name: g.name }));
    outputs.push(make(n, gns, withTargetRefs(spec, targetRefs)));
    const where = list.map((g) => `${g.namespace}/${g.name}`).join(', ');
    const move = gns !== ns ? ` (moved from namespace ${ns} to ${gns}, where the Gateway is)` : '';
    notes.push(changed('spec.selector', `gateway policy: targets Gateway ${where}${move}`));
  }
  return { outputs, notes };
}

/** RequestAuthentications follow the policies that read their tokens: onto gateways or waypoints. */
export function requestAuthentications(facts: Pick<Facts, AuthFacts>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const ra of m.input.snapshot.list(GroupKind.RequestAuthentication)) {
    const ns = ra.metadata.namespace ?? 'default';
    if (m.scope.isKept(ns)) continue;
    const spec = specOf(ra, 'security.istio.io/RequestAuthentication');
    if (isTargeted(spec)) continue;
    const make = (n: string, namespace: string, s: PolicySpec): KubeObject => ({
      apiVersion: `${Group.IstioSecurity}/v1`,
      kind: 'RequestAuthentication',
      metadata: {
        name: n,
        namespace,
        ...(ra.metadata.labels ? { labels: { ...ra.metadata.labels } } : {}),
      },
      spec: s,
    });
    if (m.input.isMeshWide(ra)) {
      m.draft.note(
        ra,
        action(
          '',
          'mesh-wide: ztunnel does not read tokens; attach it to the gateways and waypoints that need it with targetRefs',
        ),
      );
      continue;
    }
    const outputs: KubeObject[] = [];
    const moved = ontoNewGateways(m, ra, spec, make);
    outputs.push(...moved.outputs);
    m.draft.note(ra, ...moved.notes);
    if (moved.outputs.length > 0 && m.input.selectsPod(ra, m.gateways.oldGatewaysInUse)) {
      outputs.push(ra);
      m.draft.note(
        ra,
        changed(
          '',
          'also kept as it is: the old gateway stays (it serves namespaces that stay in sidecar mode, or controllers build on it)',
        ),
      );
    }
    const pods = m.scope.selected(ra);
    if (pods.length > 0) {
      const targets = waypointTargets(m, ra, pods);
      if (targets.size > 0) {
        const targeted = targetedCopies(m, ra, spec, targets, make, ra.metadata.name ?? '');
        outputs.push(...targeted.outputs);
        m.draft.note(ra, changed('spec.selector', `read by the waypoint (targets ${targeted.text})`));
      } else {
        outputs.push(ra);
        m.draft.note(
          ra,
          action(
            'spec.selector',
            'no Service selects these pods for a waypoint to serve; ztunnel does not read tokens',
          ),
        );
      }
    }
    if (outputs.length > 0) m.draft.replace(ra, outputs);
  }
  return m.draft.done();
}

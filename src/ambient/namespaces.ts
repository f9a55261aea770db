/**
 * Migration phase: namespaces and pods. Which namespaces stay in sidecar mode (and why); the waypoints the
 * other phases asked for, and the Services that use them; namespace labels (ambient instead of injection),
 * pod templates and running pods without sidecars; Sidecars, EnvoyFilters and ISTIO_MUTUAL, which ambient
 * mode has no use for.
 */
import { withoutInjection } from '../model/sidecar.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { isKind, specOf, type DestinationRuleSpec } from '../model/specs.ts';
import { isKnativeMode, parseDeploymentMode, ModeName } from '../kserve/config.ts';
import { KnativeConfigMaps } from '../kserve/knative.ts';
import { isConfigMapOf } from '../model/inputs.ts';
import type { KubeObject } from '../model/object.ts';
import { gatewayClassOf } from '../model/specs.ts';
import { Annotation, GatewayClass, Label, GroupKind, Group } from '../model/vocabulary.ts';
import {
  MigrationInput,
  Scope,
  actionOf,
  isTargeted,
  step,
  type Facts,
  type Kept,
  type Step,
} from './context.ts';
import { needsWaypoint } from './policies.ts';
import { admitsPeer } from '../mesh/authorization.ts';
import { platformFlows } from '../flows/flows.ts';
import { principalOf } from '../model/identity.ts';
import { ProxyKind, type Workload } from '../mesh/workloads.ts';
import { learnt, type OutputView, type Phase } from './output.ts';
import { Outcome, action, changed } from './migration-report.ts';

/**
 * Namespaces that stay in sidecar mode: the ones labelled `kfmesh.io/mode: sidecar`, and the ones that
 * run Knative (Serverless InferenceServices, Knative Services, Knative Serving itself), which has no
 * ambient support (KEP-2676). Their objects are left as they are.
 */
export function keptNamespaces({ input }: Pick<Facts, 'input'>): Phase<Scope> {
  const kept = new Map<string, Kept>();
  const serverless: KubeObject[] = [];
  const keep = (ns: string, why: string, fix?: string) => {
    if (!kept.has(ns)) kept.set(ns, { why, ...(fix ? { fix } : {}) });
  };
  const moveModels = `move its models to ${ModeName.Standard} mode, then migrate it`;
  if (input.only)
    for (const ns of input.snapshot.list(GroupKind.Namespace)) {
      const name = ns.metadata.name ?? '';
      if (!input.only.has(name))
        kept.set(name, { why: 'is not among the namespaces to move', untouched: true });
    }
  for (const ns of input.snapshot.list(GroupKind.Namespace))
    if (ns.metadata.labels?.[Label.Mode] === 'sidecar')
      keep(ns.metadata.name ?? '', `labelled ${Label.Mode}: sidecar`);
  const defaultMode = input.kserve.defaultDeploymentMode;
  for (const isvc of input.snapshot.list(GroupKind.InferenceService)) {
    const annotated = parseDeploymentMode(isvc.metadata.annotations?.[Annotation.DeploymentMode]);
    const mode = annotated ?? parseDeploymentMode(defaultMode);
    if (mode === undefined || !isKnativeMode(mode)) continue;
    serverless.push(isvc);
    keep(
      isvc.metadata.namespace ?? 'default',
      `runs the ${ModeName.Knative} InferenceService ${isvc.metadata.name}, and Knative has no ambient support`,
      moveModels,
    );
  }
  for (const ksvc of input.snapshot.list(GroupKind.KnativeService))
    keep(
      ksvc.metadata.namespace ?? 'default',
      `runs the Knative Service ${ksvc.metadata.name}, and Knative has no ambient support`,
      'move its services off Knative, then migrate it',
    );
  for (const cm of input.snapshot.list(GroupKind.ConfigMap))
    if (isConfigMapOf(KnativeConfigMaps.domain, cm) || isConfigMapOf(KnativeConfigMaps.network, cm))
      keep(
        cm.metadata.namespace ?? 'default',
        'runs Knative Serving, which has no ambient support',
        `it can go once no ${ModeName.Knative} model is left`,
      );
  return learnt(new Scope(input, kept, serverless, heldSidecars(input, kept)));
}

/**
 * Workloads of moved namespaces that keep their sidecar: a flow of the platform (flows/flows.ts) comes to
 * them from a client that stays in sidecar mode, and an ALLOW policy of theirs that admits that client
 * needs L7 (so it would move to a waypoint). Such a client skips waypoints, so ztunnel's guard would refuse
 * it, and widening the guard would skip the policy's L7 conditions (docs/semantics.md, Sidecar clients of
 * L7 policies). Other callers that keep sidecars lose such calls, which verify reports as warnings.
 */
function heldSidecars(input: MigrationInput, kept: ReadonlyMap<string, Kept>): Map<string, Kept> {
  const held = new Map<string, Kept>();
  if (kept.size === 0) return held;
  const key = (w: Workload) => `${w.namespace}/${w.name}`;
  const sidecars = input.mesh.workloads.filter((w) => w.proxy === ProxyKind.Sidecar);
  const policies = input.snapshot.list(GroupKind.AuthorizationPolicy).filter((p) => {
    const spec = specOf(p, 'security.istio.io/AuthorizationPolicy');
    return (
      actionOf(p) === 'ALLOW' &&
      !isTargeted(spec) &&
      !input.isMeshWide(p) &&
      !kept.has(p.metadata.namespace ?? 'default') &&
      needsWaypoint(spec)
    );
  });
  for (const flow of platformFlows(input.mesh)) {
    if (flow.intent !== 'answered') continue;
    const client = sidecars.find((w) => key(w) === flow.request.from && kept.has(w.namespace));
    const service = input.mesh.serviceByHostname.get(new URL(flow.request.url).hostname);
    if (!client || !service?.selector || kept.has(service.namespace)) continue;
    const pods = sidecars.filter(
      (w) => w.namespace === service.namespace && labelsMatch(w.labels, service.selector ?? {}),
    );
    const peer = { principal: principalOf(client, input.trustDomain), ip: client.ip };
    for (const policy of policies) {
      const namespaceWide = specOf(policy, 'security.istio.io/AuthorizationPolicy').selector === undefined;
      const selected = pods.filter((w) =>
        namespaceWide ? w.namespace === policy.metadata.namespace : input.selectsPod(policy, [w]),
      );
      if (selected.length === 0 || !admitsPeer(policy, peer)) continue;
      const why = `serves a flow of the platform from ${client.namespace}, which keeps sidecars and so skips waypoints (${flow.name}), and AuthorizationPolicy ${policy.metadata.namespace ?? 'default'}/${policy.metadata.name ?? ''} needs L7`;
      for (const pod of selected)
        if (!held.has(key(pod)))
          held.set(key(pod), { why, fix: `it goes ambient when ${client.namespace} moves` });
    }
  }
  return held;
}

export function waypoints(facts: Pick<Facts, 'input' | 'waypoints'>, output: OutputView): Phase {
  const m = step(facts, output);
  const namespaces = new Set<string>([
    ...m.waypoints.namespaces.keys(),
    ...[...m.waypoints.services.values()].map((s) => s.service.namespace),
  ]);
  for (const ns of [...namespaces].sort()) {
    const existing = m.input.snapshot
      .list(GroupKind.Gateway, ns)
      .some((g) => gatewayClassOf(g) === GatewayClass.Waypoint);
    const why = m.waypoints.namespaces.has(ns)
      ? [...(m.waypoints.namespaces.get(ns) ?? [])].join(', ')
      : [...m.waypoints.services.values()]
          .filter((s) => s.service.namespace === ns)
          .flatMap((s) => [...s.reasons])
          .filter((r, i, all) => all.indexOf(r) === i)
          .join(', ');
    if (!existing)
      m.draft.add(
        {
          apiVersion: `${Group.GatewayApi}/v1`,
          kind: 'Gateway',
          metadata: { name: m.input.waypointName, namespace: ns, labels: { [Label.WaypointFor]: 'service' } },
          spec: {
            gatewayClassName: GatewayClass.Waypoint,
            listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }],
          },
        },
        `the waypoint of namespace ${ns}, for L7: ${why}`,
      );
  }
  for (const { service, reasons } of m.waypoints.services.values()) {
    if (m.waypoints.namespaces.has(service.namespace)) continue;
    const current = m.draft.current(service.object);
    m.draft.change(service.object, {
      ...current,
      metadata: {
        ...current.metadata,
        labels: {
          ...current.metadata.labels,
          [Label.UseWaypoint]: m.input.waypointName,
          [Label.IngressUseWaypoint]: 'true',
        },
      },
    });
    m.draft.note(
      service.object,
      changed(
        'metadata.labels',
        `uses waypoint ${service.namespace}/${m.input.waypointName}, also for traffic from ingress (${[...reasons].join(', ')})`,
      ),
    );
  }
  return m.draft.done();
}

export function namespacesAndWorkloads(
  facts: Pick<Facts, 'input' | 'scope' | 'waypoints'>,
  output: OutputView,
): Phase {
  const m = step(facts, output);
  const migrated = namespaces(m);
  workloadTemplates(m, migrated);
  runningPods(m, migrated);
  return m.draft.done();
}

/** Namespace labels: ambient instead of injection, or kept in sidecar mode (with the mode label). */
function namespaces(m: Step<'input' | 'scope' | 'waypoints'>): Set<string> {
  const migrated = new Set<string>();
  for (const ns of m.input.snapshot.list(GroupKind.Namespace)) {
    const name = ns.metadata.name ?? '';
    const labels = { ...ns.metadata.labels };
    const injected = labels[Label.IstioInjection] === 'enabled' || labels[Label.IstioRev] !== undefined;
    const kept = m.scope.kept.get(name);
    if (kept !== undefined) {
      if (!injected || kept.untouched) continue;
      if (labels[Label.Mode] !== 'sidecar') {
        m.draft.change(ns, {
          ...ns,
          metadata: { ...ns.metadata, labels: { ...labels, [Label.Mode]: 'sidecar' } },
        });
        m.draft.note(
          ns,
          changed(`metadata.labels.${Label.Mode}`, 'sidecar: rendered in sidecar mode from now on'),
        );
      }
      const message = `stays in sidecar mode: it ${kept.why}`;
      m.draft.note(
        ns,
        kept.fix ? action('metadata.labels', `${message}; ${kept.fix}`) : changed('metadata.labels', message),
      );
      continue;
    }
    if (!injected && labels[Label.DataplaneMode] !== 'ambient') continue;
    migrated.add(name);
    if (!injected && !m.waypoints.namespaces.has(name)) continue;
    Reflect.deleteProperty(labels, Label.IstioInjection);
    Reflect.deleteProperty(labels, Label.IstioRev);
    labels[Label.DataplaneMode] = 'ambient';
    // kfmesh's controller renders the namespace in ambient mode from now on, whatever its default.
    labels[Label.Mode] = 'ambient';
    if (m.waypoints.namespaces.has(name)) {
      labels[Label.UseWaypoint] = m.input.waypointName;
      labels[Label.IngressUseWaypoint] = 'true';
    }
    m.draft.change(ns, { ...ns, metadata: { ...ns.metadata, labels } });
    m.draft.note(
      ns,
      changed(
        'metadata.labels',
        `istio-injection → ${Label.DataplaneMode}: ambient, ${Label.Mode}: ambient${m.waypoints.namespaces.has(name) ? `; every Service uses waypoint ${m.input.waypointName}` : ''}`,
      ),
    );
  }
  return migrated;
}

/**
 * Pod templates of migrated namespaces: opted-out pods stay out; a pod's own injection opt-in goes, except
 * on workloads that keep their sidecar (`Scope.held`), which opt in (the namespace no longer injects).
 */
function workloadTemplates(m: Step<'input' | 'scope'>, migrated: ReadonlySet<string>): void {
  for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet']) {
    for (const object of m.input.snapshot.list(`apps/${kind}`)) {
      if (!migrated.has(object.metadata.namespace ?? 'default')) continue;
      const spec = specOf(
        object,
        kind === 'Deployment'
          ? 'apps/Deployment'
          : kind === 'StatefulSet'
            ? 'apps/StatefulSet'
            : 'apps/DaemonSet',
      );
      const meta = spec.template?.metadata ?? {};
      let labels = { ...meta.labels };
      let annotations = { ...meta.annotations };
      const held = m.scope.held.get(
        `${object.metadata.namespace ?? 'default'}/${object.metadata.name ?? ''}`,
      );
      if (held !== undefined && !optedOut(labels, annotations)) {
        if (labels[Label.SidecarInject] === 'true') continue;
        labels[Label.SidecarInject] = 'true';
        annotations = without(annotations, Label.SidecarInject);
        m.draft.note(
          object,
          action(
            `spec.template.metadata.labels.${Label.SidecarInject}`,
            `"true": keeps its sidecar in the ambient namespace, as it ${held.why}; ${held.fix ?? ''}`,
          ),
        );
      } else if (optedOut(labels, annotations) && alreadyAmbient(m, object)) {
        m.draft.note(object, action('spec.template.metadata.labels', alreadyAmbientNote(m)));
        continue;
      } else if (optedOut(labels, annotations)) {
        labels[Label.DataplaneMode] = 'none';
        m.draft.note(
          object,
          changed(
            'spec.template.metadata.labels',
            `opted out of injection: stays out of the mesh (${Label.DataplaneMode}: none)`,
          ),
        );
      } else if (labels[Label.SidecarInject] === 'true' || annotations[Label.SidecarInject] === 'true') {
        // The injector honours a pod's own opt-in in any namespace without an injection label: left in
        // place, it would give the pods a sidecar in an ambient namespace.
        labels = without(labels, Label.SidecarInject);
        annotations = without(annotations, Label.SidecarInject);
        m.draft.note(
          object,
          changed(
            `spec.template.metadata.labels.${Label.SidecarInject}`,
            'removed: the injector would still give the pods a sidecar in an ambient namespace',
          ),
        );
      } else continue;
      const nextMeta = { ...meta, labels, ...(meta.annotations ? { annotations } : {}) };
      m.draft.change(object, {
        ...object,
        spec: { ...spec, template: { ...spec.template, metadata: nextMeta } },
      });
    }
  }
}

/**
 * A workload that opted out of sidecars and is already in ambient mode in the input (its namespace carries
 * both labels, as upstream Kubeflow's ambient overlay leaves it): the migration's target already, left as
 * it is rather than taken out of the mesh, which would lift every policy that applies to it now.
 */
function alreadyAmbient(m: Step<'input'>, object: KubeObject): boolean {
  const ns = object.metadata.namespace ?? 'default';
  const name = object.metadata.name ?? '';
  return m.input.mesh.workloads.some(
    (w) => w.namespace === ns && w.name === name && w.proxy === ProxyKind.Ambient,
  );
}

/** What a person must do for a workload already in ambient mode: the mesh-wide policies refuse its callers. */
function alreadyAmbientNote(m: Step<'input'>): string {
  const denyAll = m.input.snapshot
    .list(GroupKind.AuthorizationPolicy)
    .filter(
      (p) =>
        m.input.isMeshWide(p) &&
        actionOf(p) === 'ALLOW' &&
        (specOf(p, 'security.istio.io/AuthorizationPolicy').rules ?? []).length === 0,
    )
    .map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
  const refused =
    denyAll.length > 0
      ? `; ${denyAll.join(', ')} refuses at ztunnel every caller no ALLOW policy names (the API server's webhook calls, which carry no identity, among them): write ALLOW policies for its callers, or take it out of the mesh (${Label.DataplaneMode}: none) as it was with sidecars`
      : '';
  return `opted out of sidecars and already in ambient mode (its namespace is labelled ${Label.DataplaneMode}: ambient): left as it is${refused}`;
}

/** Running pods of migrated namespaces, as they will run after a restart: without the sidecar (unless held). */
function runningPods(m: Step<'input' | 'scope'>, migrated: ReadonlySet<string>): void {
  let restarted = 0;
  const held = new Set(m.input.mesh.workloads.filter((w) => m.scope.keepsSidecar(w)).map((w) => w.object));
  for (const pod of m.input.snapshot.list(GroupKind.Pod)) {
    if (!migrated.has(pod.metadata.namespace ?? 'default') || held.has(pod)) continue;
    const given = { labels: pod.metadata.labels ?? {}, annotations: pod.metadata.annotations ?? {} };
    const hadSidecar = given.annotations[Annotation.SidecarStatus] !== undefined;
    const out = optedOut(given.labels, given.annotations) && !alreadyAmbient(m, pod);
    if (!out && !hadSidecar) continue;
    const { labels, annotations, spec } = withoutInjection(
      out ? { ...given.labels, [Label.DataplaneMode]: 'none' } : given.labels,
      given.annotations,
      specOf(pod, '/Pod'),
    );
    m.draft.change(pod, { ...pod, metadata: { ...pod.metadata, labels, annotations }, spec });
    if (hadSidecar) restarted++;
  }
  if (restarted > 0) {
    const first = m.input.snapshot.list(GroupKind.Pod).find((p) => m.draft.outcomeOf(p) === Outcome.Changed);
    if (first)
      m.draft.note(
        first,
        action(
          'spec.containers',
          `${restarted} running pod(s) carry sidecars: restart their workloads after relabelling so they run without (shown here as they will run)`,
        ),
      );
  }
}

/** Kept where they still apply: in namespaces that stay in sidecar mode, and mesh-wide while any does. */
function staysForSidecars(m: Step<'input' | 'scope'>, object: KubeObject): boolean {
  const ns = object.metadata.namespace ?? 'default';
  if (m.scope.isKept(ns)) return true;
  // A Sidecar's own selector; an EnvoyFilter is taken as namespace-wide (kept wherever a held pod runs).
  const selector = isKind(object, 'networking.istio.io/Sidecar')
    ? specOf(object, 'networking.istio.io/Sidecar').workloadSelector?.labels
    : undefined;
  const held = m.input.mesh.workloads.filter(
    (w) => m.scope.keepsSidecar(w) && (ns === m.input.root || w.namespace === ns),
  );
  const heldSelected = held.filter((w) => labelsMatch(w.labels, selector ?? {}));
  if (heldSelected.length > 0 && ns !== m.input.root) {
    m.draft.note(
      object,
      changed(
        '',
        `kept: it configures the sidecars of ${[...new Set(heldSelected.map((w) => `${w.namespace}/${w.name}`))].sort().join(', ')}, which stay`,
      ),
    );
    return true;
  }
  if (ns !== m.input.root || (m.scope.kept.size === 0 && held.length === 0)) return false;
  m.draft.note(
    object,
    changed(
      '',
      `kept: it applies mesh-wide, and ${[
        ...(m.scope.kept.size > 0
          ? [`namespaces ${[...m.scope.kept.keys()].sort().join(', ')} stay in sidecar mode`]
          : []),
        ...(m.scope.held.size > 0
          ? [`workloads ${[...m.scope.held.keys()].sort().join(', ')} keep their sidecars`]
          : []),
      ].join(', and ')}`,
    ),
  );
  return true;
}

/** Sidecars and EnvoyFilters configure sidecars, which ambient mode has none of. */
export function sidecarOnlyObjects(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const sidecar of m.input.snapshot.list(GroupKind.Sidecar)) {
    if (staysForSidecars(m, sidecar)) continue;
    m.draft.replace(sidecar, []);
    m.draft.note(
      sidecar,
      action(
        '',
        'ambient mode has no sidecars to scope: to limit what a workload reaches, use AuthorizationPolicies at the destination or egress through a waypoint',
      ),
    );
  }
  for (const filter of m.input.snapshot.list(GroupKind.EnvoyFilter)) {
    if (staysForSidecars(m, filter)) continue;
    m.draft.replace(filter, []);
    m.draft.note(
      filter,
      action(
        '',
        'EnvoyFilters patch sidecar configuration, which ambient mode does not have: re-create what it does on a waypoint or gateway (targetRefs), for example as a WasmPlugin or a Gateway API filter',
      ),
    );
  }
  return m.draft.done();
}

/** DestinationRules lose ISTIO_MUTUAL, which ztunnel's HBONE replaces. */
export function destinationRules(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  const keptSomewhere = m.scope.kept.size > 0;
  for (const dr of m.input.snapshot.list(GroupKind.DestinationRule)) {
    if (
      m.scope.isKept(dr.metadata.namespace ?? 'default') ||
      (dr.metadata.namespace === m.input.root && keptSomewhere)
    )
      continue;
    const { trafficPolicy: policy, ...others } = specOf(dr, 'networking.istio.io/DestinationRule');
    if (policy?.tls?.mode !== 'ISTIO_MUTUAL') continue;
    const { tls: _mutual, ...nextPolicy } = policy;
    const spec: DestinationRuleSpec =
      Object.keys(nextPolicy).length > 0 ? { ...others, trafficPolicy: nextPolicy } : others;
    const rest = Object.keys(spec).filter(
      (k) => k !== 'host' && k !== 'exportTo' && k !== 'workloadSelector',
    );
    if (rest.length === 0) {
      m.draft.replace(dr, []);
      m.draft.note(
        dr,
        changed(
          'spec.trafficPolicy.tls',
          'ISTIO_MUTUAL was all it set: ztunnel carries every connection over mTLS (HBONE)',
        ),
      );
    } else {
      m.draft.change(dr, { ...dr, spec });
      m.draft.note(
        dr,
        changed(
          'spec.trafficPolicy.tls',
          'ISTIO_MUTUAL removed: ztunnel carries every connection over mTLS; the rest applies at waypoints and gateways',
        ),
      );
    }
  }
  return m.draft.done();
}

/** A pod that opted out of sidecar injection (label or annotation). */
function optedOut(labels: Record<string, string>, annotations: Record<string, string>): boolean {
  return (labels[Label.SidecarInject] ?? annotations[Label.SidecarInject]) === 'false';
}

function without(record: Record<string, string>, key: string): Record<string, string> {
  return Object.fromEntries(Object.entries(record).filter(([k]) => k !== key));
}

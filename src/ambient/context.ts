/** The migration's context: its input, its output and report as they are built, and what phases share. */
import {
  isKind,
  specOf,
  type AuthorizationPolicySpec,
  type RequestAuthenticationSpec,
} from '../model/specs.ts';
import { kubeflowConfigFrom, type KubeflowConfig } from '../kubeflow/config.ts';
import { kserveConfigFrom, type KServeConfig } from '../kserve/config.ts';
import { type Snapshot, labelsMatch } from '../load/snapshot.ts';
import { compileMesh } from '../mesh/mesh.ts';
import type { MeshService } from '../mesh/services.ts';
import type { Workload } from '../mesh/workloads.ts';
import { addTo } from '../model/multimap.ts';
import { type KubeObject, objectKey, refOf } from '../model/object.ts';
import { type MigrationReport, type Note, Outcome, type ReportEntry } from './migration-report.ts';
import { gatewayServiceAccount, principalOf } from '../model/identity.ts';

/** Options of a migration. */
export interface MigrateOptions {
  clusterDomain?: string;
  /** Move only these namespaces; the others stay as they are (untouched, not even labelled). */
  only?: readonly string[];
}

/** The migrated configuration (sorted like every kfmesh output) and its report. */
export interface MigrationResult {
  objects: KubeObject[];
  report: MigrationReport;
}

export const security = 'security.istio.io';
export const gatewayApi = 'gateway.networking.k8s.io';

/** A new Gateway API gateway and the old gateway pods it replaces. */
export interface NewGateway {
  namespace: string;
  name: string;
  principal: string;
  pods: Workload[];
}

/**
 * The state every phase of a migration works on: the input and its compiled mesh, the output being built
 * (by object key) with the report entry of every input object, and what the phases learn for each other
 * (new gateways and the identities they replace, Services and namespaces that need a waypoint, routes
 * between Services, namespaces that stay in sidecar mode). The phases are functions over it (ingress.ts,
 * mesh-routes.ts, authorization.ts, namespaces.ts, controllers.ts), run in order by migrate.ts.
 */
export class Migration {
  readonly snapshot: Snapshot;
  readonly mesh: ReturnType<typeof compileMesh>;
  readonly trustDomain: string;
  readonly root: string;
  /** Kubeflow's settings, read once for every phase. */
  readonly kubeflow: KubeflowConfig;
  readonly waypointName: string;
  /** The output, by object key. */
  readonly out = new Map<string, KubeObject>();
  readonly entries = new Map<string, ReportEntry>();
  readonly added: MigrationReport['added'] = [];
  readonly newGateways = new Map<string, NewGateway>();
  /** Old gateway principal → the new gateways' principals. */
  readonly principalRenames = new Map<string, string[]>();
  /** Services that need a waypoint (by `ns/name`), and why. */
  readonly waypointServices = new Map<string, { service: MeshService; reasons: Set<string> }>();
  /** Namespaces whose every Service goes through the namespace's waypoint (a namespace-wide L7 policy). */
  readonly waypointNamespaces = new Map<string, Set<string>>();
  readonly waypointServicesByNamespace = new Map<string, MeshService[]>();
  #podsByNamespace: Map<string, Workload[]> | undefined;
  #kserve: KServeConfig | undefined;
  #servicesByNamespace: Map<string, MeshService[]> | undefined;
  /** Service `ns/name` → the Services (`ns/name`) whose mesh routes send to it, and the reverse. */
  readonly routedFrom = new Map<string, Set<string>>();
  readonly routesTo = new Map<string, Set<string>>();
  /** The waypoint Services each selector-based policy is enforced for. */
  readonly attachments = new Map<KubeObject, MeshService[]>();
  /** Namespaces that stay in sidecar mode, and why. */
  readonly kept = new Map<string, { why: string; fix?: string; untouched?: boolean }>();
  /** The namespaces to move when not all (`MigrateOptions.only`). */
  readonly only: ReadonlySet<string> | undefined;
  /** The Serverless InferenceServices (their namespaces stay in sidecar mode). */
  readonly serverless: KubeObject[] = [];
  /** Old gateway pods that stay: they serve routes of namespaces that stay in sidecar mode, or controllers build on them. */
  readonly oldGatewaysInUse = new Set<Workload>();
  /** Istio Gateways (`ns/name`) converted and also kept, because controllers build on them. */
  readonly gatewaysKeptForControllers = new Set<string>();

  constructor(snapshot: Snapshot, options: MigrateOptions) {
    this.snapshot = snapshot;
    this.mesh = compileMesh(snapshot, options.clusterDomain ? { clusterDomain: options.clusterDomain } : {});
    this.trustDomain = this.mesh.config.trustDomain;
    this.root = this.mesh.config.rootNamespace;
    this.kubeflow = kubeflowConfigFrom(snapshot);
    this.waypointName = this.kubeflow.waypointName;
    this.only = options.only ? new Set(options.only) : undefined;
  }

  /**
   * KServe's configuration (its defaults when the input has no `inferenceservice-config`), read once for
   * every phase; a malformed one is an InputError at its key and field (bad input, as for render).
   */
  get kserve(): KServeConfig {
    return (this.#kserve ??= kserveConfigFrom(this.snapshot, this.mesh.clusterDomain));
  }

  // ---- bookkeeping ----

  entry(object: KubeObject): ReportEntry {
    return this.entries.get(objectKey(refOf(object))) as ReportEntry;
  }

  note(object: KubeObject, note: Note): void {
    this.entry(object).notes.push(note);
  }

  /** Replaces an input object by new objects (none: removed). */
  replace(object: KubeObject, replacements: readonly KubeObject[], outcome?: Outcome): void {
    const ref = refOf(object);
    this.out.delete(objectKey(ref));
    for (const r of replacements) this.out.set(objectKey(refOf(r)), r);
    const entry = this.entry(object);
    entry.became = replacements.map(refOf);
    entry.outcome = outcome ?? (replacements.length === 0 ? Outcome.Removed : Outcome.Converted);
  }

  /** Changes an input object in place. */
  change(object: KubeObject, next: KubeObject): void {
    this.out.set(objectKey(refOf(object)), next);
    const entry = this.entry(object);
    if (entry.outcome === Outcome.Kept) entry.outcome = Outcome.Changed;
  }

  /** The current output version of an input object. */
  current(object: KubeObject): KubeObject {
    return this.out.get(objectKey(refOf(object))) ?? object;
  }

  add(object: KubeObject, reason: string): void {
    const key = objectKey(refOf(object));
    if (this.out.has(key)) return;
    this.out.set(key, object);
    this.added.push({ object: refOf(object), reason });
  }

  /** A name for a new object that no input or output object of that kind has in the namespace. */
  freeName(group: string, kind: string, namespace: string, name: string): string {
    let candidate = name;
    for (let i = 2; this.out.has(objectKey({ group, kind, namespace, name: candidate })); i++)
      candidate = `${name}-${i}`;
    return candidate;
  }

  isKept(namespace: string): boolean {
    return this.kept.has(namespace);
  }

  // ---- authorization ----

  needsWaypoint(service: MeshService, reason: string): void {
    const key = `${service.namespace}/${service.name}`;
    const known = this.waypointServices.get(key);
    if (known) {
      known.reasons.add(reason);
      return;
    }
    this.waypointServices.set(key, { service, reasons: new Set([reason]) });
    addTo(this.waypointServicesByNamespace, service.namespace, service);
  }

  /** Whether a pod runs a sidecar now and goes ambient with the migration (its namespace is not kept). */
  goesAmbient(w: Workload): boolean {
    return w.proxy === 'sidecar' && !this.isKept(w.namespace);
  }

  /** Pods in the mesh in sidecar mode (the ones policies applied to) that go ambient, by namespace. */
  sidecarPods(): Map<string, Workload[]> {
    if (this.#podsByNamespace) return this.#podsByNamespace;
    const index = new Map<string, Workload[]>();
    for (const w of this.mesh.workloads) if (this.goesAmbient(w)) addTo(index, w.namespace, w);
    this.#podsByNamespace = index;
    return index;
  }

  /** Services that select pods, by namespace. */
  selectingServices(namespace: string): readonly MeshService[] {
    if (!this.#servicesByNamespace) {
      const index = new Map<string, MeshService[]>();
      for (const s of this.mesh.services)
        if (s.selector !== undefined && Object.keys(s.selector).length > 0) addTo(index, s.namespace, s);
      this.#servicesByNamespace = index;
    }
    return this.#servicesByNamespace.get(namespace) ?? [];
  }

  /** The sidecar pods a selector-based or namespace-wide policy applies to. */
  selected(policy: KubeObject): Workload[] {
    const ns = policy.metadata.namespace ?? 'default';
    const selector = selectorOf(policy);
    const pods =
      ns === this.root && selector !== undefined
        ? [...this.sidecarPods().values()].flat()
        : (this.sidecarPods().get(ns) ?? []);
    return pods.filter((w) => labelsMatch(w.labels, selector ?? {}));
  }

  /** Whether a selector-based policy selects one of these gateway pods. */
  selectsPod(policy: KubeObject, pods: Iterable<Workload>): boolean {
    const ns = policy.metadata.namespace ?? 'default';
    const selector = selectorOf(policy);
    if (selector === undefined) return false;
    for (const p of pods)
      if ((ns === this.root || p.namespace === ns) && labelsMatch(p.labels, selector)) return true;
    return false;
  }

  /** The old gateway pods a policy applies to, and the new gateways that replace them. */
  selectedGateways(policy: KubeObject): NewGateway[] {
    return [...this.newGateways.values()].filter((g) => this.selectsPod(policy, g.pods));
  }

  selectsOldGatewayInUse(policy: KubeObject): boolean {
    return this.selectsPod(policy, this.oldGatewaysInUse);
  }

  /** The Services that select some of these pods. */
  servicesOf(pods: readonly Workload[]): MeshService[] {
    const namespaces = [...new Set(pods.map((p) => p.namespace))].sort();
    return namespaces.flatMap((ns) =>
      this.selectingServices(ns).filter((s) =>
        pods.some((p) => p.namespace === ns && labelsMatch(p.labels, s.selector ?? {})),
      ),
    );
  }

  /**
   * The Services whose waypoints can send requests to these pods: the ones that select them, and those
   * whose mesh routes send to one of those. A policy of the pods must be enforced for all of them: at a
   * waypoint a policy applies to the Service addressed, not to the pods the request ends at.
   */
  servicesReaching(pods: readonly Workload[]): MeshService[] {
    const direct = this.servicesOf(pods);
    const out = new Map<string, MeshService>(direct.map((s) => [`${s.namespace}/${s.name}`, s]));
    for (const s of direct)
      for (const parent of this.routedFrom.get(`${s.namespace}/${s.name}`) ?? []) {
        const known = this.waypointServices.get(parent);
        if (known && !out.has(parent)) out.set(parent, known.service);
      }
    return [...out.values()];
  }

  isMeshWide(policy: KubeObject): boolean {
    return (
      (policy.metadata.namespace ?? 'default') === this.root && policySpecOf(policy).selector === undefined
    );
  }

  behindWaypoint(pod: Workload): boolean {
    if (this.waypointNamespaces.has(pod.namespace)) return true;
    // Behind a waypoint: selected by a Service that uses one, or by one a mesh route sends requests to.
    return this.selectingServices(pod.namespace).some(
      (service) =>
        labelsMatch(pod.labels, service.selector ?? {}) &&
        (this.waypointServices.has(`${service.namespace}/${service.name}`) ||
          this.routedFrom.has(`${service.namespace}/${service.name}`)),
    );
  }

  /** The sidecar pods the Services (`ns/name`) select. */
  podsOfServices(keys: Iterable<string>): Workload[] {
    const out = new Set<Workload>();
    for (const key of keys) {
      const [ns = '', name = ''] = key.split('/');
      const service = this.selectingServices(ns).find((s) => s.name === name);
      if (!service) continue;
      for (const pod of this.sidecarPods().get(ns) ?? [])
        if (labelsMatch(pod.labels, service.selector ?? {})) out.add(pod);
    }
    return [...out];
  }

  waypointPrincipal(namespace: string): string {
    return principalOf(
      { namespace, serviceAccount: gatewayServiceAccount(this.waypointName, true) },
      this.trustDomain,
    );
  }
}

/** The spec of the policies the migration moves onto waypoints and gateways. */
export type PolicySpec = AuthorizationPolicySpec | RequestAuthenticationSpec;

/** An AuthorizationPolicy's or RequestAuthentication's spec. */
export function policySpecOf(policy: KubeObject): PolicySpec {
  return isKind(policy, 'security.istio.io/RequestAuthentication')
    ? specOf(policy, 'security.istio.io/RequestAuthentication')
    : specOf(policy, 'security.istio.io/AuthorizationPolicy');
}

/** True when the policy already names what enforces it (targetRefs). */
export function isTargeted(spec: PolicySpec): boolean {
  return spec.targetRefs !== undefined || spec.targetRef !== undefined;
}

/** A policy's action (ALLOW when unset). */
export function actionOf(policy: KubeObject): string {
  return specOf(policy, 'security.istio.io/AuthorizationPolicy').action ?? 'ALLOW';
}

/** A policy's `selector.matchLabels` (undefined: no selector). */
function selectorOf(policy: KubeObject): Record<string, string> | undefined {
  return policySpecOf(policy).selector?.matchLabels;
}

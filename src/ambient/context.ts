/** What the migration's phases read: its input, and the facts each phase learns for the ones after it. */
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
import type { KubeObject } from '../model/object.ts';
import type { MigrationReport } from './migration-report.ts';
import { Draft, type OutputView } from './output.ts';
import { gatewayServiceAccount, principalOf } from '../model/identity.ts';
import { hostMatches } from '../mesh/security.ts';

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
  /** The namespaces that stay in sidecar mode, and why. */
  kept: ReadonlyMap<string, Kept>;
}

/** A new Gateway API gateway and the old gateway pods it replaces. */
export interface NewGateway {
  namespace: string;
  name: string;
  principal: string;
  pods: Workload[];
}

/**
 * What every phase reads and none changes: the input, its compiled mesh, the settings of Istio, KServe
 * and Kubeflow, and indexes of the input. The phases are functions of it and of the facts earlier
 * phases learnt (the types below), run in order by migrate.ts, each returning its edits to the output
 * (output.ts) and its own facts.
 */
export class MigrationInput {
  readonly snapshot: Snapshot;
  readonly mesh: ReturnType<typeof compileMesh>;
  readonly trustDomain: string;
  readonly root: string;
  /** Kubeflow's settings, read once for every phase. */
  readonly kubeflow: KubeflowConfig;
  readonly waypointName: string;
  /** The namespaces to move when not all (`MigrateOptions.only`). */
  readonly only: ReadonlySet<string> | undefined;
  #kserve: KServeConfig | undefined;
  #servicesByNamespace: Map<string, MeshService[]> | undefined;

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

  /** The Services that select some of these pods. */
  servicesOf(pods: readonly Workload[]): MeshService[] {
    const namespaces = [...new Set(pods.map((p) => p.namespace))].sort();
    return namespaces.flatMap((ns) =>
      this.selectingServices(ns).filter((s) =>
        pods.some((p) => p.namespace === ns && labelsMatch(p.labels, s.selector ?? {})),
      ),
    );
  }

  /** Whether a selector-based policy selects one of these pods. */
  selectsPod(policy: KubeObject, pods: Iterable<Workload>): boolean {
    const ns = policy.metadata.namespace ?? 'default';
    const selector = selectorOf(policy);
    if (selector === undefined) return false;
    for (const p of pods)
      if ((ns === this.root || p.namespace === ns) && labelsMatch(p.labels, selector)) return true;
    return false;
  }

  isMeshWide(policy: KubeObject): boolean {
    return (
      (policy.metadata.namespace ?? 'default') === this.root && policySpecOf(policy).selector === undefined
    );
  }

  waypointPrincipal(namespace: string): string {
    return principalOf(
      { namespace, serviceAccount: gatewayServiceAccount(this.waypointName, true) },
      this.trustDomain,
    );
  }
}

/** Why a namespace stays in sidecar mode. */
export interface Kept {
  why: string;
  fix?: string;
  /** Not among the namespaces to move (`MigrateOptions.only`): not even labelled. */
  untouched?: boolean;
}

/**
 * The namespaces that stay in sidecar mode (the first phase's facts) and what follows for the pods: the
 * ones that run a sidecar now and go ambient, which the policies of the input applied to.
 */
export class Scope {
  readonly input: MigrationInput;
  readonly kept: ReadonlyMap<string, Kept>;
  /** The Serverless InferenceServices (their namespaces stay in sidecar mode). */
  readonly serverless: readonly KubeObject[];
  /**
   * Workloads (`ns/name`) of moved namespaces that keep their sidecar, and why: clients that stay in sidecar
   * mode call them, and a policy of theirs needs L7, which those clients (which skip waypoints) would
   * then meet nowhere (docs/semantics.md, Sidecar clients of L7 policies).
   */
  readonly held: ReadonlyMap<string, Kept>;
  #podsByNamespace: Map<string, Workload[]> | undefined;

  constructor(
    input: MigrationInput,
    kept: ReadonlyMap<string, Kept>,
    serverless: readonly KubeObject[],
    held: ReadonlyMap<string, Kept> = new Map(),
  ) {
    this.input = input;
    this.kept = kept;
    this.serverless = serverless;
    this.held = held;
  }

  isKept(namespace: string): boolean {
    return this.kept.has(namespace);
  }

  /** Whether a workload of a moved namespace keeps its sidecar (`held`). */
  keepsSidecar(w: { namespace: string; name: string }): boolean {
    return this.held.has(`${w.namespace}/${w.name}`);
  }

  /** Whether a pod runs a sidecar now and goes ambient with the migration (its namespace is not kept). */
  goesAmbient(w: Workload): boolean {
    return w.proxy === 'sidecar' && !this.isKept(w.namespace) && !this.keepsSidecar(w);
  }

  /** Pods in the mesh in sidecar mode (the ones policies applied to) that go ambient, by namespace. */
  sidecarPods(): ReadonlyMap<string, readonly Workload[]> {
    if (this.#podsByNamespace) return this.#podsByNamespace;
    const index = new Map<string, Workload[]>();
    for (const w of this.input.mesh.workloads) if (this.goesAmbient(w)) addTo(index, w.namespace, w);
    this.#podsByNamespace = index;
    return index;
  }

  /** The sidecar pods a selector-based or namespace-wide policy applies to. */
  selected(policy: KubeObject): Workload[] {
    const ns = policy.metadata.namespace ?? 'default';
    const selector = selectorOf(policy);
    const pods =
      ns === this.input.root && selector !== undefined
        ? [...this.sidecarPods().values()].flat()
        : (this.sidecarPods().get(ns) ?? []);
    return pods.filter((w) => labelsMatch(w.labels, selector ?? {}));
  }

  /** The sidecar pods the Services (`ns/name`) select. */
  podsOfServices(keys: Iterable<string>): Workload[] {
    const out = new Set<Workload>();
    for (const key of keys) {
      const [ns = '', name = ''] = key.split('/');
      const service = this.input.selectingServices(ns).find((s) => s.name === name);
      if (!service) continue;
      for (const pod of this.sidecarPods().get(ns) ?? [])
        if (labelsMatch(pod.labels, service.selector ?? {})) out.add(pod);
    }
    return [...out];
  }
}

/** The gateway phase's facts: the Gateway API gateways, whose identities replace whose, what old gateways stay. */
export interface GatewayPlan {
  /** By the old Istio Gateway's `ns/name`. */
  readonly newGateways: ReadonlyMap<string, NewGateway>;
  /** Old gateway principal → the principals that replace it (itself among them while its pods stay). */
  readonly principalRenames: ReadonlyMap<string, readonly string[]>;
  /** Old gateway pods that stay: they serve routes of namespaces that stay in sidecar mode, or controllers build on them. */
  readonly oldGatewaysInUse: ReadonlySet<Workload>;
  /** Istio Gateways (`ns/name`) converted and also kept, because controllers build on them. */
  readonly keptForControllers: ReadonlySet<string>;
  /**
   * By the old Istio Gateway's `ns/name`: the hosts it keeps serving as the one front door, because routes
   * of namespaces that stay in sidecar mode use them there (docs/semantics.md, One front door). A route of a
   * moved namespace on one of these hosts stays on the old gateway too, so no host is split between two.
   */
  readonly heldHosts: ReadonlyMap<string, readonly string[]>;
}

/** Whether a route's hosts meet a host the old gateway keeps (`GatewayPlan.heldHosts`). */
export function isHeld(plan: GatewayPlan, gateway: string, hosts: readonly string[]): boolean {
  return hostsMeet(hosts, plan.heldHosts.get(gateway) ?? []);
}

/**
 * Whether a held host takes requests for one of these hosts (`*` and `*.suffix` cover the hosts they
 * match). A wildcard route beside a more specific held host can move: on the old gateway the held host's
 * own virtual host takes its requests, and clients of every other host can use the new gateway.
 */
export function hostsMeet(hosts: readonly string[], held: readonly string[]): boolean {
  return hosts.some((h) => held.some((k) => hostMatches(k, h)));
}

/** The old gateway pods a policy applies to, and the new gateways that replace them. */
export function selectedGateways(input: MigrationInput, plan: GatewayPlan, policy: KubeObject): NewGateway[] {
  return [...plan.newGateways.values()].filter((g) => input.selectsPod(policy, g.pods));
}

/** The route phase's facts: Service `ns/name` → the Services whose mesh routes send to it, and the reverse. */
export interface RouteGraph {
  readonly routedFrom: ReadonlyMap<string, ReadonlySet<string>>;
  readonly routesTo: ReadonlyMap<string, ReadonlySet<string>>;
}

/** A Service that needs a waypoint, and why. */
export interface WaypointNeed {
  readonly service: MeshService;
  readonly reason: string;
}

/**
 * The waypoint plan (the facts of the route and policy phases): the Services that use a waypoint and
 * why, the namespaces whose every Service does (a namespace-wide L7 policy), and with the route graph
 * which pods end up behind a waypoint.
 */
export class WaypointPlan {
  readonly input: MigrationInput;
  readonly routes: RouteGraph;
  /** By Service `ns/name`. */
  readonly services: ReadonlyMap<string, { service: MeshService; reasons: ReadonlySet<string> }>;
  readonly namespaces: ReadonlyMap<string, ReadonlySet<string>>;

  constructor(
    input: MigrationInput,
    routes: RouteGraph,
    needs: readonly WaypointNeed[],
    namespaces: ReadonlyMap<string, ReadonlySet<string>>,
  ) {
    this.input = input;
    this.routes = routes;
    const services = new Map<string, { service: MeshService; reasons: Set<string> }>();
    for (const { service, reason } of needs) {
      const key = `${service.namespace}/${service.name}`;
      const known = services.get(key);
      if (known) known.reasons.add(reason);
      else services.set(key, { service, reasons: new Set([reason]) });
    }
    this.services = services;
    this.namespaces = namespaces;
  }

  isEmpty(): boolean {
    return this.services.size === 0 && this.namespaces.size === 0;
  }

  behindWaypoint(pod: Workload): boolean {
    if (this.namespaces.has(pod.namespace)) return true;
    // Behind a waypoint: selected by a Service that uses one, or by one a mesh route sends requests to.
    return this.input
      .selectingServices(pod.namespace)
      .some(
        (service) =>
          labelsMatch(pod.labels, service.selector ?? {}) &&
          (this.services.has(`${service.namespace}/${service.name}`) ||
            this.routes.routedFrom.has(`${service.namespace}/${service.name}`)),
      );
  }

  /**
   * The Services whose waypoints can send requests to these pods: the ones that select them, and those
   * whose mesh routes send to one of those. A policy of the pods must be enforced for all of them: at a
   * waypoint a policy applies to the Service addressed, not to the pods the request ends at.
   */
  servicesReaching(pods: readonly Workload[]): MeshService[] {
    const direct = this.input.servicesOf(pods);
    const out = new Map<string, MeshService>(direct.map((s) => [`${s.namespace}/${s.name}`, s]));
    for (const s of direct)
      for (const parent of this.routes.routedFrom.get(`${s.namespace}/${s.name}`) ?? []) {
        const known = this.services.get(parent);
        if (known && !out.has(parent)) out.set(parent, known.service);
      }
    return [...out.values()];
  }
}

/** The waypoint Services each selector-based AuthorizationPolicy is enforced for (the attach phase's facts). */
export type Attachments = ReadonlyMap<KubeObject, readonly MeshService[]>;

/**
 * Everything a phase may read: the input and the facts of the phases before it. A phase takes the part
 * it needs (`Pick<Facts, …>`), so it cannot run before the phases that learn those facts.
 */
export interface Facts {
  readonly input: MigrationInput;
  readonly scope: Scope;
  readonly gateways: GatewayPlan;
  readonly routes: RouteGraph;
  readonly waypoints: WaypointPlan;
  readonly attachments: Attachments;
}

/** What a phase works with while it runs: the facts it reads, and its own draft of edits. */
export type Step<K extends keyof Facts> = Pick<Facts, K> & { readonly draft: Draft };

/** A phase's working record: its facts and a fresh draft over the output. */
export function step<K extends keyof Facts>(facts: Pick<Facts, K>, output: OutputView): Step<K> {
  return { ...facts, draft: new Draft(output) };
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

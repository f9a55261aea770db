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
 */
import { gatewayClassOf } from '../model/specs.ts';
import { addTo } from '../model/multimap.ts';
import { compareRefs, refOf, type KubeObject, type ObjectRef } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { Mesh as MeshGateway, resolveGatewayName, resolveShortName } from '../mesh/virtual-services.ts';
import { principalOf, type Workload } from '../mesh/workloads.ts';
import type { MeshService } from '../mesh/services.ts';
import { kubeflowConfigFrom } from '../kubeflow/config.ts';
import { isKnativeMode, kserveConfigFrom, parseDeploymentMode } from '../kserve/config.ts';
import { convertGateway, gatewayApiPrincipal } from './gateways.ts';
import { renamePrincipals, usesL7, withServicePorts, withTargetRefs, ztunnelPart } from './policies.ts';
import {
  action,
  changed,
  dropped,
  NoteKind,
  Outcome,
  type MigrationReport,
  type Note,
  type ReportEntry,
} from './migration-report.ts';
import { convertHttpRoutes, type BackendTarget, type RouteContext } from './http-routes.ts';
import { Annotation, Label, GatewayClass } from '../model/vocabulary.ts';

type Json = Record<string, unknown>;

/** Options of a migration. */
export interface MigrateOptions {
  clusterDomain?: string;
}

/** The migrated configuration (sorted like every kfmesh output) and its report. */
export interface MigrationResult {
  objects: KubeObject[];
  report: MigrationReport;
}

const istio = 'networking.istio.io';
const security = 'security.istio.io';
const gatewayApi = 'gateway.networking.k8s.io';

const keyOf = (r: ObjectRef) => `${r.group}/${r.kind}/${r.namespace}/${r.name}`;

/** Converts a sidecar-mode configuration to ambient mode. */
export function migrateToAmbient(snapshot: Snapshot, options: MigrateOptions = {}): MigrationResult {
  return new Migration(snapshot, options).run();
}

/** A new Gateway API gateway and the old gateway pods it replaces. */
interface NewGateway {
  namespace: string;
  name: string;
  principal: string;
  pods: Workload[];
}

class Migration {
  readonly #snapshot: Snapshot;
  readonly #mesh: ReturnType<typeof compileMesh>;
  readonly #trustDomain: string;
  readonly #root: string;
  readonly #waypointName: string;
  /** The output, by object key. */
  readonly #out = new Map<string, KubeObject>();
  readonly #entries = new Map<string, ReportEntry>();
  readonly #added: MigrationReport['added'] = [];
  readonly #newGateways = new Map<string, NewGateway>();
  /** Old gateway principal → the new gateways' principals. */
  readonly #principalRenames = new Map<string, string[]>();
  /** Services that need a waypoint (by `ns/name`), and why. */
  readonly #waypointServices = new Map<string, { service: MeshService; reasons: Set<string> }>();
  /** Namespaces whose every Service goes through the namespace's waypoint (a namespace-wide L7 policy). */
  readonly #waypointNamespaces = new Map<string, Set<string>>();
  readonly #waypointServicesByNamespace = new Map<string, MeshService[]>();
  #podsByNamespace: Map<string, Workload[]> | undefined;
  #servicesByNamespace: Map<string, MeshService[]> | undefined;
  /** Service `ns/name` → the Services (`ns/name`) whose mesh routes send to it, and the reverse. */
  readonly #routedFrom = new Map<string, Set<string>>();
  readonly #routesTo = new Map<string, Set<string>>();
  /** The waypoint Services each selector-based policy is enforced for. */
  readonly #attachments = new Map<KubeObject, MeshService[]>();
  /** Namespaces that stay in sidecar mode, and why. */
  readonly #kept = new Map<string, { why: string; fix?: string }>();
  /** The Serverless InferenceServices (their namespaces stay in sidecar mode). */
  readonly #serverless: KubeObject[] = [];
  /** Old gateway pods that still serve Istio Gateways (routes of namespaces that stay in sidecar mode). */
  readonly #oldGatewaysInUse = new Set<Workload>();

  constructor(snapshot: Snapshot, options: MigrateOptions) {
    this.#snapshot = snapshot;
    this.#mesh = compileMesh(snapshot, options.clusterDomain ? { clusterDomain: options.clusterDomain } : {});
    this.#trustDomain = this.#mesh.config.trustDomain;
    this.#root = this.#mesh.config.rootNamespace;
    this.#waypointName = kubeflowConfigFrom(snapshot).waypointName;
  }

  run(): MigrationResult {
    for (const object of this.#snapshot.all()) {
      const ref = refOf(object);
      this.#out.set(keyOf(ref), object);
      const location = this.#snapshot.locate(object);
      this.#entries.set(keyOf(ref), {
        object: ref,
        ...(location ? { location } : {}),
        outcome: Outcome.Kept,
        became: [ref],
        notes: [],
      });
    }
    this.#keptNamespaces();
    this.#gateways();
    this.#virtualServices();
    this.#classifyPolicies();
    this.#attachPolicies();
    this.#authorizationPolicies();
    this.#requestAuthentications();
    this.#waypoints();
    this.#namespacesAndWorkloads();
    this.#otherIstioObjects();
    this.#controllerOwned();
    const objects = [...this.#out.values()].sort((a, b) => compareRefs(refOf(a), refOf(b)));
    return { objects, report: { entries: [...this.#entries.values()], added: this.#added } };
  }

  // ---- bookkeeping ----

  #entry(object: KubeObject): ReportEntry {
    return this.#entries.get(keyOf(refOf(object))) as ReportEntry;
  }

  #note(object: KubeObject, note: Note): void {
    this.#entry(object).notes.push(note);
  }

  /** Replaces an input object by new objects (none: removed). */
  #replace(object: KubeObject, replacements: readonly KubeObject[], outcome?: Outcome): void {
    const ref = refOf(object);
    this.#out.delete(keyOf(ref));
    for (const r of replacements) this.#out.set(keyOf(refOf(r)), r);
    const entry = this.#entry(object);
    entry.became = replacements.map(refOf);
    entry.outcome = outcome ?? (replacements.length === 0 ? Outcome.Removed : Outcome.Converted);
  }

  /** Changes an input object in place. */
  #change(object: KubeObject, next: KubeObject): void {
    this.#out.set(keyOf(refOf(object)), next);
    const entry = this.#entry(object);
    if (entry.outcome === Outcome.Kept) entry.outcome = Outcome.Changed;
  }

  /** The current output version of an input object. */
  #current(object: KubeObject): KubeObject {
    return this.#out.get(keyOf(refOf(object))) ?? object;
  }

  #add(object: KubeObject, reason: string): void {
    const key = keyOf(refOf(object));
    if (this.#out.has(key)) return;
    this.#out.set(key, object);
    this.#added.push({ object: refOf(object), reason });
  }

  /** A name for a new object that no input or output object of that kind has in the namespace. */
  #freeName(group: string, kind: string, namespace: string, name: string): string {
    let candidate = name;
    for (let i = 2; this.#out.has(keyOf({ group, kind, namespace, name: candidate })); i++)
      candidate = `${name}-${i}`;
    return candidate;
  }

  // ---- what stays in sidecar mode ----

  /**
   * Namespaces that stay in sidecar mode: the ones labelled `kfmesh.io/mode: sidecar`, and the ones that
   * run Knative (Serverless InferenceServices, Knative Services, Knative Serving itself), which has no
   * ambient support (KEP-2676). Their objects are left as they are.
   */
  #keptNamespaces(): void {
    const keep = (ns: string, why: string, fix?: string) => {
      if (!this.#kept.has(ns)) this.#kept.set(ns, { why, ...(fix ? { fix } : {}) });
    };
    const moveModels = 'move its models to RawDeployment, then migrate it';
    for (const ns of this.#snapshot.list('', 'Namespace'))
      if (ns.metadata.labels?.[Label.Mode] === 'sidecar')
        keep(ns.metadata.name ?? '', `labelled ${Label.Mode}: sidecar`);
    let defaultMode: string = 'Serverless';
    try {
      defaultMode = kserveConfigFrom(this.#snapshot, this.#mesh.clusterDomain).defaultDeploymentMode;
    } catch {
      // A broken KServe configuration is render's to report; migration assumes KServe's default.
    }
    for (const isvc of this.#snapshot.list('serving.kserve.io', 'InferenceService')) {
      const annotated = parseDeploymentMode(isvc.metadata.annotations?.[Annotation.DeploymentMode]);
      const mode = annotated ?? parseDeploymentMode(defaultMode);
      if (mode === undefined || !isKnativeMode(mode)) continue;
      this.#serverless.push(isvc);
      keep(
        isvc.metadata.namespace ?? 'default',
        `runs the Serverless InferenceService ${isvc.metadata.name}, and Knative has no ambient support`,
        moveModels,
      );
    }
    for (const ksvc of this.#snapshot.list('serving.knative.dev', 'Service'))
      keep(
        ksvc.metadata.namespace ?? 'default',
        `runs the Knative Service ${ksvc.metadata.name}, and Knative has no ambient support`,
        'move its services off Knative, then migrate it',
      );
    for (const cm of this.#snapshot.list('', 'ConfigMap'))
      if (cm.metadata.name === 'config-domain' || cm.metadata.name === 'config-network')
        keep(
          cm.metadata.namespace ?? 'default',
          'runs Knative Serving, which has no ambient support',
          'it can go once no Serverless model is left',
        );
  }

  #isKept(namespace: string): boolean {
    return this.#kept.has(namespace);
  }

  // ---- ingress ----

  /** Istio Gateways bound by some VirtualService become Gateway API Gateways; the rest are left out. */
  #gateways(): void {
    const bound = new Set<string>();
    const boundByKept = new Set<string>();
    for (const vs of this.#snapshot.list(istio, 'VirtualService')) {
      const ns = vs.metadata.namespace ?? 'default';
      const gateways = ((vs['spec'] ?? {}) as { gateways?: string[] }).gateways ?? [];
      for (const g of gateways) (this.#isKept(ns) ? boundByKept : bound).add(resolveGatewayName(g, ns));
    }
    for (const gateway of this.#snapshot.list(istio, 'Gateway')) {
      const ns = gateway.metadata.namespace ?? 'default';
      const name = gateway.metadata.name ?? '';
      const selector = ((gateway['spec'] ?? {}) as { selector?: Record<string, string> }).selector ?? {};
      const pods = this.#mesh.workloads.filter(
        (w) => Object.keys(selector).length > 0 && labelsMatch(w.labels, selector),
      );
      const stays = boundByKept.has(`${ns}/${name}`) || this.#isKept(ns);
      if (stays) for (const pod of pods) this.#oldGatewaysInUse.add(pod);
      if (!bound.has(`${ns}/${name}`)) {
        if (stays) {
          this.#note(gateway, changed('', `kept: it serves routes of namespaces that stay in sidecar mode`));
          continue;
        }
        this.#replace(gateway, []);
        this.#note(
          gateway,
          changed('', 'no VirtualService is bound to it: there is nothing to serve, so it is not converted'),
        );
        continue;
      }
      const notes: Note[] = [];
      const converted = convertGateway(gateway, notes);
      this.#replace(gateway, stays ? [gateway, converted] : [converted]);
      if (stays)
        notes.push(
          changed('', 'also kept as it is: it serves routes of namespaces that stay in sidecar mode'),
        );
      this.#entry(gateway).notes.push(...notes);
      const principal = gatewayApiPrincipal(this.#trustDomain, ns, name);
      this.#newGateways.set(`${ns}/${name}`, { namespace: ns, name, principal, pods });
      this.#note(
        gateway,
        action(
          '',
          `Istio deploys the gateway as Deployment and Service ${ns}/${name}-istio: point DNS or the load balancer at that Service for the converted routes, then ${stays ? 'keep' : 'remove'} the old gateway pods (${[...new Set(pods.map((p) => `${p.namespace}/${p.name}`))].join(', ') || 'none found'})${stays ? ', which go on serving the namespaces that stay in sidecar mode' : ''}`,
        ),
      );
      for (const pod of pods) {
        const old = principalOf(pod, this.#trustDomain);
        const list = this.#principalRenames.get(old) ?? [];
        if (!list.includes(principal)) list.push(principal);
        this.#principalRenames.set(old, list.sort());
      }
    }
    // An old gateway that still serves sidecar-mode routes keeps its identity beside the new ones.
    for (const pod of this.#oldGatewaysInUse) {
      const old = principalOf(pod, this.#trustDomain);
      const list = this.#principalRenames.get(old);
      if (list && !list.includes(old)) this.#principalRenames.set(old, [...list, old].sort());
    }
  }

  /** Every VirtualService becomes HTTPRoutes: one per parent (converted gateway, or mesh) with distinct rules. */
  #virtualServices(): void {
    for (const vs of this.#snapshot.list(istio, 'VirtualService'))
      if (!this.#isKept(vs.metadata.namespace ?? 'default')) this.#convertVirtualService(vs);
  }

  /** One VirtualService → HTTPRoutes: one per set of parents (converted gateways, or mesh) with the same rules. */
  #convertVirtualService(vs: KubeObject): void {
    const cd = this.#mesh.clusterDomain;
    const ns = vs.metadata.namespace ?? 'default';
    const spec = (vs['spec'] ?? {}) as Json;
    const notes: Note[] = [];
    const resolveGateway = (g: string) => resolveGatewayName(g, ns);
    const gateways =
      Array.isArray(spec['gateways']) && spec['gateways'].length > 0
        ? (spec['gateways'] as string[]).map(resolveGateway)
        : [MeshGateway];
    const hosts = (Array.isArray(spec['hosts']) ? (spec['hosts'] as string[]) : []).map((h) =>
      h.includes('*') ? h : resolveShortName(h, ns, cd),
    );
    for (const field of ['tcp', 'tls'])
      if (Array.isArray(spec[field]) && spec[field].length > 0)
        notes.push(
          dropped(
            `spec.${field}`,
            `${field.toUpperCase()} routes are not converted: write a ${field === 'tcp' ? 'TCPRoute' : 'TLSRoute'}`,
          ),
        );
    if (Array.isArray(spec['exportTo']) && !(spec['exportTo'] as string[]).includes('*'))
      notes.push(
        dropped(
          'spec.exportTo',
          'HTTPRoutes have no exportTo: the route applies to every client of its parents',
        ),
      );
    const context: RouteContext = {
      namespace: ns,
      expand: (h) => resolveShortName(h, ns, cd),
      resolve: (h) => this.#backend(h),
    };
    const http = Array.isArray(spec['http']) ? (spec['http'] as Json[]) : [];
    const groups: { parents: Json[]; rules: Json[]; hostnames: string[]; mesh: boolean; label: string }[] =
      [];
    for (const parent of gateways) {
      let parentRefs: Json[];
      let hostnames: string[] = [];
      let label: string;
      if (parent === MeshGateway) {
        parentRefs = this.#meshParents(vs, hosts, notes);
        label = 'mesh';
      } else {
        const target = this.#newGateways.get(parent);
        if (!target) {
          notes.push(dropped('spec.gateways', `gateway ${parent} does not exist; nothing is bound to it`));
          continue;
        }
        parentRefs = [
          { name: target.name, ...(target.namespace !== ns ? { namespace: target.namespace } : {}) },
        ];
        hostnames = hosts.includes('*') ? [] : hosts;
        label = target.name;
      }
      if (parentRefs.length === 0) continue;
      const rules = convertHttpRoutes(http, parent, resolveGateway, context, notes);
      if (rules.length === 0) continue;
      const same = groups.find(
        (g) =>
          g.mesh === (parent === MeshGateway) &&
          JSON.stringify(g.rules) === JSON.stringify(rules) &&
          JSON.stringify(g.hostnames) === JSON.stringify(hostnames),
      );
      if (same) same.parents.push(...parentRefs);
      else groups.push({ parents: parentRefs, rules, hostnames, mesh: parent === MeshGateway, label });
    }
    for (const g of groups) if (g.mesh) this.#recordMeshBackends(ns, g.parents, g.rules);
    const routes = this.#httpRoutesOf(vs, groups, notes);
    this.#replace(vs, routes);
    this.#entry(vs).notes.push(...dedupe(notes));
    if (routes.length === 0)
      this.#note(
        vs,
        action(
          'spec.http',
          'nothing of it could be converted: it has no Gateway API equivalent, route these requests by hand',
        ),
      );
  }

  /** The HTTPRoute objects of a VirtualService's groups (named after it; by parent when it has several). */
  #httpRoutesOf(
    vs: KubeObject,
    groups: readonly { parents: Json[]; rules: Json[]; hostnames: string[]; mesh: boolean; label: string }[],
    notes: Note[],
  ): KubeObject[] {
    const ns = vs.metadata.namespace ?? 'default';
    return groups.map((g, i) => {
      const name = groups.length === 1 ? (vs.metadata.name ?? '') : `${vs.metadata.name}-${g.label}`;
      if (g.rules.length > 16)
        notes.push(
          action(
            'spec.http',
            `HTTPRoute ${name} has ${g.rules.length} rules; Gateway API allows 16 per route: split it`,
          ),
        );
      const labels = vs.metadata.labels;
      return {
        apiVersion: `${gatewayApi}/v1`,
        kind: 'HTTPRoute',
        metadata: {
          name: i > 0 && groups.slice(0, i).some((x) => x.label === g.label) ? `${name}-${i + 1}` : name,
          namespace: ns,
          ...(labels && Object.keys(labels).length > 0 ? { labels: { ...labels } } : {}),
        },
        spec: {
          parentRefs: g.parents,
          ...(g.hostnames.length > 0 ? { hostnames: g.hostnames } : {}),
          rules: g.rules,
        },
      } as KubeObject;
    });
  }

  /** The Services a mesh route attaches to; each of them needs a waypoint to apply it. */
  #meshParents(vs: KubeObject, hosts: readonly string[], notes: Note[]): Json[] {
    const ns = vs.metadata.namespace ?? 'default';
    const parents: Json[] = [];
    for (const host of hosts) {
      const service = this.#mesh.serviceByHostname.get(host);
      if (!service) {
        notes.push(
          dropped(
            'spec.hosts',
            `${host}: mesh routes attach to Services in ambient mode, and no Service has this host`,
          ),
        );
        continue;
      }
      if (service.type === 'ExternalName') {
        notes.push(
          dropped(
            'spec.hosts',
            `${host} is an ExternalName Service: no waypoint serves it, so the mesh route can't attach; clients reach ${service.externalName} directly`,
          ),
        );
        continue;
      }
      parents.push({
        group: '',
        kind: 'Service',
        name: service.name,
        ...(service.namespace !== ns ? { namespace: service.namespace } : {}),
      });
      this.#needsWaypoint(service, `mesh route ${ns}/${vs.metadata.name}`);
    }
    return parents;
  }

  #backend(host: string): BackendTarget | undefined {
    const service = this.#mesh.serviceByHostname.get(host);
    if (service)
      return {
        kind: 'service',
        name: service.name,
        namespace: service.namespace,
        ports: service.ports.map((p) => p.port),
      };
    const entries = this.#snapshot.list(istio, 'ServiceEntry');
    if (entries.some((e) => (((e['spec'] ?? {}) as { hosts?: string[] }).hosts ?? []).includes(host)))
      return { kind: 'hostname', host };
    return undefined;
  }

  // ---- authorization ----

  #needsWaypoint(service: MeshService, reason: string): void {
    const key = `${service.namespace}/${service.name}`;
    const known = this.#waypointServices.get(key);
    if (known) {
      known.reasons.add(reason);
      return;
    }
    this.#waypointServices.set(key, { service, reasons: new Set([reason]) });
    addTo(this.#waypointServicesByNamespace, service.namespace, service);
  }

  /** Pods in the mesh in sidecar mode (the ones policies applied to), by namespace. */
  #sidecarPods(): Map<string, Workload[]> {
    if (this.#podsByNamespace) return this.#podsByNamespace;
    const index = new Map<string, Workload[]>();
    for (const w of this.#mesh.workloads)
      if (w.proxy === 'sidecar' && !this.#isKept(w.namespace)) addTo(index, w.namespace, w);
    this.#podsByNamespace = index;
    return index;
  }

  /** Services that select pods, by namespace. */
  #selectingServices(namespace: string): readonly MeshService[] {
    if (!this.#servicesByNamespace) {
      const index = new Map<string, MeshService[]>();
      for (const s of this.#mesh.services)
        if (s.selector !== undefined && Object.keys(s.selector).length > 0) addTo(index, s.namespace, s);
      this.#servicesByNamespace = index;
    }
    return this.#servicesByNamespace.get(namespace) ?? [];
  }

  /** The sidecar pods a selector-based or namespace-wide policy applies to. */
  #selected(policy: KubeObject): Workload[] {
    const ns = policy.metadata.namespace ?? 'default';
    const selector = selectorOf(policy);
    const pods =
      ns === this.#root && selector !== undefined
        ? [...this.#sidecarPods().values()].flat()
        : (this.#sidecarPods().get(ns) ?? []);
    return pods.filter((w) => labelsMatch(w.labels, selector ?? {}));
  }

  /** Whether a selector-based policy selects one of these gateway pods. */
  #selectsPod(policy: KubeObject, pods: Iterable<Workload>): boolean {
    const ns = policy.metadata.namespace ?? 'default';
    const selector = selectorOf(policy);
    if (selector === undefined) return false;
    for (const p of pods)
      if ((ns === this.#root || p.namespace === ns) && labelsMatch(p.labels, selector)) return true;
    return false;
  }

  /** The old gateway pods a policy applies to, and the new gateways that replace them. */
  #selectedGateways(policy: KubeObject): NewGateway[] {
    return [...this.#newGateways.values()].filter((g) => this.#selectsPod(policy, g.pods));
  }

  #selectsOldGatewayInUse(policy: KubeObject): boolean {
    return this.#selectsPod(policy, this.#oldGatewaysInUse);
  }

  /** The Services that select some of these pods. */
  #servicesOf(pods: readonly Workload[]): MeshService[] {
    const namespaces = [...new Set(pods.map((p) => p.namespace))].sort();
    return namespaces.flatMap((ns) =>
      this.#selectingServices(ns).filter((s) =>
        pods.some((p) => p.namespace === ns && labelsMatch(p.labels, s.selector ?? {})),
      ),
    );
  }

  /** Remembers which Services a mesh route's waypoint sends each parent Service's requests to. */
  #recordMeshBackends(namespace: string, parents: readonly Json[], rules: readonly Json[]): void {
    const parentKeys = parents.map(
      (p) => `${(p['namespace'] as string | undefined) ?? namespace}/${String(p['name'])}`,
    );
    for (const rule of rules)
      for (const b of (rule['backendRefs'] as Json[] | undefined) ?? []) {
        if (b['kind'] !== undefined && b['kind'] !== 'Service') continue;
        const key = `${(b['namespace'] as string | undefined) ?? namespace}/${String(b['name'])}`;
        const set = this.#routedFrom.get(key) ?? new Set<string>();
        for (const parent of parentKeys) {
          if (parent === key) continue;
          set.add(parent);
          const to = this.#routesTo.get(parent) ?? new Set<string>();
          this.#routesTo.set(parent, to.add(key));
        }
        this.#routedFrom.set(key, set);
      }
  }

  /**
   * The Services whose waypoints can send requests to these pods: the ones that select them, and those
   * whose mesh routes send to one of those. A policy of the pods must be enforced for all of them: at a
   * waypoint a policy applies to the Service addressed, not to the pods the request ends at.
   */
  #servicesReaching(pods: readonly Workload[]): MeshService[] {
    const direct = this.#servicesOf(pods);
    const out = new Map<string, MeshService>(direct.map((s) => [`${s.namespace}/${s.name}`, s]));
    for (const s of direct)
      for (const parent of this.#routedFrom.get(`${s.namespace}/${s.name}`) ?? []) {
        const known = this.#waypointServices.get(parent);
        if (known && !out.has(parent)) out.set(parent, known.service);
      }
    return [...out.values()];
  }

  #isMeshWide(policy: KubeObject): boolean {
    const spec = (policy['spec'] ?? {}) as Json;
    return (policy.metadata.namespace ?? 'default') === this.#root && spec['selector'] === undefined;
  }

  /** First pass: which Services and namespaces need a waypoint because a policy needs L7. */
  #classifyPolicies(): void {
    const policies = [
      ...this.#snapshot
        .list(security, 'AuthorizationPolicy')
        .map((p) => ({ p, l7: usesL7((p['spec'] ?? {}) as Json) })),
      ...this.#snapshot.list(security, 'RequestAuthentication').map((p) => ({ p, l7: true })),
    ];
    for (const { p, l7 } of policies) {
      const spec = (p['spec'] ?? {}) as Json;
      if (!l7 || spec['targetRefs'] !== undefined || spec['targetRef'] !== undefined || this.#isMeshWide(p))
        continue;
      const pods = this.#selected(p);
      if (pods.length === 0) continue;
      const ns = p.metadata.namespace ?? 'default';
      const what = `${p.kind} ${ns}/${p.metadata.name}`;
      if (spec['selector'] === undefined) {
        const reasons = this.#waypointNamespaces.get(ns) ?? new Set<string>();
        reasons.add(what);
        this.#waypointNamespaces.set(ns, reasons);
      } else for (const s of this.#servicesOf(pods)) this.#needsWaypoint(s, what);
    }
    if (this.#waypointNamespaces.size === 0) return;
    for (const s of this.#mesh.services)
      if (this.#waypointNamespaces.has(s.namespace) && s.type !== 'ExternalName')
        this.#needsWaypoint(s, `namespace ${s.namespace} uses a waypoint`);
  }

  #behindWaypoint(pod: Workload): boolean {
    if (this.#waypointNamespaces.has(pod.namespace)) return true;
    // Behind a waypoint: selected by a Service that uses one, or by one a mesh route sends requests to.
    return this.#selectingServices(pod.namespace).some(
      (service) =>
        labelsMatch(pod.labels, service.selector ?? {}) &&
        (this.#waypointServices.has(`${service.namespace}/${service.name}`) ||
          this.#routedFrom.has(`${service.namespace}/${service.name}`)),
    );
  }

  /**
   * Which waypoint Services each policy must be enforced for. A waypoint judges a request by the Service
   * addressed, before routing, while a sidecar judged it by the pod it reached; so a Service takes the
   * policies of every pod it can send requests to (its own, and its mesh routes' backends'). Its DENY and
   * CUSTOM policies are all of them (more refusals, never fewer). Its ALLOW policies are those pods' when
   * every such pod has the same ones; when they differ no union of them is safe, so the Service takes none
   * and an ALLOW with no rules refuses what no other policy allows (fail closed, reported).
   */
  #attachPolicies(): void {
    const podPolicies = new Map<Workload, KubeObject[]>();
    for (const policy of this.#snapshot.list(security, 'AuthorizationPolicy')) {
      const spec = (policy['spec'] ?? {}) as Json;
      if (this.#isKept(policy.metadata.namespace ?? 'default') || this.#isMeshWide(policy)) continue;
      if (spec['targetRefs'] !== undefined || spec['targetRef'] !== undefined) continue;
      if (
        spec['selector'] === undefined &&
        this.#waypointNamespaces.has(policy.metadata.namespace ?? 'default')
      )
        continue; // the namespace's waypoint takes it whole (targetRefs to the waypoint)
      for (const pod of this.#selected(policy)) addTo(podPolicies, pod, policy);
    }
    const keyOfPolicy = (p: KubeObject) => `${p.metadata.namespace}/${p.metadata.name}`;
    for (const [key, { service }] of [...this.#waypointServices].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const reached = this.#podsOfServices([key, ...(this.#routesTo.get(key) ?? [])]);
      const allowSets = new Set<string>();
      for (const pod of reached) {
        const policies = (podPolicies.get(pod) ?? []).filter((p) => actionOf(p) === 'ALLOW');
        allowSets.add(policies.map(keyOfPolicy).sort().join('\n'));
        for (const p of podPolicies.get(pod) ?? []) if (actionOf(p) !== 'ALLOW') this.#attach(p, service);
      }
      if (allowSets.size <= 1) {
        for (const pod of reached)
          for (const p of podPolicies.get(pod) ?? []) if (actionOf(p) === 'ALLOW') this.#attach(p, service);
        continue;
      }
      const name = this.#freeName(
        security,
        'AuthorizationPolicy',
        service.namespace,
        `${service.name}-waypoint-allow-nothing`,
      );
      this.#add(
        {
          apiVersion: `${security}/v1`,
          kind: 'AuthorizationPolicy',
          metadata: { name, namespace: service.namespace },
          spec: { targetRefs: [{ group: '', kind: 'Service', name: service.name }], action: 'ALLOW' },
        },
        `needs a person: mesh routes send Service ${key}'s requests to pods whose ALLOW policies differ, and a waypoint judges by the Service addressed; this refuses what no other policy of the Service allows until the policies are written for ${key}`,
      );
    }
  }

  #attach(policy: KubeObject, service: MeshService): void {
    const list = this.#attachments.get(policy) ?? [];
    if (!list.includes(service)) list.push(service);
    this.#attachments.set(policy, list);
  }

  /** The sidecar pods the Services (`ns/name`) select. */
  #podsOfServices(keys: Iterable<string>): Workload[] {
    const out = new Set<Workload>();
    for (const key of keys) {
      const [ns = '', name = ''] = key.split('/');
      const service = this.#selectingServices(ns).find((s) => s.name === name);
      if (!service) continue;
      for (const pod of this.#sidecarPods().get(ns) ?? [])
        if (labelsMatch(pod.labels, service.selector ?? {})) out.add(pod);
    }
    return [...out];
  }

  #waypointPrincipal(namespace: string): string {
    return `${this.#trustDomain}/ns/${namespace}/sa/${this.#waypointName}`;
  }

  /** The targetRefs that make a waypoint enforce a policy for these pods. */
  /**
   * The targetRefs that make waypoints enforce a policy for these pods, by the namespace they must be
   * written in (a policy can only target objects of its own namespace; a root-namespace policy with a
   * selector reaches pods everywhere, so it needs a copy in each of their namespaces).
   */
  #waypointTargets(policy: KubeObject, pods: readonly Workload[]): Map<string, Json[]> {
    const ns = policy.metadata.namespace ?? 'default';
    const spec = (policy['spec'] ?? {}) as Json;
    if (spec['selector'] === undefined && this.#waypointNamespaces.has(ns))
      return new Map([[ns, [{ group: gatewayApi, kind: 'Gateway', name: this.#waypointName }]]]);
    const out = new Map<string, Json[]>();
    const services =
      policy.kind === 'AuthorizationPolicy'
        ? (this.#attachments.get(policy) ?? [])
        : this.#servicesReaching(pods).filter((s) => this.#waypointServices.has(`${s.namespace}/${s.name}`));
    for (const s of [...services].sort((a, b) =>
      `${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1,
    ))
      addTo(out, s.namespace, { group: '', kind: 'Service', name: s.name });
    return out;
  }

  /** One copy of a policy per namespace of its targets, each with its targetRefs. */
  #targeted(
    policy: KubeObject,
    spec: Json,
    targets: Map<string, Json[]>,
    make: (name: string, namespace: string, spec: Json) => KubeObject,
  ): { outputs: KubeObject[]; text: string } {
    const ns = policy.metadata.namespace ?? 'default';
    const name = policy.metadata.name ?? '';
    const outputs: KubeObject[] = [];
    const parts: string[] = [];
    for (const [tns, refs] of [...targets].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const n = tns === ns ? name : this.#freeName(security, policy.kind, tns, name);
      const ported = withServicePorts(spec, this.#servicePortsOf(tns, refs));
      outputs.push(make(n, tns, withTargetRefs(ported.spec, refs)));
      const what = refs.map((t) => `${t['kind']} ${t['name']}`).join(', ');
      const ports =
        ported.changed.length > 0
          ? `, pod ports as the Service ports the waypoint sees: ${ported.changed.join('; ')}`
          : '';
      parts.push(`${tns === ns ? what : `${what} in ${tns} (copy ${tns}/${n})`}${ports}`);
    }
    return { outputs, text: parts.join('; ') };
  }

  /** Pod port → the ports of the targeted Services (a namespace's waypoint: all its Services) that send to it. */
  #servicePortsOf(namespace: string, refs: readonly Json[]): Map<string, string[]> {
    const names = new Set(refs.filter((r) => r['kind'] === 'Service').map((r) => r['name']));
    const wholeNamespace = refs.some((r) => r['kind'] === 'Gateway');
    const out = new Map<string, string[]>();
    for (const s of this.#selectingServices(namespace)) {
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

  #authorizationPolicies(): void {
    for (const policy of this.#snapshot.list(security, 'AuthorizationPolicy')) {
      if (this.#isKept(policy.metadata.namespace ?? 'default')) continue;
      const { spec, renamed } = renamePrincipals((policy['spec'] ?? {}) as Json, this.#principalRenames);
      const renameNotes = renamed.map((p) =>
        changed(
          'spec.rules',
          `principal ${p} (the Istio ingress gateway) → ${(this.#principalRenames.get(p) ?? []).join(', ')} (the Gateway API gateway)`,
        ),
      );
      const make = (n: string, namespace: string, s: Json): KubeObject => ({
        apiVersion: `${security}/v1`,
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
          : this.#isMeshWide(policy)
            ? this.#meshWidePolicy(policy, spec, make)
            : this.#selectorPolicy(policy, spec, make);
      this.#entry(policy).notes.push(...renameNotes, ...converted.notes);
      const [only] = converted.outputs;
      const unchanged =
        converted.outputs.length === 1 &&
        only?.metadata.name === policy.metadata.name &&
        only?.metadata.namespace === policy.metadata.namespace &&
        only?.['spec'] === spec;
      this.#replace(
        policy,
        converted.outputs,
        unchanged ? (renamed.length > 0 ? Outcome.Changed : Outcome.Kept) : Outcome.Converted,
      );
    }
  }

  /** A mesh-wide policy stays for ztunnel and gateways; waypoints get a copy on their class. */
  #meshWidePolicy(
    policy: KubeObject,
    spec: Json,
    make: (name: string, namespace: string, spec: Json) => KubeObject,
  ): { outputs: KubeObject[]; notes: Note[] } {
    const ns = policy.metadata.namespace ?? 'default';
    const outputs: KubeObject[] = [{ ...policy, spec }];
    const notes: Note[] = [];
    if (this.#waypointServices.size > 0 || this.#waypointNamespaces.size > 0) {
      const name = this.#freeName(security, 'AuthorizationPolicy', ns, `${policy.metadata.name}-waypoints`);
      const classRef = { group: gatewayApi, kind: 'GatewayClass', name: GatewayClass.Waypoint };
      outputs.push(make(name, ns, withTargetRefs(spec, [classRef])));
      notes.push(
        changed(
          '',
          `mesh-wide: waypoints take only policies that target them, so a copy targets the waypoint class (${name})`,
        ),
      );
    }
    if (usesL7(spec))
      notes.push(
        action(
          'spec.rules',
          "a mesh-wide policy with HTTP conditions: ztunnel can't evaluate them (ALLOW rules with them match nothing there); move those rules to waypoints",
        ),
      );
    return { outputs, notes };
  }

  /**
   * A policy with a selector (or none, namespace-wide): onto the new gateways when it selects ingress
   * gateway pods; onto waypoints, with its ztunnel part, when its pods need one; else as it is.
   */
  #selectorPolicy(
    policy: KubeObject,
    spec: Json,
    make: (name: string, namespace: string, spec: Json) => KubeObject,
  ): { outputs: KubeObject[]; notes: Note[] } {
    const outputs: KubeObject[] = [];
    const notes: Note[] = [];
    const moved = this.#ontoNewGateways(policy, spec, make);
    outputs.push(...moved.outputs);
    notes.push(...moved.notes);
    const pods = this.#selected(policy);
    const behind = pods.filter((p) => this.#behindWaypoint(p));
    if (pods.length > 0 && (usesL7(spec) || behind.length > 0)) {
      const onWaypoints = this.#ontoWaypoints(policy, spec, pods, behind, make);
      outputs.push(...onWaypoints.outputs);
      notes.push(...onWaypoints.notes);
    } else if (pods.length > 0 || moved.outputs.length === 0) {
      outputs.push({ ...policy, spec });
    }
    if (moved.outputs.length > 0 && this.#selectsOldGatewayInUse(policy)) {
      outputs.push(policy);
      notes.push(
        changed('', 'also kept as it is: the old gateway still serves namespaces that stay in sidecar mode'),
      );
    }
    return { outputs, notes };
  }

  /** A policy whose pods sit (or must sit) behind waypoints: enforced there whole, and its ztunnel part. */
  #ontoWaypoints(
    policy: KubeObject,
    spec: Json,
    pods: readonly Workload[],
    behind: readonly Workload[],
    make: (name: string, namespace: string, spec: Json) => KubeObject,
  ): { outputs: KubeObject[]; notes: Note[] } {
    const ns = policy.metadata.namespace ?? 'default';
    const name = policy.metadata.name ?? '';
    const targets = this.#waypointTargets(policy, behind.length > 0 ? behind : pods);
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
    const targeted = this.#targeted(policy, spec, targets, make);
    const outputs = [...targeted.outputs];
    const waypoints = [...new Set(behind.map((p) => this.#waypointPrincipal(p.namespace)))];
    const l4 = ztunnelPart(spec, waypoints);
    const l4Name = this.#freeName(security, 'AuthorizationPolicy', ns, `${name}-l4`);
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
      ],
    };
  }

  /**
   * A policy of ingress gateway pods, moved onto the Gateway API gateways that replace those pods with
   * `targetRefs`: one copy per gateway namespace (a policy can only target objects of its own namespace).
   */
  #ontoNewGateways(
    policy: KubeObject,
    spec: Json,
    make: (name: string, namespace: string, spec: Json) => KubeObject,
  ): { outputs: KubeObject[]; notes: Note[] } {
    const ns = policy.metadata.namespace ?? 'default';
    const name = policy.metadata.name ?? '';
    const byNamespace = new Map<string, NewGateway[]>();
    for (const g of this.#selectedGateways(policy)) addTo(byNamespace, g.namespace, g);
    const outputs: KubeObject[] = [];
    const notes: Note[] = [];
    for (const [gns, list] of [...byNamespace].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const n = gns === ns ? name : this.#freeName(security, policy.kind, gns, name);
      const targetRefs = list.map((g) => ({ group: gatewayApi, kind: 'Gateway', name: g.name }));
      outputs.push(make(n, gns, withTargetRefs(spec, targetRefs)));
      const where = list.map((g) => `${g.namespace}/${g.name}`).join(', ');
      const move = gns !== ns ? ` (moved from namespace ${ns} to ${gns}, where the Gateway is)` : '';
      notes.push(changed('spec.selector', `gateway policy: targets Gateway ${where}${move}`));
    }
    return { outputs, notes };
  }

  /** RequestAuthentications follow the policies that read their tokens: onto gateways or waypoints. */
  #requestAuthentications(): void {
    for (const ra of this.#snapshot.list(security, 'RequestAuthentication')) {
      const ns = ra.metadata.namespace ?? 'default';
      if (this.#isKept(ns)) continue;
      const spec = (ra['spec'] ?? {}) as Json;
      if (spec['targetRefs'] !== undefined || spec['targetRef'] !== undefined) continue;
      const make = (n: string, namespace: string, s: Json): KubeObject => ({
        apiVersion: `${security}/v1`,
        kind: 'RequestAuthentication',
        metadata: {
          name: n,
          namespace,
          ...(ra.metadata.labels ? { labels: { ...ra.metadata.labels } } : {}),
        },
        spec: s,
      });
      if (this.#isMeshWide(ra)) {
        this.#note(
          ra,
          action(
            '',
            'mesh-wide: ztunnel does not read tokens; attach it to the gateways and waypoints that need it with targetRefs',
          ),
        );
        continue;
      }
      const outputs: KubeObject[] = [];
      const moved = this.#ontoNewGateways(ra, spec, make);
      outputs.push(...moved.outputs);
      this.#entry(ra).notes.push(...moved.notes);
      if (moved.outputs.length > 0 && this.#selectsOldGatewayInUse(ra)) {
        outputs.push(ra);
        this.#note(
          ra,
          changed(
            '',
            'also kept as it is: the old gateway still serves namespaces that stay in sidecar mode',
          ),
        );
      }
      const pods = this.#selected(ra);
      if (pods.length > 0) {
        const targets = this.#waypointTargets(ra, pods);
        if (targets.size > 0) {
          const targeted = this.#targeted(ra, spec, targets, make);
          outputs.push(...targeted.outputs);
          this.#note(ra, changed('spec.selector', `read by the waypoint (targets ${targeted.text})`));
        } else {
          outputs.push(ra);
          this.#note(
            ra,
            action(
              'spec.selector',
              'no Service selects these pods for a waypoint to serve; ztunnel does not read tokens',
            ),
          );
        }
      }
      if (outputs.length > 0) this.#replace(ra, outputs);
    }
  }

  // ---- waypoints, namespaces, workloads ----

  #waypoints(): void {
    const namespaces = new Set<string>([
      ...this.#waypointNamespaces.keys(),
      ...[...this.#waypointServices.values()].map((s) => s.service.namespace),
    ]);
    for (const ns of [...namespaces].sort()) {
      const existing = this.#snapshot
        .list(gatewayApi, 'Gateway', ns)
        .some((g) => gatewayClassOf(g) === GatewayClass.Waypoint);
      const why = this.#waypointNamespaces.has(ns)
        ? [...(this.#waypointNamespaces.get(ns) ?? [])].join(', ')
        : [...this.#waypointServices.values()]
            .filter((s) => s.service.namespace === ns)
            .flatMap((s) => [...s.reasons])
            .filter((r, i, all) => all.indexOf(r) === i)
            .join(', ');
      if (!existing)
        this.#add(
          {
            apiVersion: `${gatewayApi}/v1`,
            kind: 'Gateway',
            metadata: { name: this.#waypointName, namespace: ns, labels: { [Label.WaypointFor]: 'service' } },
            spec: {
              gatewayClassName: GatewayClass.Waypoint,
              listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }],
            },
          },
          `the waypoint of namespace ${ns}, for L7: ${why}`,
        );
    }
    for (const { service, reasons } of this.#waypointServices.values()) {
      if (this.#waypointNamespaces.has(service.namespace)) continue;
      const current = this.#current(service.object);
      this.#change(service.object, {
        ...current,
        metadata: {
          ...current.metadata,
          labels: {
            ...current.metadata.labels,
            [Label.UseWaypoint]: this.#waypointName,
            [Label.IngressUseWaypoint]: 'true',
          },
        },
      });
      this.#note(
        service.object,
        changed(
          'metadata.labels',
          `uses waypoint ${service.namespace}/${this.#waypointName}, also for traffic from ingress (${[...reasons].join(', ')})`,
        ),
      );
    }
  }

  #namespacesAndWorkloads(): void {
    const migrated = this.#namespaces();
    this.#workloadTemplates(migrated);
    this.#runningPods(migrated);
  }

  /** Namespace labels: ambient instead of injection, or kept in sidecar mode (with the mode label). */
  #namespaces(): Set<string> {
    const migrated = new Set<string>();
    for (const ns of this.#snapshot.list('', 'Namespace')) {
      const name = ns.metadata.name ?? '';
      const labels = { ...ns.metadata.labels };
      const injected = labels[Label.IstioInjection] === 'enabled' || labels[Label.IstioRev] !== undefined;
      const kept = this.#kept.get(name);
      if (kept !== undefined) {
        if (!injected) continue;
        if (labels[Label.Mode] !== 'sidecar') {
          this.#change(ns, {
            ...ns,
            metadata: { ...ns.metadata, labels: { ...labels, [Label.Mode]: 'sidecar' } },
          });
          this.#note(
            ns,
            changed(`metadata.labels.${Label.Mode}`, 'sidecar: rendered in sidecar mode from now on'),
          );
        }
        const message = `stays in sidecar mode: it ${kept.why}`;
        this.#note(
          ns,
          kept.fix
            ? action('metadata.labels', `${message}; ${kept.fix}`)
            : changed('metadata.labels', message),
        );
        continue;
      }
      if (!injected && labels[Label.DataplaneMode] !== 'ambient') continue;
      migrated.add(name);
      if (!injected && !this.#waypointNamespaces.has(name)) continue;
      Reflect.deleteProperty(labels, Label.IstioInjection);
      Reflect.deleteProperty(labels, Label.IstioRev);
      labels[Label.DataplaneMode] = 'ambient';
      if (this.#waypointNamespaces.has(name)) {
        labels[Label.UseWaypoint] = this.#waypointName;
        labels[Label.IngressUseWaypoint] = 'true';
      }
      this.#change(ns, { ...ns, metadata: { ...ns.metadata, labels } });
      this.#note(
        ns,
        changed(
          'metadata.labels',
          `istio-injection → ${Label.DataplaneMode}: ambient${this.#waypointNamespaces.has(name) ? `; every Service uses waypoint ${this.#waypointName}` : ''}`,
        ),
      );
    }
    return migrated;
  }

  /** Pod templates of migrated namespaces: opted-out pods stay out; a pod's own injection opt-in goes. */
  #workloadTemplates(migrated: ReadonlySet<string>): void {
    for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet']) {
      for (const object of this.#snapshot.list('apps', kind)) {
        if (!migrated.has(object.metadata.namespace ?? 'default')) continue;
        const spec = (object['spec'] ?? {}) as { template?: { metadata?: KubeObject['metadata'] } };
        const meta = spec.template?.metadata ?? {};
        let labels = { ...meta.labels };
        let annotations = { ...meta.annotations };
        if (optedOut(labels, annotations)) {
          labels[Label.DataplaneMode] = 'none';
          this.#note(
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
          this.#note(
            object,
            changed(
              `spec.template.metadata.labels.${Label.SidecarInject}`,
              'removed: the injector would still give the pods a sidecar in an ambient namespace',
            ),
          );
        } else continue;
        const nextMeta: KubeObject['metadata'] = { ...meta, labels };
        if (meta.annotations) nextMeta.annotations = annotations;
        this.#change(object, {
          ...object,
          spec: { ...spec, template: { ...spec.template, metadata: nextMeta } },
        });
      }
    }
  }

  /** Running pods of migrated namespaces, as they will run after a restart: without the sidecar. */
  #runningPods(migrated: ReadonlySet<string>): void {
    let restarted = 0;
    for (const pod of this.#snapshot.list('', 'Pod')) {
      if (!migrated.has(pod.metadata.namespace ?? 'default')) continue;
      const labels = { ...pod.metadata.labels };
      const annotations = { ...pod.metadata.annotations };
      const hadSidecar = annotations[Annotation.SidecarStatus] !== undefined;
      if (optedOut(labels, annotations)) labels[Label.DataplaneMode] = 'none';
      else if (!hadSidecar) continue;
      Reflect.deleteProperty(labels, Label.TlsMode);
      Reflect.deleteProperty(annotations, Annotation.SidecarStatus);
      const spec = (pod['spec'] ?? {}) as {
        containers?: { name?: string }[];
        initContainers?: { name?: string }[];
      };
      const strip = (list?: { name?: string }[]) =>
        list?.filter((c) => c.name !== 'istio-proxy' && c.name !== 'istio-init');
      const nextSpec: Json = { ...spec, containers: strip(spec.containers) ?? [] };
      if (spec.initContainers) nextSpec['initContainers'] = strip(spec.initContainers);
      this.#change(pod, { ...pod, metadata: { ...pod.metadata, labels, annotations }, spec: nextSpec });
      if (hadSidecar) restarted++;
    }
    if (restarted > 0) {
      const first = this.#snapshot.list('', 'Pod').find((p) => this.#entry(p).outcome === Outcome.Changed);
      if (first)
        this.#note(
          first,
          action(
            'spec.containers',
            `${restarted} running pod(s) carry sidecars: restart their workloads after relabelling so they run without (shown here as they will run)`,
          ),
        );
    }
  }

  #otherIstioObjects(): void {
    this.#sidecarOnlyObjects();
    this.#destinationRules();
    this.#istioIngresses();
    this.#serverlessModels();
  }

  /** Kept where they still apply: in namespaces that stay in sidecar mode, and mesh-wide while any does. */
  #staysForSidecars(object: KubeObject): boolean {
    const ns = object.metadata.namespace ?? 'default';
    if (this.#isKept(ns)) return true;
    if (ns !== this.#root || this.#kept.size === 0) return false;
    this.#note(
      object,
      changed(
        '',
        `kept: it applies mesh-wide, and namespaces ${[...this.#kept.keys()].sort().join(', ')} stay in sidecar mode`,
      ),
    );
    return true;
  }

  /** Sidecars and EnvoyFilters configure sidecars, which ambient mode has none of. */
  #sidecarOnlyObjects(): void {
    for (const sidecar of this.#snapshot.list(istio, 'Sidecar')) {
      if (this.#staysForSidecars(sidecar)) continue;
      this.#replace(sidecar, []);
      this.#note(
        sidecar,
        action(
          '',
          'ambient mode has no sidecars to scope: to limit what a workload reaches, use AuthorizationPolicies at the destination or egress through a waypoint',
        ),
      );
    }
    for (const filter of this.#snapshot.list(istio, 'EnvoyFilter')) {
      if (this.#staysForSidecars(filter)) continue;
      this.#replace(filter, []);
      this.#note(
        filter,
        action(
          '',
          'EnvoyFilters patch sidecar configuration, which ambient mode does not have: re-create what it does on a waypoint or gateway (targetRefs), for example as a WasmPlugin or a Gateway API filter',
        ),
      );
    }
  }

  /** DestinationRules lose ISTIO_MUTUAL, which ztunnel's HBONE replaces. */
  #destinationRules(): void {
    const keptSomewhere = this.#kept.size > 0;
    for (const dr of this.#snapshot.list(istio, 'DestinationRule')) {
      if (
        this.#isKept(dr.metadata.namespace ?? 'default') ||
        (dr.metadata.namespace === this.#root && keptSomewhere)
      )
        continue;
      const spec = { ...((dr['spec'] ?? {}) as Json) };
      const policy = spec['trafficPolicy'] as Json | undefined;
      const mutual = (p?: Json) => ((p?.['tls'] ?? {}) as { mode?: string }).mode === 'ISTIO_MUTUAL';
      if (!policy || !mutual(policy)) continue;
      const nextPolicy = { ...policy };
      delete nextPolicy['tls'];
      if (Object.keys(nextPolicy).length > 0) spec['trafficPolicy'] = nextPolicy;
      else delete spec['trafficPolicy'];
      const rest = Object.keys(spec).filter(
        (k) => k !== 'host' && k !== 'exportTo' && k !== 'workloadSelector',
      );
      if (rest.length === 0) {
        this.#replace(dr, []);
        this.#note(
          dr,
          changed(
            'spec.trafficPolicy.tls',
            'ISTIO_MUTUAL was all it set: ztunnel carries every connection over mTLS (HBONE)',
          ),
        );
      } else {
        this.#change(dr, { ...dr, spec });
        this.#note(
          dr,
          changed(
            'spec.trafficPolicy.tls',
            'ISTIO_MUTUAL removed: ztunnel carries every connection over mTLS; the rest applies at waypoints and gateways',
          ),
        );
      }
    }
  }

  /** Kubernetes Ingresses of class istio are served by the Istio gateway pods, not a Gateway API gateway. */
  #istioIngresses(): void {
    for (const ingress of this.#snapshot.list('networking.k8s.io', 'Ingress')) {
      if (this.#isKept(ingress.metadata.namespace ?? 'default')) continue;
      const spec = (ingress['spec'] ?? {}) as { ingressClassName?: string };
      const istioClass =
        spec.ingressClassName === 'istio' ||
        ingress.metadata.annotations?.[Annotation.IngressClass] === 'istio';
      if (!istioClass) continue;
      this.#note(
        ingress,
        action(
          'spec.ingressClassName',
          'served by the Istio ingress gateway pods, not by a Gateway API gateway: write it as an HTTPRoute (for KServe: enableGatewayApi in inferenceservice-config), or keep those pods running',
        ),
      );
    }
  }

  /** Serverless models: their namespaces stay in sidecar mode; say what moves them. */
  #serverlessModels(): void {
    for (const isvc of this.#serverless) {
      this.#note(
        isvc,
        action(
          `metadata.annotations.${Annotation.DeploymentMode}`,
          'Serverless (Knative) has no ambient support (KEP-2676), so its namespace stays in sidecar mode: set RawDeployment (with enableGatewayApi) to move it to ambient',
        ),
      );
    }
  }

  /** Objects a controller writes: converting them is not enough, their controller must write the new form. */
  #controllerOwned(): void {
    for (const entry of this.#entries.values()) {
      if (entry.outcome !== Outcome.Converted && entry.outcome !== Outcome.Removed) continue;
      const object = this.#snapshot.get(
        entry.object.group,
        entry.object.kind,
        entry.object.namespace,
        entry.object.name,
      );
      const owner =
        object?.metadata.ownerReferences?.find((o) => o.controller) ?? object?.metadata.ownerReferences?.[0];
      const knative = object?.metadata.labels?.[Label.KnativeIngress];
      if (!owner && !knative) continue;
      const who = owner ? `${owner.kind} ${owner.name}` : `Knative ingress ${knative}`;
      entry.notes.push({
        kind: NoteKind.Action,
        message: `written by the controller of ${who}, which will write the sidecar-mode form back: switch that controller to ambient mode (for kfmesh's own objects: kfmesh controller --mode ambient)`,
      });
    }
  }
}

/** A policy's action (ALLOW when unset). */
function actionOf(policy: KubeObject): string {
  return (((policy['spec'] ?? {}) as Json)['action'] as string | undefined) ?? 'ALLOW';
}

/** A policy's `selector.matchLabels` (undefined: no selector). */
function selectorOf(policy: KubeObject): Record<string, string> | undefined {
  return ((policy['spec'] ?? {}) as { selector?: { matchLabels?: Record<string, string> } }).selector
    ?.matchLabels;
}

/** A pod that opted out of sidecar injection (label or annotation). */
function optedOut(labels: Record<string, string>, annotations: Record<string, string>): boolean {
  return (labels[Label.SidecarInject] ?? annotations[Label.SidecarInject]) === 'false';
}

function without(record: Record<string, string>, key: string): Record<string, string> {
  return Object.fromEntries(Object.entries(record).filter(([k]) => k !== key));
}

function dedupe(notes: readonly Note[]): Note[] {
  const seen = new Set<string>();
  return notes.filter((n) => {
    const key = `${n.kind}\n${n.field ?? ''}\n${n.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

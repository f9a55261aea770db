/**
 * A platform in the middle of a migration: its objects, and its pods as they run. A pod keeps the proxy it
 * was created with until it restarts, whatever its namespace says now (docs/semantics.md, "Sidecars and
 * ambient pods together"), so a state pins every templated workload's pod as it was created: a Pod object
 * beside the Deployment, StatefulSet or DaemonSet, which the simulator reads as a running pod. A restart
 * drops the pin, and the next pin is made under the labels and mesh config of that moment.
 */
import { injectedMetadata, ProxyContainer } from '../model/sidecar.ts';
import { specOf } from '../model/specs.ts';
import fastJsonPatch, { type Operation as JsonPatchOperation } from 'fast-json-patch';
import { patched } from '../model/patch.ts';
import { compileMesh } from '../mesh/mesh.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { ProxyKind, type Workload } from '../mesh/workloads.ts';
import { Snapshot } from '../load/snapshot.ts';
import { addTo } from '../model/multimap.ts';
import { compareRefs, objectKey, refOf, type KubeObject, type ObjectRef } from '../model/object.ts';

/** One JSON Patch operation (RFC 6902). */
export type PatchOp = JsonPatchOperation;

/** A workload whose pods a step restarts. */
export interface WorkloadRef {
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet';
  namespace: string;
  name: string;
}

/** One change a step makes to the cluster. */
export type Operation =
  /** Creates an object (server-side apply). */
  | { op: 'apply'; object: KubeObject }
  /** Changes an object in place, exactly (a JSON Patch: it can remove what another manager set). */
  | { op: 'patch'; ref: ObjectRef; patch: PatchOp[] }
  /** Deletes an object (`apiVersion`: the version to name it by in a file). */
  | { op: 'delete'; ref: ObjectRef; apiVersion: string }
  /** Restarts a workload's pods (`kubectl rollout restart`): they come back as the template says now. */
  | { op: 'restart'; workload: WorkloadRef };

export interface StateOptions {
  clusterDomain?: string;
}

/** A platform at one point of a migration. */
export class PlanState {
  /** Every object by key, the pinned pods included. */
  readonly objects: ReadonlyMap<string, KubeObject>;
  /** The keys of the pods this state pinned (they are in no file; a restart replaces them). */
  readonly pinned: ReadonlySet<string>;
  readonly #options: StateOptions;
  #snapshot: Snapshot | undefined;
  #mesh: Mesh | undefined;

  private constructor(objects: Map<string, KubeObject>, pinned: Set<string>, options: StateOptions) {
    this.objects = objects;
    this.pinned = pinned;
    this.#options = options;
  }

  /** The platform as given, every templated workload's pod pinned as it runs now. */
  static start(objects: readonly KubeObject[], options: StateOptions = {}): PlanState {
    const map = new Map(objects.map((o) => [objectKey(refOf(o)), o]));
    return new PlanState(map, new Set(), options).#pinned();
  }

  /** The state as a snapshot, for the simulator (built once). */
  snapshot(): Snapshot {
    return (this.#snapshot ??= Snapshot.of(
      [...this.objects.values()].sort((a, b) => compareRefs(refOf(a), refOf(b))),
      '<plan state>',
    ));
  }

  /** The state compiled (once). */
  mesh(): Mesh {
    return (this.#mesh ??= compileMesh(this.snapshot(), this.#options));
  }

  get(ref: ObjectRef): KubeObject | undefined {
    return this.objects.get(objectKey(ref));
  }

  /**
   * The state after the operations, in order. A restart (asked for, or a patch of a pod template, which
   * rolls the pods out) replaces the workload's pods by what the template gives at that moment.
   */
  apply(operations: readonly Operation[]): PlanState {
    let objects = new Map(this.objects);
    let pinned = new Set(this.pinned);
    let restarts: WorkloadRef[] = [];
    const flush = () => {
      if (restarts.length === 0) return;
      const state = new PlanState(objects, pinned, this.#options).#restarted(restarts);
      objects = new Map(state.objects);
      pinned = new Set(state.pinned);
      restarts = [];
    };
    for (const o of operations) {
      if (o.op === 'restart') {
        restarts.push(o.workload);
        continue;
      }
      flush();
      if (o.op === 'apply') objects.set(objectKey(refOf(o.object)), o.object);
      else if (o.op === 'delete') objects.delete(objectKey(o.ref));
      else {
        const key = objectKey(o.ref);
        const current = objects.get(key);
        if (!current) throw new Error(`patch of ${key}: no such object in this state`);
        objects.set(key, patched(current, o.patch));
        if (templateKinds.has(o.ref.kind) && o.patch.some((p) => p.path.startsWith('/spec/template')))
          restarts.push({
            kind: o.ref.kind as WorkloadRef['kind'],
            namespace: o.ref.namespace,
            name: o.ref.name,
          });
      }
    }
    flush();
    return new PlanState(objects, pinned, this.#options).#pinned();
  }

  /** This state with the workloads' pods replaced by what their templates give now. */
  #restarted(workloads: readonly WorkloadRef[]): PlanState {
    const wanted = new Set(workloads.map((w) => `${w.namespace}/${w.name}`));
    const objects = new Map(this.objects);
    const pinned = new Set(this.pinned);
    for (const w of this.mesh().workloads)
      if (wanted.has(`${w.namespace}/${w.name}`)) {
        const key = objectKey(refOf(w.object));
        objects.delete(key);
        pinned.delete(key);
      }
    return new PlanState(objects, pinned, this.#options).#pinned();
  }

  /** This state with every templated workload that has no running pod pinned as its template says now. */
  #pinned(): PlanState {
    const workloads = this.mesh().workloads;
    const fresh = workloads.filter((w) => w.object !== this.#real(w) && templated(w));
    if (fresh.length === 0) return this;
    const objects = new Map(this.objects);
    const pinned = new Set(this.pinned);
    for (const w of fresh) {
      const pod = runningPod(w);
      const key = objectKey(refOf(pod));
      objects.set(key, pod);
      pinned.add(key);
    }
    return new PlanState(objects, pinned, this.#options);
  }

  /** The workloads whose pods come from a Deployment, StatefulSet or DaemonSet of this state. */
  templatedWorkloads(): WorkloadRef[] {
    const out = new Map<string, WorkloadRef>();
    for (const w of this.mesh().workloads)
      for (const kind of templateKinds)
        if (this.objects.has(objectKey({ group: 'apps', kind, namespace: w.namespace, name: w.name })))
          out.set(`${w.namespace}/${w.name}`, {
            kind: kind as WorkloadRef['kind'],
            namespace: w.namespace,
            name: w.name,
          });
    return [...out.values()];
  }

  /**
   * How each workload's pods run, by `namespace/name`: their proxy, whether a sidecar accepts HBONE and
   * whether it is marked for Istio mTLS. Two states whose pods run alike in this say the same to the simulator
   * about them (names and addresses aside).
   */
  runningAs(): Map<string, string> {
    const out = new Map<string, string[]>();
    for (const w of this.mesh().workloads)
      addTo(
        out,
        `${w.namespace}/${w.name}`,
        `${w.proxy}${w.acceptsHbone ? '+hbone' : ''}${w.tlsModeIstio ? '+mtls' : ''}`,
      );
    return new Map([...out].map(([k, v]) => [k, v.sort().join(',')]));
  }

  /** The state's own Pod object for a workload's pod, if it has one (else the pod is a template's). */
  #real(w: Workload): KubeObject | undefined {
    return this.objects.get(objectKey(refOf(w.object)));
  }
}

const templateKinds = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);

/** Whether a workload's pod comes from a Deployment, StatefulSet or DaemonSet template. */
function templated(w: Workload): boolean {
  const owner = w.object.metadata.ownerReferences?.[0];
  return owner !== undefined && templateKinds.has(owner.kind);
}

/**
 * The pod a template gives, as it runs: with a sidecar, the marks the injector leaves (its container, the
 * status annotation, the TLS mode label and, when the sidecar accepts HBONE, the tunnel label), which the
 * simulator reads on a running pod instead of asking the namespace.
 */
function runningPod(w: Workload): KubeObject {
  const pod = w.object;
  if (w.proxy !== ProxyKind.Sidecar) return pod;
  const spec = specOf(pod, '/Pod');
  return {
    ...pod,
    metadata: injectedMetadata(pod.metadata, w.name, w.acceptsHbone),
    spec: {
      ...spec,
      containers: [...(spec.containers ?? []), { name: ProxyContainer, image: 'docker.io/istio/proxyv2' }],
    },
  };
}

/** The JSON Patch that turns `from` into `to`. */
export function patchBetween(from: KubeObject, to: KubeObject): PatchOp[] {
  return fastJsonPatch.compare(from, to);
}

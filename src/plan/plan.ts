/**
 * A migration as numbered steps: the changes between a platform and its migration (ambient/migrate.ts),
 * each placed in a stage (stages.ts), run platform first, then namespace by namespace in Istio's order,
 * then the platform's cleanup. Every step comes with the states before and after it and its undo.
 *
 * Two things make the steps safe where Istio's guide alone is not:
 * - A policy whose new form applies only at a waypoint or gateway (`targetRefs`) is added beside the old
 *   one under a name of its own before the switch, and takes the old name only at cleanup, so L7
 *   policies are enforced somewhere in every state (the guide moves them in place first, which leaves
 *   sidecar pods unguarded until the waypoint is used).
 * - Restarts are asked for exactly where a pod would come back different (its proxy, or HBONE), found
 *   by restarting every candidate in a trial state and comparing the pods.
 */
import { namespaceIsAmbient } from '../model/sidecar.ts';
import { at } from '../model/checked.ts';
import { migrateToAmbient, type MigrationResult } from '../ambient/migrate.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { canonicalObject } from '../load/serialize.ts';
import { GatewayClass, Label, Group } from '../model/vocabulary.ts';
import { addTo } from '../model/multimap.ts';
import { isPlainObject, objectKey, refOf, type KubeObject, type ObjectRef } from '../model/object.ts';
import { gatewayClassOf, isKind, specOf } from '../model/specs.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { ProxyKind } from '../mesh/workloads.ts';
import { policySpec } from '../mesh/authorization.ts';
import { labelsMatch } from '../load/snapshot.ts';
import { patchBetween, PlanState, type Operation, type PatchOp, type StateOptions } from './state.ts';
import {
  appliesOnlyByTarget,
  isPolicy,
  labelMaps,
  namespaceOf,
  namespaceStages,
  placeAdded,
  placeChange,
  placeDeleted,
  Stage,
  type Placement,
  type StageContext,
} from './stages.ts';

/** One step of a plan. */
export interface PlanStep {
  /** 1-based. */
  number: number;
  /** `NN-<namespace>-<stage>` or `NN-<stage>`: the name of the step's files. */
  id: string;
  stage: Stage;
  /** The namespaces the step moves (none: a platform step). */
  namespaces: string[];
  operations: Operation[];
  /** The operations that take the state after this step back to the state before it. */
  undo: Operation[];
}

export interface PlanOptions extends StateOptions {
  /** Plan only these namespaces (the rest stay as they are); all that can move when absent. */
  namespaces?: readonly string[];
  /**
   * Policies that move to a waypoint: `beside` (the default) adds their new form beside the old one and
   * takes the old name at cleanup; `in-place` changes them at the namespace's first step, as Istio's guide
   * writes it (which leaves the namespace's sidecars without them until the waypoint is used: kept to
   * show that gap, not to plan with).
   */
  policies?: 'beside' | 'in-place';
  /** The order in which the namespaces move (default: the one `chooseOrder` finds). */
  order?: readonly string[];
}

/** A plan: its steps, the state after each (`states[0]` is the start), and the migration it ends at. */
export interface MigrationPlan {
  steps: PlanStep[];
  states: PlanState[];
  /** The namespaces that move, in the order they do; the namespaces of a group move together. */
  groups: string[][];
  migration: MigrationResult;
}

/** What every ordering of a plan shares: the migration, its changes placed, and the start. */
export interface PlanInput {
  migration: MigrationResult;
  /** The namespaces that move, by name. */
  moving: string[];
  start: PlanState;
  buckets: Buckets;
}

/** The migration of a platform (or of some of its namespaces), its changes placed in stages. */
export function preparePlan(snapshot: Snapshot, options: PlanOptions = {}): PlanInput {
  const migration = migrateToAmbient(snapshot, {
    ...(options.clusterDomain ? { clusterDomain: options.clusterDomain } : {}),
    ...(options.namespaces ? { only: options.namespaces } : {}),
  });
  const before = new Map(snapshot.all().map((o) => [objectKey(refOf(o)), o]));
  const after = new Map(migration.objects.map((o) => [objectKey(refOf(o)), o]));
  const moving = movingNamespaces(before, after);
  const start = PlanState.start(snapshot.all(), options);
  const ctx: StageContext = {
    moving: new Set(moving),
    root: start.mesh().config.rootNamespace,
    isWaypoint: (ns, name) =>
      [before, after].some((m) => {
        const g = m.get(objectKey({ group: Group.GatewayApi, kind: 'Gateway', namespace: ns, name }));
        return g !== undefined && gatewayClassOf(g) === GatewayClass.Waypoint;
      }),
    narrowsSidecars: (policy) => narrowsSidecars(start.mesh(), policy),
  };
  const buckets = new Buckets();
  placeChanges(before, after, ctx, buckets, options.policies ?? 'beside');
  return { migration, moving, start, buckets };
}

/**
 * The platform's first steps, each group's steps in order (the namespaces of a group take each stage
 * together, in one step), then the platform's cleanup.
 */
export function planInOrder(input: PlanInput, groups: readonly (readonly string[])[]): MigrationPlan {
  const sequence: Placement[] = [
    ...platformFirst,
    ...groups.flatMap((namespaces) =>
      namespaceStages.map((stage) => ({ stage, namespaces: [...namespaces] })),
    ),
    { stage: Stage.PlatformCleanup },
  ];
  const { steps, states } = stepsOf(input, sequence);
  return { steps, states, groups: groups.map((g) => [...g]), migration: input.migration };
}

/** The stages that run before any namespace moves. */
export const platformFirst: readonly Placement[] = [
  { stage: Stage.Prerequisites },
  { stage: Stage.MeshConfig },
  { stage: Stage.Gateways },
];

/** The steps of a sequence of placements from the start (empty ones left out), and the state after each. */
export function stepsOf(
  input: PlanInput,
  sequence: readonly Placement[],
  from: PlanState = input.start,
  withUndo = true,
): { steps: PlanStep[]; states: PlanState[] } {
  const states = [from];
  const steps: PlanStep[] = [];
  for (const placement of sequence) {
    const state = at(states, states.length - 1);
    const namespaces = placement.namespaces ?? [];
    let operations =
      namespaces.length === 0
        ? input.buckets.take(placement)
        : namespaces.flatMap((namespace) => input.buckets.take({ stage: placement.stage, namespace }));
    if (placement.stage === Stage.MeshConfig || placement.stage === Stage.Restart)
      operations = [...operations, ...restartsNeeded(state, operations, placement.namespaces)];
    if (operations.length === 0 && placement.stage !== Stage.Prerequisites) continue;
    const next = state.apply(operations);
    const number = steps.length + 1;
    steps.push({
      number,
      id: [String(number).padStart(2, '0'), groupName(namespaces), placement.stage].filter(Boolean).join('-'),
      stage: placement.stage,
      namespaces,
      operations,
      undo: withUndo ? undoOf(state, next, operations) : [],
    });
    states.push(next);
  }
  return { steps, states };
}

/** `StageContext.narrowsSidecars`, on the mesh at the start. */
function narrowsSidecars(mesh: Mesh, policy: KubeObject): boolean {
  if (!isKind(policy, 'security.istio.io/AuthorizationPolicy')) return false;
  const spec = specOf(policy, 'security.istio.io/AuthorizationPolicy');
  if ((spec.action ?? 'ALLOW') !== 'ALLOW') return true;
  const ns = policy.metadata.namespace ?? '';
  const selector = spec.selector?.matchLabels ?? {};
  return mesh.workloads.some(
    (w) =>
      w.namespace === ns &&
      w.proxy === ProxyKind.Sidecar &&
      labelsMatch(w.labels, selector) &&
      !mesh.authorization.forWorkload(w).some((p) => (policySpec(p).action ?? 'ALLOW') === 'ALLOW'),
  );
}

/** A group's name in file names: its namespaces joined by `+`, or the first and how many more. */
function groupName(namespaces: readonly string[]): string {
  return namespaces.length <= 3 ? namespaces.join('+') : `${namespaces[0]}+${namespaces.length - 1}-more`;
}

/**
 * Namespaces the migration puts in ambient mode that were not: labelled ambient now, and either not before
 * or with sidecar injection still on beside the label (a half-way start, as upstream Kubeflow's ambient
 * overlay leaves `kubeflow`), whose pods still run sidecars.
 */
function movingNamespaces(
  before: ReadonlyMap<string, KubeObject>,
  after: ReadonlyMap<string, KubeObject>,
): string[] {
  const out: string[] = [];
  for (const [key, ns] of after) {
    if (!key.startsWith('/Namespace/')) continue;
    const was = before.get(key)?.metadata.labels ?? {};
    if (namespaceIsAmbient(ns.metadata.labels ?? {}) && !namespaceIsAmbient(was))
      out.push(ns.metadata.name ?? '');
  }
  return out.sort();
}

/** The operations of each placement, in the order they were placed. */
class Buckets {
  readonly #ops = new Map<string, Operation[]>();
  add(p: Placement, op: Operation): void {
    addTo(this.#ops, `${p.stage}/${p.namespace ?? ''}`, op);
  }
  take(p: Placement): Operation[] {
    return this.#ops.get(`${p.stage}/${p.namespace ?? ''}`) ?? [];
  }
}

/**
 * Places every difference between the platform and its migration: new objects, deleted ones, and each
 * operation of a changed one; a policy whose new form applies only by target gets that form beside the
 * old one first (under a name of its own), and its old name at cleanup.
 */
function placeChanges(
  before: ReadonlyMap<string, KubeObject>,
  after: ReadonlyMap<string, KubeObject>,
  ctx: StageContext,
  buckets: Buckets,
  policies: 'beside' | 'in-place',
): void {
  // Pods are not changed in place: they run as they were created until a restart replaces them (state.ts).
  const keys = [...new Set([...before.keys(), ...after.keys()])].filter((k) => !k.startsWith('/Pod/')).sort();
  for (const key of keys) {
    const was = before.get(key);
    const now = after.get(key);
    if (was && now && same(was, now)) continue;
    if (!was && now) {
      buckets.add(placeAdded(now, refOf(now), ctx), { op: 'apply', object: asWritten(now) });
      continue;
    }
    if (was && !now) {
      const ref = refOf(was);
      buckets.add(placeDeleted(ref, ctx), { op: 'delete', ref, apiVersion: was.apiVersion });
      continue;
    }
    if (!was || !now) continue;
    const [from, to] = [was, now];
    const ref = refOf(from);
    const ops = changeOf(from, to);
    if (ops.length === 0) continue;
    const moves =
      isPolicy(ref) &&
      ctx.moving.has(namespaceOf(ref)) &&
      appliesOnlyByTarget(to) &&
      !appliesOnlyByTarget(from);
    if (moves && policies === 'in-place') {
      buckets.add({ stage: Stage.Prepare, namespace: namespaceOf(ref) }, { op: 'patch', ref, patch: ops });
      continue;
    }
    if (moves) {
      const transitional = transitionalCopy(to, before, after);
      const ns = namespaceOf(ref);
      buckets.add({ stage: Stage.Prepare, namespace: ns }, { op: 'apply', object: transitional });
      buckets.add({ stage: Stage.Cleanup, namespace: ns }, { op: 'patch', ref, patch: ops });
      buckets.add(
        { stage: Stage.Cleanup, namespace: ns },
        { op: 'delete', ref: refOf(transitional), apiVersion: transitional.apiVersion },
      );
      continue;
    }
    // A label map the object lacks is created by the first part that adds to it (a later `add` would replace it).
    const maps = ops.filter((op) => op.op === 'add' && labelMaps.includes(op.path));
    const byPlacement = new Map<string, { placement: Placement; ops: PatchOp[] }>();
    const parts = ops
      .filter((op) => !maps.includes(op))
      .map((op) => ({ op, placement: placeChange(ref, op, ctx) }))
      .sort((a, b) => stageRank(a.placement.stage) - stageRank(b.placement.stage));
    for (const { op, placement } of parts) {
      const map = maps.find((m) => op.path.startsWith(`${m.path}/`));
      if (map) {
        maps.splice(maps.indexOf(map), 1);
        addPart(byPlacement, placement, map);
      }
      addPart(byPlacement, placement, op);
    }
    for (const { placement, ops: part } of byPlacement.values())
      buckets.add(placement, { op: 'patch', ref, patch: part });
  }
}

function addPart(
  parts: Map<string, { placement: Placement; ops: PatchOp[] }>,
  placement: Placement,
  op: PatchOp,
): void {
  const k = `${placement.stage}/${placement.namespace ?? ''}`;
  const entry = parts.get(k) ?? { placement, ops: [] };
  entry.ops.push(op);
  parts.set(k, entry);
}

/** A stage's place in the order of a plan. */
function stageRank(stage: Stage): number {
  return [...platformFirst.map((p) => p.stage), ...namespaceStages, Stage.PlatformCleanup].indexOf(stage);
}

/** The policy's new form under a name no object has, to stand beside the old one until cleanup. */
function transitionalCopy(
  policy: KubeObject,
  before: ReadonlyMap<string, KubeObject>,
  after: ReadonlyMap<string, KubeObject>,
): KubeObject {
  const ref = refOf(policy);
  let name = `${ref.name}-migrating`;
  for (let i = 2; before.has(objectKey({ ...ref, name })) || after.has(objectKey({ ...ref, name })); i++)
    name = `${ref.name}-migrating-${i}`;
  return asWritten({ ...policy, metadata: { ...policy.metadata, name } });
}

/** A patch with operations on a whole label map split into one per label, so each label finds its stage. */
function expandLabels(ops: PatchOp[], from: KubeObject): PatchOp[] {
  return ops.flatMap((op): PatchOp[] => {
    if (!labelMaps.includes(op.path) || (op.op !== 'add' && op.op !== 'replace')) return [op];
    const old = (patchValue(from, op.path) ?? {}) as Record<string, string>;
    const value = (op as { value: Record<string, string> }).value;
    const at = (k: string) => `${op.path}/${k.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (op.op === 'add') {
      const entries = Object.entries(value);
      return [
        { op: 'add', path: op.path, value: {} },
        ...entries.map(([k, v]): PatchOp => ({ op: 'add', path: at(k), value: v })),
      ];
    }
    return [
      ...Object.keys(old)
        .filter((k) => !(k in value))
        .map((k): PatchOp => ({ op: 'remove', path: at(k) })),
      ...Object.entries(value)
        .filter(([k, v]) => old[k] !== v)
        .map(([k, v]): PatchOp => ({ op: k in old ? 'replace' : 'add', path: at(k), value: v })),
    ];
  });
}

/** The value at a JSON Pointer of an object (undefined when absent). */
function patchValue(object: KubeObject, pointer: string): unknown {
  let value: unknown = object;
  for (const part of pointer.split('/').slice(1)) {
    if (!isPlainObject(value)) return undefined;
    value = value[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  return value;
}

/**
 * The JSON Patch that changes `from` into `to` as written (`asWritten`), labels one by one; the version
 * the object is named by is not a change (the API server serves it at every version).
 */
function changeOf(from: KubeObject, to: KubeObject): PatchOp[] {
  return expandLabels(patchBetween(asWritten(from), { ...asWritten(to), apiVersion: from.apiVersion }), from);
}

/** What the API server sets on an object, which a plan never writes: left out of what it creates and patches. */
const serverMetadata = [
  'resourceVersion',
  'uid',
  'creationTimestamp',
  'generation',
  'managedFields',
  'selfLink',
];

/**
 * An object as a plan writes it: without what the API server sets (its `status`, and metadata such as
 * `resourceVersion`, which a create refuses and a patch must not remove), under the apiVersion it had.
 */
export function asWritten(object: KubeObject): KubeObject {
  const { status: _status, ...rest } = object;
  const metadata = Object.fromEntries(
    Object.entries(object.metadata).filter(([k]) => !serverMetadata.includes(k)),
  );
  return { ...rest, apiVersion: object.apiVersion, kind: object.kind, metadata };
}

function same(a: KubeObject, b: KubeObject): boolean {
  return a === b || JSON.stringify(canonicalObject(a)) === JSON.stringify(canonicalObject(b));
}

/**
 * The restarts a step needs: of the templated workloads in scope (one namespace, or all), those whose
 * pods would come back running otherwise after the step's operations (`PlanState.runningAs`). Found by
 * restarting every one of them in a trial state and comparing.
 */
function restartsNeeded(
  state: PlanState,
  operations: readonly Operation[],
  namespaces?: readonly string[],
): Operation[] {
  const candidates = state
    .templatedWorkloads()
    .filter((w) => namespaces === undefined || namespaces.length === 0 || namespaces.includes(w.namespace));
  if (candidates.length === 0) return [];
  const base = state.apply(operations);
  const before = base.runningAs();
  const after = base
    .apply(candidates.map((workload): Operation => ({ op: 'restart', workload })))
    .runningAs();
  return candidates
    .filter((w) => before.get(`${w.namespace}/${w.name}`) !== after.get(`${w.namespace}/${w.name}`))
    .sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1))
    .map((workload): Operation => ({ op: 'restart', workload }));
}

/**
 * The undo of a step: its changes reversed (a new object deleted, a deleted one applied as it was, a patch
 * by its reverse), then the same restarts; where the pods would come back otherwise than they ran before
 * the step (a namespace no longer injects), injection is turned on for the restart and off after it.
 */
function undoOf(before: PlanState, after: PlanState, operations: readonly Operation[]): Operation[] {
  const undo: Operation[] = [];
  const patched = new Set<string>();
  for (const o of [...operations].reverse()) {
    if (o.op === 'restart') continue;
    const ref = o.op === 'apply' ? refOf(o.object) : o.ref;
    const key = objectKey(ref);
    const [was, now] = [before.objects.get(key), after.objects.get(key)];
    if (patched.has(key)) continue;
    patched.add(key);
    if (!was) undo.push({ op: 'delete', ref, apiVersion: now?.apiVersion ?? '' });
    else if (!now) undo.push({ op: 'apply', object: asWritten(was) });
    else if (!same(asWritten(was), asWritten(now)))
      undo.push({ op: 'patch', ref, patch: changeOf(now, was) });
  }
  const restarts = operations.filter((o) => o.op === 'restart');
  if (restarts.length === 0) return undo;
  const plain = [...undo, ...restarts];
  if (pinsMatch(after.apply(plain), before)) return plain;
  return [...undo, ...withInjection(before, restarts)];
}

/** Restarts wrapped in turning injection on, for each namespace whose pods ran sidecars and would not get them back. */
function withInjection(before: PlanState, restarts: readonly Operation[]): Operation[] {
  const namespaces = [
    ...new Set(restarts.map((r) => (r.op === 'restart' ? r.workload.namespace : ''))),
  ].sort();
  const on: Operation[] = [];
  const off: Operation[] = [];
  for (const ns of namespaces) {
    const object = before.get({ group: '', kind: 'Namespace', namespace: '', name: ns });
    if (!object || object.metadata.labels?.[Label.IstioInjection] === 'enabled') continue;
    const ref = refOf(object);
    const path = `/metadata/labels/${Label.IstioInjection}`;
    on.push({ op: 'patch', ref, patch: [{ op: 'add', path, value: 'enabled' }] });
    off.push({ op: 'patch', ref, patch: [{ op: 'remove', path }] });
  }
  return [...on, ...restarts, ...off];
}

/** Whether the pods of two states run alike (`PlanState.runningAs`). */
function pinsMatch(a: PlanState, b: PlanState): boolean {
  const [x, y] = [a.runningAs(), b.runningAs()];
  return x.size === y.size && [...x].every(([k, v]) => y.get(k) === v);
}

/** Whether two states hold the same objects, pods included. */
export function sameState(a: PlanState, b: PlanState): boolean {
  if (a.objects.size !== b.objects.size) return false;
  for (const [key, x] of a.objects) {
    const y = b.objects.get(key);
    if (!y || !same(x, y)) return false;
  }
  return true;
}

export type { ObjectRef };

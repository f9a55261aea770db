/**
 * One owner's reconcile: apply what is desired and not held, delete what kfmesh manages and no longer
 * wants, and set `MeshReady` (False when an object kfmesh needs is someone else's and lacks what kfmesh
 * would apply). Objects kfmesh did not create (without its managed-by label) are never changed or
 * deleted, and nothing is pruned while the view is partial.
 */
import type { KubeObject } from '../model/object.ts';
import { describeRef, groupOf, refOf } from '../model/object.ts';
import { identity, kindKeyOf, type ObjectCache } from './cache.ts';
import type { Log } from './informers.ts';
import { appliedKinds, neverDeleted } from './permissions.ts';
import {
  controllerOf,
  holds,
  isManaged,
  notManaged,
  ownerNamespace,
  unmarked,
  type NotOurs,
  type OwnerKey,
} from './desired.ts';
import type { Renders } from './renders.ts';
import { ContestTracker, lastOtherManager } from './contest.ts';
import type { StatusWriter } from './status.ts';
import { FieldManager, type Writer } from './writer.ts';

export interface ReconcilerParts {
  cache: ObjectCache;
  renders: Renders;
  writer: Writer;
  status: StatusWriter;
  log: Log;
  /** Called after each apply (for metrics), with its duration in ms. */
  onApply?: ((ms: number) => void) | undefined;
  /** Reconciles the owner again after `ms` (when a contested object is to be taken up again). */
  requeueAfter?: ((owner: OwnerKey, ms: number) => void) | undefined;
}

export class Reconciler {
  readonly #parts: ReconcilerParts;
  readonly #contest = new ContestTracker();
  /** Contested objects whose reconcile after the pause is scheduled. */
  readonly #requeued = new Set<string>();
  #applies = 0;

  constructor(parts: ReconcilerParts) {
    this.#parts = parts;
  }

  /** How many objects were applied. */
  get applies(): number {
    return this.#applies;
  }

  async reconcile(owner: OwnerKey): Promise<void> {
    const { renders, cache, status } = this.#parts;
    const { byOwner, conditions, unreadable } = await renders.desired(ownerNamespace(owner));
    const desired = byOwner.get(owner) ?? [];
    const notOurs: NotOurs[] = [];
    for (const object of desired) {
      const refused = await this.#apply(owner, object);
      if (refused) notOurs.push(refused);
    }
    const wanted = new Set(desired.map(identity));
    const unwanted = cache.managedBy(owner).filter((live) => !wanted.has(identity(live)));
    const partial = unreadable.has(owner)
      ? 'its object has a field of a type its schema refuses (see its MeshReady condition)'
      : cache.partialView(owner);
    if (partial && unwanted.length > 0)
      // What looks unwanted may be wanted by what the missing list would have shown. The owner is
      // reconciled again when the list succeeds (a first list or a re-list queues every owner).
      this.#parts.log('warn', 'not pruning from a partial view', { owner, why: partial });
    else for (const live of unwanted) await this.#prune(owner, live);
    await status.setCondition(owner, notOurs.length > 0 ? notManaged(notOurs) : conditions.get(owner));
  }

  /**
   * Applies a desired object unless the live one already holds it; returns the object (and its controlling
   * owner) when it is someone else's and lacks what kfmesh would apply (kfmesh never takes it over).
   */
  async #apply(owner: OwnerKey, object: KubeObject): Promise<NotOurs | undefined> {
    const { cache, writer, log } = this.#parts;
    if (!appliedKinds.includes(kindKeyOf(object))) {
      // Not a kind the deployment's role lets it write: rendered, but left to `kfmesh render`.
      log('warn', "not applying a kind outside the controller's role", { object: identity(object) });
      return undefined;
    }
    const live = cache.get(object);
    const id = identity(object);
    // The cache holds each kind at the version the server prefers; the fields are compared, not the version.
    if (live && holds(live, { ...object, apiVersion: live.apiVersion })) {
      this.#contest.settled(id, Date.now());
      return undefined;
    }
    if (live && !isManaged(live) && !(object.kind === 'Namespace' && groupOf(object.apiVersion) === '')) {
      // Someone else's object (Namespaces excepted: kfmesh sets only labels).
      if (holds(live, unmarked({ ...object, apiVersion: live.apiVersion }))) return undefined;
      log('warn', 'not applying over an object kfmesh does not manage', { object: identity(object) });
      const controlledBy = controllerOf(live);
      return { object: describeRef(refOf(object)), ...(controlledBy ? { controlledBy } : {}) };
    }
    const now = Date.now();
    if (live && this.#contest.givenUp(id, object, now)) {
      // Restoring it again would go on for ever: another writer puts its own form back each time. It is
      // taken up again after a pause, which needs a reconcile then, whatever else happens.
      const contestedBy = lastOtherManager(live, FieldManager) ?? 'another writer';
      const resumesAt = this.#contest.resumesAt(id) ?? now;
      if (!this.#requeued.has(id)) {
        this.#requeued.add(id);
        this.#parts.requeueAfter?.(owner, resumesAt - now);
      }
      log('warn', 'not restoring an object another writer keeps changing', {
        object: id,
        by: contestedBy,
        retryMs: resumesAt - now,
      });
      return { object: describeRef(refOf(object)), contestedBy };
    }
    this.#requeued.delete(id);
    const started = Date.now();
    await writer.apply(object);
    this.#applies++;
    this.#parts.onApply?.(Date.now() - started);
    log('info', 'applied', { owner, object: identity(object) });
    return undefined;
  }

  /** Deletes a live object kfmesh no longer wants; a Namespace is released, never deleted. */
  async #prune(owner: OwnerKey, live: KubeObject): Promise<void> {
    const kindKey = kindKeyOf(live);
    if (kindKey === '/Namespace') return this.#releaseNamespace(live);
    // Kinds kfmesh doesn't write are not its.
    if (neverDeleted.includes(kindKey) || !appliedKinds.includes(kindKey)) return;
    await this.#parts.writer.delete(live);
    this.#parts.log('info', 'pruned', { owner, object: identity(live) });
  }

  /**
   * A namespace kfmesh labelled for an owner that no longer wants it (its Profile deleted): an empty
   * apply by kfmesh's field manager takes back the labels and owner reference kfmesh set, and only those.
   * Not while another owner of that namespace still wants them.
   */
  async #releaseNamespace(live: KubeObject): Promise<void> {
    const name = live.metadata.name ?? '';
    if (this.#parts.renders.wants(name, live)) return;
    await this.#parts.writer.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    this.#parts.log('info', 'released', { namespace: name });
  }
}

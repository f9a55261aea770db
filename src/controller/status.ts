/**
 * What the controller tells about an owner: its `MeshReady` condition, written only when it changes, and
 * a Warning Event when the condition is False or a reconcile fails. Owners without an object of their own
 * (a Notebook's objects, a namespace's labels) have neither.
 */
import type { ObjectCache } from './cache.ts';
import {
  conditionsOf,
  hasCondition,
  parseOwnerKey,
  withCondition,
  type Condition,
  type OwnerKey,
} from './desired.ts';
import { kubeTime, type Writer } from './writer.ts';

export class StatusWriter {
  readonly #cache: ObjectCache;
  readonly #writer: Writer;

  constructor(cache: ObjectCache, writer: Writer) {
    this.#cache = cache;
    this.#writer = writer;
  }

  /** Sets the owner's condition unless it already says the same; a False one is also an Event. */
  async setCondition(owner: OwnerKey, condition: Condition | undefined): Promise<void> {
    const live = this.#cache.ownerObject(owner);
    if (!live || !condition) return;
    const current = conditionsOf(live);
    if (hasCondition(current, condition)) return;
    await this.#writer.patchStatus(live, { conditions: withCondition(current, condition, kubeTime()) });
    if (condition.status === 'False') await this.warn(owner, condition.reason, condition.message);
  }

  /** A Warning Event about the owner's object. */
  async warn(owner: OwnerKey, reason: string, message: string): Promise<void> {
    const live = this.#cache.ownerObject(owner);
    if (!live) return;
    const { kind, namespace, name } = parseOwnerKey(owner);
    const involved = { apiVersion: live.apiVersion, kind, name, ...(namespace ? { namespace } : {}) };
    await this.#writer.warn(namespace || 'default', { ...involved, uid: live.metadata.uid }, reason, message);
  }
}

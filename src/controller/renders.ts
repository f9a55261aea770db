/**
 * The desired state the controller works towards, one namespace at a time: the same `desiredState` that
 * `kfmesh render` prints, over the cache less the objects kfmesh manages (its own output is not its
 * input). A namespace's objects depend only on what is in it, its Namespace and Profile, and the
 * platform's settings (`namespaceInput`), so a reconcile reuses its namespace's last render when nothing
 * that namespace reads has changed since, and workers share renders. A namespace's renders are spaced by
 * their own duration, so one that changes all the time is rendered at most about half the time.
 */
import type { KubeObject } from '../model/object.ts';
import { addTo } from '../model/multimap.ts';
import { Snapshot } from '../load/snapshot.ts';
import { desiredState, type MeshMode } from '../render/desired-state.ts';
import { identity, kindKeyOf, ownerKinds, type ObjectCache } from './cache.ts';
import {
  desiredByOwner,
  isRenderInput,
  meshReadyConditions,
  namespaceInput,
  ownerKey,
  type Condition,
  type OwnerKey,
} from './desired.ts';

/**
 * One namespace's render: the input generation it reflects, the desired objects by owner, each owner's
 * MeshReady, and when it ended and how long it took (ms).
 */
export interface Rendered {
  generation: number;
  byOwner: Map<OwnerKey, KubeObject[]>;
  /** The owners of each desired object, by its identity. */
  ownersById: Map<string, OwnerKey[]>;
  conditions: Map<OwnerKey, Condition>;
  /**
   * Owners whose own object the render left out (a field of a type its schema refuses, from a CRD looser
   * than kfmesh's schema): what they want is unknown, so nothing of theirs is pruned.
   */
  unreadable: ReadonlySet<OwnerKey>;
  renderedAt: number;
  renderMs: number;
}

export interface RendersOptions {
  mode: MeshMode;
  clusterDomain?: string | undefined;
  /** Told of owners with objects in a render and none in the one before (a new model's namespace going ambient). */
  newOwner: (owner: OwnerKey) => void;
}

export class Renders {
  readonly #cache: ObjectCache;
  readonly #options: RendersOptions;
  readonly #rendered = new Map<string, Rendered>();
  #count = 0;

  constructor(cache: ObjectCache, options: RendersOptions) {
    this.#cache = cache;
    this.#options = options;
  }

  /** How many times a desired state was rendered. */
  get count(): number {
    return this.#count;
  }

  /**
   * The desired state of a namespace as its input is now: its last render if nothing it reads changed
   * since, else a new one, started no sooner after the last than the last took.
   */
  async desired(namespace: string): Promise<Rendered> {
    const fresh = (r: Rendered) => this.#cache.fresh(namespace, r.generation);
    let last = this.#rendered.get(namespace);
    while (!last || !fresh(last)) {
      const wait = last ? last.renderedAt + last.renderMs - Date.now() : 0;
      if (wait > 0) {
        await new Promise((r) => setTimeout(r, wait));
        last = this.#rendered.get(namespace);
        if (last && fresh(last)) break;
      }
      last = this.#render(namespace, last);
    }
    return last;
  }

  /** The owners the last renders have objects for. */
  *owners(): Iterable<OwnerKey> {
    for (const rendered of this.#rendered.values()) yield* rendered.byOwner.keys();
  }

  /** Whether the last render of `namespace` wants this object, for any owner. */
  wants(namespace: string, object: KubeObject): boolean {
    return this.#rendered.get(namespace)?.ownersById.has(identity(object)) ?? false;
  }

  /**
   * The owners whose last render wants this object, whoever holds it now: a change to it concerns them
   * even when another controller took it (and kfmesh's labels with it), so their status says so.
   */
  ownersWanting(object: KubeObject): OwnerKey[] {
    const id = identity(object);
    return [...this.#rendered.values()].flatMap((r) => r.ownersById.get(id) ?? []);
  }

  #render(namespace: string, before: Rendered | undefined): Rendered {
    const started = Date.now();
    const generation = this.#cache.generation;
    const input = namespaceInput(this.#cache.objects(), namespace).filter(isRenderInput);
    const snapshot = Snapshot.of(input, '<cluster>');
    const result = desiredState(snapshot, {
      mode: this.#options.mode,
      ...(this.#options.clusterDomain ? { clusterDomain: this.#options.clusterDomain } : {}),
    });
    const byOwner = desiredByOwner(result);
    const owners = input
      .filter((o) => ownerKinds.has(kindKeyOf(o)))
      .map((o) => ownerKey(o.kind, o.metadata.namespace, o.metadata.name ?? ''));
    const now = Date.now();
    const ownersById = new Map<string, OwnerKey[]>();
    for (const [owner, objects] of byOwner) for (const o of objects) addTo(ownersById, identity(o), owner);
    const rendered: Rendered = {
      generation,
      byOwner,
      ownersById,
      conditions: meshReadyConditions(
        { ...result, problems: [...snapshot.problems, ...result.problems] },
        owners,
      ),
      unreadable: new Set(
        snapshot.problems
          .filter((p) => ownerKinds.has(kindKeyOf(p.object)))
          .map((p) => ownerKey(p.object.kind, p.object.metadata.namespace, p.object.metadata.name ?? '')),
      ),
      renderedAt: now,
      renderMs: now - started,
    };
    this.#rendered.set(namespace, rendered);
    this.#count++;
    for (const owner of byOwner.keys()) if (!before?.byOwner.has(owner)) this.#options.newOwner(owner);
    return rendered;
  }
}

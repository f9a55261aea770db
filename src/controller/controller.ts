/**
 * The controller, put together as controller-runtime puts one together: informers keep a cache of the
 * kinds kfmesh reads (`informers.ts`, `cache.ts`); every change queues the owners it concerns
 * (`owners.ts`); a few workers take owners from the queue, never one owner twice at a time, and
 * reconcile them (`reconciler.ts`) towards the namespace's desired state (`renders.ts`), writing through
 * one writer (`writer.ts`) and telling the owner's status (`status.ts`). Failures are retried with
 * per-key exponential backoff and reported as Events. Nothing is reconciled before every kind's first
 * list: a list that failed is never taken for an empty one.
 */
import type { KubeObject } from '../model/object.ts';
import type { KubeClient } from '../kube/client.ts';
import type { MeshMode } from '../render/desired-state.ts';
import { ObjectCache } from './cache.ts';
import { errorText, Informers, type Log } from './informers.ts';
import { allOwners, inScope, ownersConcerned } from './owners.ts';
import { configMapParts, type OwnerKey } from './desired.ts';
import { GroupKind } from '../model/vocabulary.ts';
import { Reconciler } from './reconciler.ts';
import { Renders } from './renders.ts';
import { StatusWriter } from './status.ts';
import { WorkQueue } from './queue.ts';
import { Writer } from './writer.ts';

export interface ControllerOptions {
  mode: MeshMode;
  /** Only these namespaces (all when empty). */
  namespaces?: readonly string[];
  clusterDomain?: string;
  /** How long the server keeps a watch open before the informer renews it (default 300 s). */
  watchTimeoutSeconds?: number;
  /** Owners reconciled at the same time (default 4). */
  workers?: number;
  log?: Log;
  /** Called after each reconcile (for metrics): the owner, its duration, and the error if it failed. */
  onReconcile?: (owner: OwnerKey, ms: number, error?: unknown) => void;
  /** Called after each apply (for metrics). */
  onApply?: (ms: number) => void;
  /**
   * With leader election: until when (epoch ms) this replica may still write, or 0 when it may not. Every
   * write checks it first and gets no longer than that to complete, so a leader whose renewals stall stops
   * writing at its renew deadline, before another replica can take the lease.
   */
  writeDeadline?: () => number;
  /** The controller's own Pod, for Events about the controller itself (a list that fails). */
  pod?: { namespace: string; name: string };
}

export class Controller {
  readonly #options: ControllerOptions;
  readonly #queue = new WorkQueue({ baseDelayMs: 50, maxDelayMs: 300_000, qps: 50, burst: 200 });
  readonly #cache = new ObjectCache();
  readonly #informers: Informers;
  readonly #renders: Renders;
  readonly #writer: Writer;
  readonly #status: StatusWriter;
  readonly #reconciler: Reconciler;
  #stopping: () => void = () => undefined;
  readonly #stopSignal = new Promise<void>((resolve) => (this.#stopping = resolve));
  #synced = false;
  #syncedAt = 0;
  #reconciles = 0;
  /** Whether "in sync" was said (once, the first time the queue drained). */
  #drained = false;
  #stopped = false;
  #workers: Promise<void>[] = [];

  constructor(client: KubeClient, options: ControllerOptions) {
    this.#options = options;
    const log: Log = (level, message, fields) => options.log?.(level, message, fields);
    const namespaces = options.namespaces ?? [];
    this.#informers = new Informers(
      client,
      this.#cache,
      {
        namespaces,
        watchTimeoutSeconds: options.watchTimeoutSeconds,
        inScope: (object: KubeObject) => inScope(object, namespaces),
        // ConfigMaps: only those the render's readers declare, never the ones tenants write.
        partsOf: (kindKey) => (kindKey === GroupKind.ConfigMap ? configMapParts() : undefined),
        log,
      },
      {
        changed: (kindKey, object, inputChanged) => {
          if (this.#synced)
            this.#queueAll([
              ...ownersConcerned(kindKey, object, inputChanged, () => this.#owners()),
              ...this.#renders.ownersWanting(object),
            ]);
        },
        // After the first lists, a re-list may have brought anything: everything is reconciled again.
        relisted: () => {
          if (this.#synced) this.#queueAll(this.#owners());
        },
        listFailed: (reason, message) => void this.#aboutSelf(reason, message),
      },
    );
    this.#writer = new Writer(client, this.#cache, (k) => this.#informers.served(k), options.writeDeadline);
    this.#renders = new Renders(this.#cache, {
      mode: options.mode,
      clusterDomain: options.clusterDomain,
      newOwner: (owner) => this.#queue.add(owner),
    });
    this.#status = new StatusWriter(this.#cache, this.#writer);
    this.#reconciler = new Reconciler({
      cache: this.#cache,
      renders: this.#renders,
      writer: this.#writer,
      status: this.#status,
      log,
      onApply: options.onApply,
      requeueAfter: (owner, ms) => setTimeout(() => this.#queue.add(owner), ms).unref(),
    });
  }

  /** True once every informer has listed (the cache is complete). */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * Why the controller is not ready, or undefined when it is: every kind's first list succeeded and no
   * kind's latest list failed.
   */
  get notReady(): string | undefined {
    const discovering = this.#informers.discovering;
    if (discovering) return discovering;
    if (!this.#synced) return `waiting for the first list of ${this.#cache.notListed().join(', ')}`;
    const failing = this.#cache.failingKinds();
    return failing.length > 0 ? `latest list failed: ${failing.join('; ')}` : undefined;
  }

  get queueDepth(): number {
    return this.#queue.depth;
  }

  /** How many times the desired state was rendered. */
  get renders(): number {
    return this.#renders.count;
  }

  /**
   * Starts the informers and the workers; resolves once every kind's first list has succeeded (discovery
   * and lists that fail are retried with backoff, and said in the log and by `notReady`), or when stopped
   * first. Nothing is reconciled before: a list that failed is never taken for an empty one.
   */
  async start(): Promise<void> {
    const kinds = await this.#informers.start();
    if (kinds === undefined) return;
    await Promise.race([this.#cache.firstLists(), this.#stopSignal]);
    if (this.#stopped) return;
    this.#synced = true;
    this.#informers.rediscoverEvery(60_000);
    this.#syncedAt = Date.now();
    this.#options.log?.('info', 'caches synced', { kinds, objects: this.#cache.size });
    this.#queueAll(this.#owners());
    this.#workers = Array.from({ length: Math.max(1, this.#options.workers ?? 4) }, () => this.#work());
  }

  /** Stops the workers (after their current key) and the informers. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping();
    this.#informers.halt();
    this.#queue.close();
    await Promise.all(this.#workers);
    await this.#informers.stop();
  }

  async #work(): Promise<void> {
    for (let key = await this.#queue.next(); key !== undefined; key = await this.#queue.next()) {
      const started = Date.now();
      try {
        await this.#reconciler.reconcile(key);
        this.#queue.forget(key);
        this.#options.onReconcile?.(key, Date.now() - started);
      } catch (error) {
        const retryMs = this.#queue.retry(key);
        this.#options.onReconcile?.(key, Date.now() - started, error);
        this.#options.log?.('error', 'reconcile failed', { owner: key, error: errorText(error), retryMs });
        await this.#status.warn(key, 'ReconcileFailed', errorText(error)).catch(() => undefined);
      } finally {
        this.#reconciles++;
        this.#queue.done(key);
        if (!this.#drained && this.#queue.idle) {
          this.#drained = true;
          this.#options.log?.('info', 'in sync', {
            reconciles: this.#reconciles,
            applies: this.#reconciler.applies,
            renders: this.#renders.count,
            failing: this.#queue.failing,
            seconds: (Date.now() - this.#syncedAt) / 1000,
          });
        }
      }
    }
  }

  #owners(): OwnerKey[] {
    return allOwners(this.#cache, this.#renders);
  }

  #queueAll(owners: Iterable<OwnerKey>): void {
    for (const owner of owners) this.#queue.add(owner);
  }

  /** A Warning Event on the controller's own Pod, when it knows it. */
  async #aboutSelf(reason: string, message: string): Promise<void> {
    const pod = this.#options.pod;
    if (!pod) return;
    const involved = { apiVersion: 'v1', kind: 'Pod', name: pod.name, namespace: pod.namespace };
    await this.#writer.warn(pod.namespace, involved, reason, message).catch(() => undefined);
  }
}

/**
 * The controller: informers (list + watch with bookmarks, re-list on 410, restart with backoff on any
 * other error) keep a cache of the kinds kfmesh reads; every change queues the owners it concerns; a few
 * workers reconcile owners, never one owner twice at a time: the owner's desired objects are server-side
 * applied with field manager `kfmesh` where the live object doesn't already hold them, live objects kfmesh
 * manages for that owner and no longer wants are deleted, and the owner's `MeshReady` condition is
 * written. Failures are retried with per-key exponential backoff and reported as Events. Objects kfmesh
 * did not create (without its managed-by label) are never changed or deleted.
 *
 * The desired objects come from the same `desiredState` that `kfmesh render` prints, over the cache less
 * the objects kfmesh manages (its own output is not its input), one namespace at a time: a namespace's
 * objects depend only on what is in it, its Namespace and Profile, and the platform's settings
 * (`namespaceInput`). Each input change moves a generation, recorded for its namespace (or for all, for a
 * settings change); a reconcile uses its namespace's last render when nothing that namespace reads has
 * changed since, so the workers share renders. A namespace's renders are spaced by their own duration, so
 * one that changes all the time is rendered at most about half the time.
 */
import { makeInformer, type Informer, type KubernetesObject } from '@kubernetes/client-node';
import type { KubeObject } from '../model/object.ts';
import { groupOf, isPlainObject } from '../model/object.ts';
import { Snapshot } from '../load/snapshot.ts';
import { clusterKinds, servedKinds } from '../load/cluster.ts';
import {
  DefaultRequestTimeoutMs,
  KubeApiError,
  KubeClient,
  type RequestBody,
  type Resource,
} from '../kube/client.ts';
import { desiredState, type MeshMode } from '../render/desired-state.ts';
import { WorkQueue } from './queue.ts';
import { appliedKinds, neverDeleted, statusWritten } from './permissions.ts';
import {
  conditionsOf,
  desiredByOwner,
  hasCondition,
  holds,
  isManaged,
  MeshReady,
  meshReadyConditions,
  namespaceInput,
  notManaged,
  ownerNamespace,
  isPlatformConfig,
  isRenderInput,
  renderNamespaceOf,
  type Condition,
  ownerKey,
  ownerOf,
  parseOwnerKey,
  unmarked,
  withCondition,
  type OwnerKey,
} from './plan.ts';
import { GroupKind } from '../model/vocabulary.ts';

export const FieldManager = 'kfmesh';

export interface ControllerOptions {
  mode: MeshMode;
  /** Only these namespaces (all when empty). */
  namespaces?: readonly string[];
  clusterDomain?: string;
  /** How long the server keeps a watch open before the informer renews it (default 300 s). */
  watchTimeoutSeconds?: number;
  /** Owners reconciled at the same time (default 4). */
  workers?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
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

/** A write refused because this replica no longer leads. */
export class NotLeadingError extends Error {
  override name = 'NotLeadingError';
}

/** What a kind's informer has achieved: its first list, and the error of its latest list when that failed. */
interface KindState {
  listed: boolean;
  failed: string | undefined;
  /** Resolves when the first list succeeds. */
  firstList: Promise<void>;
  listedOnce: () => void;
}

/** Exponential backoff with jitter: `base` doubled per attempt up to `cap`, then ±20%. */
export function backoffMs(attempt: number, base = 1000, cap = 30_000, random = Math.random): number {
  const delay = Math.min(cap, base * 2 ** Math.max(0, attempt));
  return Math.round(delay * (0.8 + 0.4 * random()));
}

/** The owners that are objects of their own (with a status): InferenceServices and Profiles. */
const ownerKinds = new Set(statusWritten);

/**
 * One namespace's render: the input generation it reflects, the desired objects by owner, each owner's
 * MeshReady, and when it ended and how long it took (ms).
 */
interface Rendered {
  generation: number;
  byOwner: Map<OwnerKey, KubeObject[]>;
  conditions: Map<OwnerKey, Condition>;
  renderedAt: number;
  renderMs: number;
}

export class Controller {
  readonly #client: KubeClient;
  readonly #options: ControllerOptions;
  readonly #queue = new WorkQueue({ baseDelayMs: 50, maxDelayMs: 300_000, qps: 50, burst: 200 });
  readonly #caches = new Map<string, Map<string, KubeObject>>();
  /** The managed objects of each owner, by identity (an index into the caches). */
  readonly #managed = new Map<OwnerKey, Map<string, KubeObject>>();
  /** The input generation at each namespace's last change, and at the last change every namespace reads. */
  readonly #changedAt = new Map<string, number>();
  #sharedChangedAt = 0;
  /** The last render of each namespace. */
  readonly #rendered = new Map<string, Rendered>();
  readonly #resources = new Map<string, Resource>();
  readonly #informers: Informer<KubernetesObject>[] = [];
  readonly #watchdogs: ReturnType<typeof setInterval>[] = [];
  /** Informer starts (list, then watch) under way. */
  readonly #pendingStarts = new Set<Promise<void>>();
  /** Each kind's list state, by `group/kind`. */
  readonly #kinds = new Map<string, KindState>();
  /** Why the controller is not ready yet (discovery failing, first lists pending), when it isn't. */
  #starting: string | undefined = 'starting';
  /** Resolves when stop() is called, to end the waits of start(). */
  #stopping: () => void = () => undefined;
  readonly #stopSignal = new Promise<void>((resolve) => (this.#stopping = resolve));
  #generation = 0;
  #renders = 0;
  #synced = false;
  #syncedAt = 0;
  #reconciles = 0;
  #applies = 0;
  /** Whether the queue has drained once since the caches synced (logged as "in sync"). */
  #drained = false;
  #stopped = false;
  #workers: Promise<void>[] = [];

  constructor(client: KubeClient, options: ControllerOptions) {
    this.#client = client;
    this.#options = options;
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
    if (this.#starting) return this.#starting;
    if (!this.#synced) {
      const pending = [...this.#kinds]
        .filter(([, state]) => !state.listed)
        .map(([kind, state]) => (state.failed ? `${kind} (${state.failed})` : kind));
      return `waiting for the first list of ${pending.sort().join(', ')}`;
    }
    const failing = this.#failingKinds();
    return failing.length > 0 ? `latest list failed: ${failing.join('; ')}` : undefined;
  }

  /**
   * Why the view of an owner is partial, or undefined when it is whole: a kind whose latest list failed
   * or that has not listed yet, or an owner of a kind that is not watched (not served, or not yet).
   */
  #partialView(owner: OwnerKey): string | undefined {
    const incomplete = [...this.#kinds]
      .filter(([, state]) => state.failed !== undefined || !state.listed)
      .map(([kind, state]) => `${kind} (${state.failed ?? 'not listed yet'})`);
    if (incomplete.length > 0) return `lists incomplete: ${incomplete.sort().join('; ')}`;
    const { kind } = parseOwnerKey(owner);
    const kindKey = ownerKindKeys[kind];
    if (!kindKey || !this.#kinds.has(kindKey)) return `${kind} is not a kind the server serves now`;
    return undefined;
  }

  /** The kinds whose latest list failed, with the error. */
  #failingKinds(): string[] {
    return [...this.#kinds]
      .filter(([, state]) => state.failed !== undefined)
      .map(([kind, state]) => `${kind} (${state.failed ?? ''})`)
      .sort();
  }

  get queueDepth(): number {
    return this.#queue.depth;
  }

  /** How many times the desired state was rendered. */
  get renders(): number {
    return this.#renders;
  }

  /**
   * Starts the informers and the workers; resolves once every kind's first list has succeeded (discovery
   * and lists that fail are retried with backoff, and said in the log and by `notReady`), or when stopped
   * first. Nothing is reconciled before: a list that failed is never taken for an empty one.
   */
  async start(): Promise<void> {
    const wanted = await this.#discover();
    if (!wanted) return;
    for (const r of wanted) this.#startInformer(r);
    this.#starting = undefined;
    await Promise.race([Promise.all([...this.#kinds.values()].map((k) => k.firstList)), this.#stopSignal]);
    if (this.#stopped) return;
    this.#synced = true;
    this.#rediscoverEvery(60_000);
    this.#syncedAt = Date.now();
    const objects = [...this.#caches.values()].reduce((n, cache) => n + cache.size, 0);
    this.#log('info', 'caches synced', { kinds: wanted.length, objects });
    for (const owner of this.#allOwners()) this.#queue.add(owner);
    this.#workers = Array.from({ length: Math.max(1, this.#options.workers ?? 4) }, () => this.#work());
  }

  /**
   * The kinds to read, asking discovery again with backoff while it fails, or undefined when stopped first.
   * Discovery that could not describe one of the groups kfmesh reads counts as failed: a kind missing from
   * it would be taken for a kind the cluster doesn't have, and what kfmesh made from it pruned.
   */
  async #discover(): Promise<Resource[] | undefined> {
    for (let attempt = 0; !this.#stopped; attempt++) {
      try {
        await this.#serverReady();
        this.#client.rediscover();
        const wanted = await servedKinds(this.#client);
        const missing = this.#client.undiscoveredGroups.filter((g) => readGroups.has(g));
        if (missing.length > 0) throw new Error(`discovery could not describe ${missing.join(', ')}`);
        return wanted;
      } catch (error) {
        const retryMs = backoffMs(attempt);
        this.#starting = `discovery failed (${errorText(error)}); retrying in ${retryMs} ms`;
        this.#log('warn', 'discovery failed; retrying', { error: errorText(error), retryMs });
        await Promise.race([sleep(retryMs), this.#stopSignal]);
      }
    }
    return undefined;
  }

  /**
   * Waits for nothing but fails unless the API server says it is ready: a server still starting serves
   * discovery before it knows every custom resource, and a kind missing there would be taken for one
   * the cluster lacks. A server that won't say (its /readyz forbidden or absent) is taken as ready.
   */
  async #serverReady(): Promise<void> {
    try {
      await this.#client.request('GET', '/readyz');
    } catch (error) {
      if (error instanceof KubeApiError && [401, 403, 404].includes(error.status)) return;
      throw new Error(`the API server is not ready: ${errorText(error)}`, { cause: error });
    }
  }

  /**
   * Asks discovery again now and then, and starts informers for kinds that appeared since (KServe or
   * the Gateway API installed after the controller, or a group a restarting server listed late).
   */
  #rediscoverEvery(ms: number): void {
    const timer = setInterval(() => {
      if (this.#stopped) return;
      void (async () => {
        this.#client.rediscover();
        const wanted = await servedKinds(this.#client);
        for (const r of wanted)
          if (!this.#kinds.has(`${r.group}/${r.kind}`)) {
            this.#log('info', 'a kind appeared; watching it', { kind: `${r.group}/${r.kind}` });
            this.#startInformer(r);
          }
      })().catch((error: unknown) => this.#log('warn', 'discovery failed', { error: errorText(error) }));
    }, ms);
    timer.unref();
    this.#watchdogs.push(timer);
  }

  /** Stops the worker (after its current key) and the informers. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping();
    this.#queue.close();
    await Promise.all(this.#workers);
    for (const w of this.#watchdogs) clearInterval(w);
    await Promise.all(this.#informers.map((i) => i.stop()));
    // Starts under way open their watch after the stop above: wait for them (a few seconds at most) and
    // stop again, so that no connection outlives the controller.
    await Promise.race([Promise.allSettled([...this.#pendingStarts]), sleep(5000)]);
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  #startInformer(resource: Resource): void {
    const kindKey = `${resource.group}/${resource.kind}`;
    this.#resources.set(kindKey, resource);
    let listedOnce: () => void = () => undefined;
    const firstList = new Promise<void>((resolve) => (listedOnce = resolve));
    const state: KindState = { listed: false, failed: undefined, firstList, listedOnce };
    this.#kinds.set(kindKey, state);
    const cache = new Map<string, KubeObject>();
    this.#caches.set(kindKey, cache);
    const namespaces = this.#options.namespaces ?? [];
    const scoped = resource.namespaced && namespaces.length === 1 ? namespaces[0] : undefined;
    // The server ends each watch after watchTimeoutSeconds and the informer opens the next one, so a
    // watch that stops answering (its server went away mid-request) is noticed by the watchdog below.
    const timeout = this.#options.watchTimeoutSeconds ?? 300;
    const path = `${KubeClient.collectionPath(resource, scoped)}?allowWatchBookmarks=true&timeoutSeconds=${timeout}`;
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    const key = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
    // A (re-)list replaces the cache with what the server has now (the informer reports only what
    // changed against its own copy), and, after the first, everything is reconciled again. A list that
    // fails leaves the cache as it was and marks the kind failing: nothing is pruned while any kind is.
    const informer = makeInformer<KubernetesObject>(this.#client.config, path, async () => {
      let listed;
      try {
        listed = await this.#client.listWithVersion(resource, scoped);
      } catch (error) {
        this.#listFailed(kindKey, state, error);
        throw error;
      }
      const { items, resourceVersion } = listed;
      if (state.failed !== undefined) this.#log('info', 'list succeeded again', { kind: kindKey });
      state.failed = undefined;
      state.listed = true;
      state.listedOnce();
      attempts = 0;
      for (const old of cache.values()) this.#unindex(old);
      cache.clear();
      for (const item of items) if (this.#inScope(item)) this.#put(cache, key(item), item);
      this.#sharedChangedAt = ++this.#generation;
      if (this.#synced) for (const owner of this.#allOwners()) this.#queue.add(owner);
      return { apiVersion, kind: `${resource.kind}List`, metadata: { resourceVersion }, items };
    });
    const changed = (o: KubernetesObject, deleted: boolean) => {
      const object = { ...o, apiVersion, kind: resource.kind } as KubeObject;
      if (!this.#inScope(object)) return;
      const inputChanged = this.#store(cache, key(o), object, deleted);
      if (this.#synced) this.#enqueueFor(kindKey, object, inputChanged);
    };
    informer.on('add', (o) => changed(o, false));
    informer.on('update', (o) => changed(o, false));
    informer.on('delete', (o) => changed(o, true));
    // A failed watch stops the informer; so does a failed list: both come back here, and are retried
    // with exponential backoff and jitter (1 s doubling to 30 s), which only a successful list resets.
    let attempts = 0;
    const restart = (error: unknown) => {
      if (this.#stopped) return;
      const retryMs = backoffMs(attempts++);
      this.#log('warn', 'watch failed; restarting', { kind: kindKey, error: errorText(error), retryMs });
      setTimeout(() => {
        if (this.#stopped) return;
        this.#track(informer.start()).catch(restart);
      }, retryMs).unref();
    };
    informer.on('error', restart);
    let connectedAt = Date.now();
    informer.on('connect', () => {
      connectedAt = Date.now();
    });
    const watchdog = setInterval(
      () => {
        if (this.#stopped || Date.now() - connectedAt < (timeout + 10) * 1000) return;
        connectedAt = Date.now();
        void informer.stop().then(() => restart(new Error(`no watch renewal in ${timeout + 10} s`)));
      },
      Math.min(timeout, 10) * 1000,
    );
    watchdog.unref();
    this.#watchdogs.push(watchdog);
    this.#informers.push(informer);
    // A list that fails is reported through 'error' (and restarted there), not by this promise.
    this.#track(informer.start()).catch(restart);
  }

  /**
   * Keeps an informer's start while it runs: a watch that starts after stop() stopped its informer would
   * not be aborted, and its open connection would keep the process alive until the server ends it.
   */
  #track(start: Promise<void>): Promise<void> {
    this.#pendingStarts.add(start);
    const settled = () => this.#pendingStarts.delete(start);
    start.then(settled, settled);
    return start;
  }

  /** A kind's list failed: marked failing (so nothing is pruned), logged, and an Event on the controller's Pod. */
  #listFailed(kindKey: string, state: KindState, error: unknown): void {
    const text = errorText(error);
    const first = state.failed !== text;
    state.failed = text;
    if (!first) return;
    const forbidden = error instanceof KubeApiError && error.status === 403;
    this.#log(
      'error',
      forbidden
        ? 'list forbidden; nothing is pruned until it succeeds'
        : 'list failed; nothing is pruned until it succeeds',
      {
        kind: kindKey,
        error: text,
      },
    );
    const pod = this.#options.pod;
    if (pod)
      void this.#postEvent(
        pod.namespace,
        { apiVersion: 'v1', kind: 'Pod', name: pod.name, namespace: pod.namespace },
        forbidden ? 'ListForbidden' : 'ListFailed',
        `kfmesh cannot list ${kindKey}: ${text}. Nothing is pruned while a list fails.`,
      ).catch(() => undefined);
  }

  #inScope(object: KubeObject): boolean {
    const namespaces = this.#options.namespaces ?? [];
    if (namespaces.length === 0) return true;
    const ns = object.metadata.namespace ?? (object.kind === 'Namespace' ? object.metadata.name : undefined);
    if (object.kind === 'Profile') return namespaces.includes(object.metadata.name ?? '');
    return ns === undefined || namespaces.includes(ns) || object.kind === 'ConfigMap';
  }

  /** Queues every owner whose objects are in `namespace`. */
  #enqueueNamespace(namespace: string): void {
    for (const owner of this.#allOwners()) if (ownerNamespace(owner) === namespace) this.#queue.add(owner);
  }

  #enqueueFor(kindKey: string, object: KubeObject, inputChanged: boolean): void {
    if (kindKey === '/Namespace') {
      // A namespace's labels concern the owners in it (its mode) and the namespace's own labels.
      const namespace = object.metadata.name ?? '';
      if (inputChanged) this.#enqueueNamespace(namespace);
      this.#queue.add(ownerKey('Namespace', undefined, namespace));
      return;
    }
    if (kindKey === '/ConfigMap') {
      if (inputChanged && isPlatformConfig(object))
        for (const owner of this.#allOwners()) this.#queue.add(owner);
      return;
    }
    if (ownerKinds.has(kindKey) || kindKey === GroupKind.Notebook)
      this.#queue.add(ownerKey(object.kind, object.metadata.namespace, object.metadata.name ?? ''));
    else if (inputChanged && object.metadata.namespace)
      // Something the owners of the namespace are rendered from (a model's predictor Service, a waypoint).
      this.#enqueueNamespace(object.metadata.namespace);
    const owner = isManaged(object) ? ownerOf(object) : undefined;
    if (owner) this.#queue.add(owner);
  }

  /** Caches an object and indexes it under its owner when kfmesh manages it. */
  #put(cache: Map<string, KubeObject>, key: string, object: KubeObject): void {
    cache.set(key, object);
    const owner = isManaged(object) ? ownerOf(object) : undefined;
    if (!owner) return;
    const objects = this.#managed.get(owner) ?? new Map<string, KubeObject>();
    objects.set(identity(object), object);
    this.#managed.set(owner, objects);
  }

  #unindex(object: KubeObject): void {
    const owner = isManaged(object) ? ownerOf(object) : undefined;
    const objects = owner ? this.#managed.get(owner) : undefined;
    if (!owner || !objects) return;
    objects.delete(identity(object));
    if (objects.size === 0) this.#managed.delete(owner);
  }

  *#cachedObjects(): Iterable<KubeObject> {
    for (const cache of this.#caches.values()) yield* cache.values();
  }

  /**
   * Every owner kfmesh has or had objects for: the InferenceServices, Profiles and Notebooks, the owners
   * of managed objects, and the owners the last render has objects for.
   */
  #allOwners(): OwnerKey[] {
    const out = new Set<OwnerKey>(this.#managed.keys());
    for (const kindKey of [...ownerKinds, GroupKind.Notebook])
      for (const o of this.#caches.get(kindKey)?.values() ?? [])
        out.add(ownerKey(o.kind, o.metadata.namespace, o.metadata.name ?? ''));
    for (const rendered of this.#rendered.values())
      for (const owner of rendered.byOwner.keys()) out.add(owner);
    for (const o of this.#caches.get('/Namespace')?.values() ?? [])
      if (isManaged(o)) out.add(ownerKey('Namespace', undefined, o.metadata.name ?? ''));
    return [...out].sort();
  }

  /**
   * The desired state of a namespace as its input is now: its last render if nothing it reads changed
   * since, else a new one, started no sooner after the last than the last took (so a namespace changing
   * all the time is rendered at most about half the time).
   */
  async #desired(namespace: string): Promise<Rendered> {
    const fresh = (r: Rendered) =>
      r.generation >= this.#sharedChangedAt && r.generation >= (this.#changedAt.get(namespace) ?? 0);
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

  #render(namespace: string, before: Rendered | undefined): Rendered {
    const started = Date.now();
    const generation = this.#generation;
    const input = namespaceInput(this.#cachedObjects(), namespace).filter(isRenderInput);
    const result = desiredState(Snapshot.of(input, '<cluster>'), {
      mode: this.#options.mode,
      ...(this.#options.clusterDomain ? { clusterDomain: this.#options.clusterDomain } : {}),
    });
    const byOwner = desiredByOwner(result);
    const owners = input
      .filter((o) => ownerKinds.has(`${groupOf(o.apiVersion)}/${o.kind}`))
      .map((o) => ownerKey(o.kind, o.metadata.namespace, o.metadata.name ?? ''));
    const now = Date.now();
    const rendered: Rendered = {
      generation,
      byOwner,
      conditions: meshReadyConditions(result, owners),
      renderedAt: now,
      renderMs: now - started,
    };
    this.#rendered.set(namespace, rendered);
    this.#renders++;
    // Owners with objects now and none before (a new model's namespace going ambient) are queued.
    for (const owner of byOwner.keys()) if (!before?.byOwner.has(owner)) this.#queue.add(owner);
    return rendered;
  }

  async #work(): Promise<void> {
    for (let key = await this.#queue.next(); key !== undefined; key = await this.#queue.next()) {
      const started = Date.now();
      try {
        await this.#reconcile(key);
        this.#queue.forget(key);
        this.#options.onReconcile?.(key, Date.now() - started);
      } catch (error) {
        const retryMs = this.#queue.retry(key);
        this.#options.onReconcile?.(key, Date.now() - started, error);
        this.#log('error', 'reconcile failed', { owner: key, error: (error as Error).message, retryMs });
        await this.#event(key, 'ReconcileFailed', (error as Error).message).catch(() => undefined);
      } finally {
        this.#reconciles++;
        this.#queue.done(key);
        if (!this.#drained && this.#queue.idle) {
          this.#drained = true;
          this.#log('info', 'in sync', {
            reconciles: this.#reconciles,
            applies: this.#applies,
            renders: this.#renders,
            failing: this.#queue.failing,
            seconds: (Date.now() - this.#syncedAt) / 1000,
          });
        }
      }
    }
  }

  /**
   * One owner: apply what is desired and not held, delete what kfmesh manages and no longer wants, set
   * MeshReady (False when an object kfmesh needs is someone else's and lacks what kfmesh would apply).
   */
  async #reconcile(owner: OwnerKey): Promise<void> {
    const { byOwner, conditions } = await this.#desired(ownerNamespace(owner));
    const desired = byOwner.get(owner) ?? [];
    const wanted = new Set(desired.map(identity));
    const notOurs: string[] = [];
    for (const object of desired) {
      if (!appliedKinds.includes(`${groupOf(object.apiVersion)}/${object.kind}`)) {
        // Not a kind the deployment's role lets it write: rendered, but left to `kfmesh render`.
        this.#log('warn', "not applying a kind outside the controller's role", { object: identity(object) });
        continue;
      }
      const live = this.#cached(object);
      // The cache holds each kind at the version the server prefers; the fields are compared, not the version.
      if (live && holds(live, { ...object, apiVersion: live.apiVersion })) continue;
      if (live && !isManaged(live) && !(object.kind === 'Namespace' && groupOf(object.apiVersion) === '')) {
        // Someone else's object: kfmesh never takes it over (Namespaces excepted: kfmesh sets only labels).
        if (!holds(live, unmarked({ ...object, apiVersion: live.apiVersion }))) {
          notOurs.push(`${object.kind} ${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`);
          this.#log('warn', 'not applying over an object kfmesh does not manage', {
            object: identity(object),
          });
        }
        continue;
      }
      const started = Date.now();
      const applied = await this.#write<KubeObject>('PATCH', this.#path(object), {
        body: object,
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: FieldManager, force: true },
      });
      this.#remember(applied);
      this.#applies++;
      this.#options.onApply?.(Date.now() - started);
      this.#log('info', 'applied', { owner, object: identity(object) });
    }
    const managed = [...(this.#managed.get(owner)?.values() ?? [])];
    const partial = this.#partialView(owner);
    if (partial && managed.some((live) => !wanted.has(identity(live)))) {
      // What looks unwanted may be wanted by what the missing list would have shown. The owner is
      // reconciled again when the list succeeds (a first list or a re-list queues every owner).
      this.#log('warn', 'not pruning from a partial view', { owner, why: partial });
      managed.length = 0;
    }
    for (const live of managed) {
      if (wanted.has(identity(live))) continue;
      const kindKey = `${groupOf(live.apiVersion)}/${live.kind}`;
      if (kindKey === '/Namespace') {
        await this.#releaseNamespace(live);
        continue;
      }
      // Kinds kfmesh doesn't write are not its (and a Namespace is never deleted).
      if (neverDeleted.includes(kindKey) || !appliedKinds.includes(kindKey)) continue;
      await this.#write('DELETE', this.#path(live)).catch((error: unknown) => {
        if (!(error instanceof KubeApiError && error.status === 404)) throw error;
      });
      this.#remember(live, true);
      this.#log('info', 'pruned', { owner, object: identity(live) });
    }
    await this.#writeCondition(owner, notOurs.length > 0 ? notManaged(notOurs) : conditions.get(owner));
  }

  /**
   * A namespace kfmesh labelled for an owner that no longer wants it (its Profile deleted): an empty
   * apply by kfmesh's field manager takes back the labels and owner reference kfmesh set, and only those
   * (the namespace is never deleted). Not while another owner of that namespace still wants them.
   */
  async #releaseNamespace(live: KubeObject): Promise<void> {
    const name = live.metadata.name ?? '';
    const wanted = [...(this.#rendered.get(name)?.byOwner.values() ?? [])]
      .flat()
      .some((o) => identity(o) === identity(live));
    if (wanted) return;
    const released = await this.#write<KubeObject>('PATCH', this.#path(live), {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: FieldManager, force: true },
    });
    this.#remember(released);
    this.#log('info', 'released', { namespace: name });
  }

  /** The cached InferenceService or Profile an owner key names (other owners have no object of their own). */
  #ownerObject(owner: OwnerKey): KubeObject | undefined {
    const { kind, namespace, name } = parseOwnerKey(owner);
    const kindKey = [...ownerKinds].find((k) => k.endsWith(`/${kind}`));
    return kindKey ? this.#caches.get(kindKey)?.get(`${namespace}/${name}`) : undefined;
  }

  async #writeCondition(owner: OwnerKey, condition: Condition | undefined): Promise<void> {
    const live = this.#ownerObject(owner);
    if (!live) return;
    const current = conditionsOf(live);
    if (!condition || hasCondition(current, condition)) return;
    const conditions = withCondition(current, condition, kubeTime());
    const written = await this.#write<KubeObject>('PATCH', `${this.#path(live)}/status`, {
      body: { metadata: { resourceVersion: live.metadata.resourceVersion }, status: { conditions } },
      contentType: 'application/merge-patch+json',
    });
    this.#remember(written);
    if (condition.status === 'False') await this.#event(owner, condition.reason, condition.message);
  }

  async #event(owner: OwnerKey, reason: string, message: string): Promise<void> {
    const live = this.#ownerObject(owner);
    if (!live) return;
    const { kind, namespace, name } = parseOwnerKey(owner);
    await this.#postEvent(
      namespace || 'default',
      {
        apiVersion: live.apiVersion,
        kind,
        name,
        ...(namespace ? { namespace } : {}),
        uid: live.metadata.uid,
      },
      reason,
      message,
    );
  }

  /** A Warning Event about an object. */
  async #postEvent(
    namespace: string,
    involvedObject: Record<string, string | undefined>,
    reason: string,
    message: string,
  ): Promise<void> {
    const now = kubeTime();
    await this.#write('POST', `/api/v1/namespaces/${namespace}/events`, {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${involvedObject['name'] ?? 'kfmesh'}.`, namespace },
        involvedObject,
        reason,
        message: message.slice(0, 1000),
        type: 'Warning',
        source: { component: FieldManager },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
  }

  /**
   * Every write goes through here: refused once this replica may no longer write (it lost, or could not
   * renew, its leader lease), and given no longer to complete than it may still write.
   */
  async #write<T>(method: string, path: string, options: RequestBody = {}): Promise<T> {
    let timeoutMs = DefaultRequestTimeoutMs;
    if (this.#options.writeDeadline) {
      const left = this.#options.writeDeadline() - Date.now();
      if (left <= 0) throw new NotLeadingError(`not writing ${method} ${path}: this replica no longer leads`);
      timeoutMs = Math.min(timeoutMs, left);
    }
    return this.#client.request<T>(method, path, { ...options, timeoutMs });
  }

  /**
   * Puts what the server answered to a write into the cache (or takes a deleted object out) before its
   * watch event arrives, so that a reconcile in between doesn't write it again. A newer version already
   * cached is kept. The input generation moves only if the render's input changed.
   */
  #remember(object: KubeObject, deleted = false): void {
    const cache = this.#caches.get(`${groupOf(object.apiVersion)}/${object.kind}`);
    if (!cache || !object.metadata) return;
    const key = `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
    const old = cache.get(key);
    if (old && !deleted && newerOrSame(old, object)) return;
    this.#store(cache, key, object, deleted);
  }

  /**
   * Puts an object into its cache (or takes it out) and into the index of managed objects; when that
   * changes the render's input, moves the input generation for the namespace that reads it (or for all).
   * Returns whether the input changed.
   */
  #store(cache: Map<string, KubeObject>, key: string, object: KubeObject, deleted: boolean): boolean {
    const old = cache.get(key);
    if (old) this.#unindex(old);
    if (deleted) cache.delete(key);
    else this.#put(cache, key, object);
    const now = deleted ? undefined : object;
    if (!(isInput(old) || isInput(now)) || sameInput(old, now)) return false;
    const namespace = renderNamespaceOf(object);
    this.#generation++;
    if (namespace === undefined) this.#sharedChangedAt = this.#generation;
    else this.#changedAt.set(namespace, this.#generation);
    return true;
  }

  #cached(object: KubeObject): KubeObject | undefined {
    return this.#caches
      .get(`${groupOf(object.apiVersion)}/${object.kind}`)
      ?.get(`${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`);
  }

  #path(object: KubeObject): string {
    const kindKey = `${groupOf(object.apiVersion)}/${object.kind}`;
    const served = this.#resources.get(kindKey);
    if (!served) throw new Error(`the server does not serve ${object.apiVersion} ${object.kind}`);
    const version = object.apiVersion.split('/').at(-1) ?? served.version;
    return `${KubeClient.collectionPath({ ...served, version }, object.metadata.namespace)}/${object.metadata.name}`;
  }

  #log(level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>): void {
    this.#options.log?.(level, message, fields);
  }
}

/** The kind each owner key names, as `group/Kind`. */
const ownerKindKeys: Readonly<Record<string, string>> = {
  InferenceService: GroupKind.InferenceService,
  Profile: GroupKind.Profile,
  Notebook: GroupKind.Notebook,
  Namespace: '/Namespace',
};

/** The API groups of the kinds kfmesh reads. */
const readGroups = new Set(Object.keys(clusterKinds));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Now, as Kubernetes writes times (RFC 3339, whole seconds). */
function kubeTime(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function isInput(object: KubeObject | undefined): boolean {
  return object !== undefined && isRenderInput(object);
}

/** Is `a` at least as new as `b` (by resourceVersion, when both are numbers as etcd's are)? */
function newerOrSame(a: KubeObject, b: KubeObject): boolean {
  const [x, y] = [Number(a.metadata.resourceVersion), Number(b.metadata.resourceVersion)];
  return Number.isInteger(x) && Number.isInteger(y) && x >= y;
}

/** Do two versions of an object say the same to the render (ignoring versions, field managers and MeshReady)? */
function sameInput(a: KubeObject | undefined, b: KubeObject | undefined): boolean {
  if (!a || !b) return a === b;
  return inputView(a) === inputView(b);
}

function inputView(object: KubeObject): string {
  const {
    resourceVersion: _rv,
    managedFields: _mf,
    ...metadata
  } = object.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  const status = isPlainObject(object['status']) ? { ...object['status'] } : undefined;
  if (status && Array.isArray(status['conditions']))
    status['conditions'] = (status['conditions'] as { type?: string }[]).filter((c) => c.type !== MeshReady);
  return JSON.stringify({ ...object, metadata, status });
}

function identity(object: KubeObject): string {
  return `${groupOf(object.apiVersion)}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
}

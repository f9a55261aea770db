/**
 * The controller: informers (list + watch with bookmarks, re-list on 410, restart with backoff on any
 * other error) keep a cache of the kinds kfmesh reads; every change queues the owners it concerns; a
 * worker reconciles one owner at a time: the owner's desired objects (from the same `desiredState` that
 * `kfmesh render` prints, computed once per cache generation) are server-side applied with field manager
 * `kfmesh` where the live object doesn't already hold them, live objects kfmesh manages for that owner
 * and no longer wants are deleted, and the owner's `MeshReady` condition is written. Failures are retried
 * with per-key exponential backoff and reported as Events. Objects kfmesh did not create (without its
 * managed-by label) are never changed or deleted.
 */
import { makeInformer, type Informer, type KubernetesObject } from '@kubernetes/client-node';
import type { KubeObject } from '../model/object.ts';
import { groupOf } from '../model/object.ts';
import { Snapshot } from '../load/snapshot.ts';
import { servedKinds } from '../load/cluster.ts';
import { KubeApiError, KubeClient, type Resource } from '../kube/client.ts';
import { desiredState, type MeshMode, type RenderResult } from '../render/desired-state.ts';
import { WorkQueue } from './queue.ts';
import { appliedKinds, neverDeleted, statusWritten } from './permissions.ts';
import {
  conditionsOf,
  desiredByOwner,
  hasCondition,
  holds,
  isManaged,
  meshReadyConditions,
  ownerKey,
  ownerOf,
  parseOwnerKey,
  withCondition,
  type OwnerKey,
} from './plan.ts';

export const FieldManager = 'kfmesh';

export interface ControllerOptions {
  mode: MeshMode;
  /** Only these namespaces (all when empty). */
  namespaces?: readonly string[];
  clusterDomain?: string;
  /** How long the server keeps a watch open before the informer renews it (default 300 s). */
  watchTimeoutSeconds?: number;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  /** Called after each reconcile (for metrics): the owner, its duration, and the error if it failed. */
  onReconcile?: (owner: OwnerKey, ms: number, error?: unknown) => void;
  /** Called after each apply (for metrics). */
  onApply?: (ms: number) => void;
}

/** The kinds whose changes concern every owner (configuration, namespaces' labels). */
const everyOwnerKinds = new Set(['/Namespace', '/ConfigMap']);
/** The owners that are objects of their own (with a status): InferenceServices and Profiles. */
const ownerKinds = new Set(statusWritten);

export class Controller {
  readonly #client: KubeClient;
  readonly #options: ControllerOptions;
  readonly #queue = new WorkQueue({ baseDelayMs: 50, maxDelayMs: 300_000, qps: 50, burst: 200 });
  readonly #caches = new Map<string, Map<string, KubeObject>>();
  readonly #resources = new Map<string, Resource>();
  readonly #informers: Informer<KubernetesObject>[] = [];
  readonly #watchdogs: ReturnType<typeof setInterval>[] = [];
  #generation = 0;
  #rendered: { generation: number; result: RenderResult; byOwner: Map<OwnerKey, KubeObject[]> } | undefined;
  #synced = false;
  #stopped = false;
  #worker: Promise<void> | undefined;

  constructor(client: KubeClient, options: ControllerOptions) {
    this.#client = client;
    this.#options = options;
  }

  /** True once every informer has listed (the cache is complete). */
  get synced(): boolean {
    return this.#synced;
  }

  get queueDepth(): number {
    return this.#queue.depth;
  }

  /** Starts the informers and the worker; resolves once the caches are filled. */
  async start(): Promise<void> {
    const wanted = await servedKinds(this.#client);
    await Promise.all(wanted.map((r) => this.#startInformer(r)));
    this.#synced = true;
    this.#log('info', 'caches synced', { kinds: wanted.length, objects: this.#objects().length });
    for (const owner of this.#allOwners()) this.#queue.add(owner);
    this.#worker = this.#work();
  }

  /** Stops the worker (after its current key) and the informers. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#queue.close();
    await this.#worker;
    for (const w of this.#watchdogs) clearInterval(w);
    await Promise.all(this.#informers.map((i) => i.stop()));
  }

  async #startInformer(resource: Resource): Promise<void> {
    const kindKey = `${resource.group}/${resource.kind}`;
    this.#resources.set(kindKey, resource);
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
    // changed against its own copy), and, after the first, everything is reconciled again.
    const informer = makeInformer<KubernetesObject>(this.#client.config, path, async () => {
      const { items, resourceVersion } = await this.#client.listWithVersion(resource, scoped);
      cache.clear();
      for (const item of items) if (this.#inScope(item)) cache.set(key(item), item);
      this.#generation++;
      if (this.#synced) for (const owner of this.#allOwners()) this.#queue.add(owner);
      return { apiVersion, kind: `${resource.kind}List`, metadata: { resourceVersion }, items };
    });
    const changed = (o: KubernetesObject, deleted: boolean) => {
      const object = { ...o, apiVersion, kind: resource.kind } as KubeObject;
      if (!this.#inScope(object)) return;
      if (deleted) cache.delete(key(o));
      else cache.set(key(o), object);
      this.#generation++;
      if (this.#synced) this.#enqueueFor(kindKey, object);
    };
    informer.on('add', (o) => changed(o, false));
    informer.on('update', (o) => changed(o, false));
    informer.on('delete', (o) => changed(o, true));
    // A failed watch stops the informer; so does a failed restart (the list fails while the server is
    // down), which reports no error of its own: both come back here, with backoff from 1 s to 30 s.
    let delay = 1000;
    const restart = (error: unknown) => {
      if (this.#stopped) return;
      this.#log('warn', 'watch failed; restarting', { kind: kindKey, error: String(error), retryMs: delay });
      setTimeout(() => {
        if (this.#stopped) return;
        informer.start().then(() => this.#log('info', 'watch restarted', { kind: kindKey }), restart);
      }, delay).unref();
      delay = Math.min(delay * 2, 30_000);
    };
    informer.on('error', restart);
    let connectedAt = Date.now();
    informer.on('connect', () => {
      delay = 1000;
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
    await informer.start();
  }

  #inScope(object: KubeObject): boolean {
    const namespaces = this.#options.namespaces ?? [];
    if (namespaces.length === 0) return true;
    const ns = object.metadata.namespace ?? (object.kind === 'Namespace' ? object.metadata.name : undefined);
    if (object.kind === 'Profile') return namespaces.includes(object.metadata.name ?? '');
    return ns === undefined || namespaces.includes(ns) || object.kind === 'ConfigMap';
  }

  #enqueueFor(kindKey: string, object: KubeObject): void {
    if (everyOwnerKinds.has(kindKey)) {
      for (const owner of this.#allOwners()) this.#queue.add(owner);
      if (object.kind === 'Namespace')
        this.#queue.add(ownerKey('Namespace', undefined, object.metadata.name ?? ''));
      return;
    }
    if (ownerKinds.has(kindKey))
      this.#queue.add(ownerKey(object.kind, object.metadata.namespace, object.metadata.name ?? ''));
    if (kindKey === 'kubeflow.org/Notebook')
      this.#queue.add(ownerKey('Notebook', object.metadata.namespace, object.metadata.name ?? ''));
    const owner = isManaged(object) ? ownerOf(object) : undefined;
    if (owner) this.#queue.add(owner);
  }

  #objects(): KubeObject[] {
    return [...this.#caches.values()].flatMap((c) => [...c.values()]);
  }

  /** Every owner kfmesh has or had objects for: the InferenceServices, Profiles and Notebooks, and the owners of managed objects. */
  #allOwners(): OwnerKey[] {
    const out = new Set<OwnerKey>();
    for (const o of this.#objects()) {
      if (ownerKinds.has(`${groupOf(o.apiVersion)}/${o.kind}`) || o.kind === 'Notebook')
        out.add(ownerKey(o.kind, o.metadata.namespace, o.metadata.name ?? ''));
      const owner = isManaged(o) ? ownerOf(o) : undefined;
      if (owner) out.add(owner);
    }
    for (const owner of this.#desired().byOwner.keys()) out.add(owner);
    return [...out].sort();
  }

  #desired(): { result: RenderResult; byOwner: Map<OwnerKey, KubeObject[]> } {
    if (this.#rendered?.generation === this.#generation) return this.#rendered;
    const snapshot = Snapshot.of(this.#objects(), '<cluster>');
    const result = desiredState(snapshot, {
      mode: this.#options.mode,
      ...(this.#options.clusterDomain ? { clusterDomain: this.#options.clusterDomain } : {}),
    });
    this.#rendered = { generation: this.#generation, result, byOwner: desiredByOwner(result) };
    return this.#rendered;
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
        this.#queue.done(key);
      }
    }
  }

  /** One owner: apply what is desired and not held, delete what kfmesh manages and no longer wants, set MeshReady. */
  async #reconcile(owner: OwnerKey): Promise<void> {
    const { result, byOwner } = this.#desired();
    const desired = byOwner.get(owner) ?? [];
    const wanted = new Set(desired.map(identity));
    for (const object of desired) {
      if (!appliedKinds.includes(`${groupOf(object.apiVersion)}/${object.kind}`)) {
        // Not a kind the deployment's role lets it write: rendered, but left to `kfmesh render`.
        this.#log('warn', "not applying a kind outside the controller's role", { object: identity(object) });
        continue;
      }
      const live = this.#cached(object);
      if (live && !isManaged(live) && !(object.kind === 'Namespace' && groupOf(object.apiVersion) === '')) {
        // Someone else's object: kfmesh never takes it over (Namespaces excepted: kfmesh sets only labels).
        this.#log('warn', 'not applying over an object kfmesh does not manage', { object: identity(object) });
        continue;
      }
      if (live && holds(live, object)) continue;
      const started = Date.now();
      await this.#client.request('PATCH', this.#path(object), {
        body: object,
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: FieldManager, force: true },
      });
      this.#options.onApply?.(Date.now() - started);
      this.#log('info', 'applied', { owner, object: identity(object) });
    }
    for (const live of this.#objects()) {
      if (!isManaged(live) || ownerOf(live) !== owner || wanted.has(identity(live))) continue;
      const kindKey = `${groupOf(live.apiVersion)}/${live.kind}`;
      // Namespaces are never deleted (kfmesh only labels them); kinds kfmesh doesn't write are not its.
      if (neverDeleted.includes(kindKey) || !appliedKinds.includes(kindKey)) continue;
      await this.#client.request('DELETE', this.#path(live)).catch((error: unknown) => {
        if (!(error instanceof KubeApiError && error.status === 404)) throw error;
      });
      this.#log('info', 'pruned', { owner, object: identity(live) });
    }
    await this.#writeCondition(owner, result);
  }

  /** The cached InferenceService or Profile an owner key names (other owners have no object of their own). */
  #ownerObject(owner: OwnerKey): KubeObject | undefined {
    const { kind, namespace, name } = parseOwnerKey(owner);
    const kindKey = [...ownerKinds].find((k) => k.endsWith(`/${kind}`));
    return kindKey ? this.#caches.get(kindKey)?.get(`${namespace}/${name}`) : undefined;
  }

  async #writeCondition(owner: OwnerKey, result: RenderResult): Promise<void> {
    const live = this.#ownerObject(owner);
    if (!live) return;
    const condition = meshReadyConditions(result, [owner]).get(owner);
    const current = conditionsOf(live);
    if (!condition || hasCondition(current, condition)) return;
    const conditions = withCondition(current, condition, kubeTime());
    await this.#client.request('PATCH', `${this.#path(live)}/status`, {
      body: { metadata: { resourceVersion: live.metadata.resourceVersion }, status: { conditions } },
      contentType: 'application/merge-patch+json',
    });
    if (condition.status === 'False') await this.#event(owner, condition.reason, condition.message);
  }

  async #event(owner: OwnerKey, reason: string, message: string): Promise<void> {
    const live = this.#ownerObject(owner);
    if (!live) return;
    const { kind, namespace, name } = parseOwnerKey(owner);
    const ns = namespace || 'default';
    const now = kubeTime();
    await this.#client.request('POST', `/api/v1/namespaces/${ns}/events`, {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${name}.`, namespace: ns },
        involvedObject: {
          apiVersion: live.apiVersion,
          kind,
          name,
          ...(namespace ? { namespace } : {}),
          uid: live.metadata.uid,
        },
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

/** Now, as Kubernetes writes times (RFC 3339, whole seconds). */
function kubeTime(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function identity(object: KubeObject): string {
  return `${groupOf(object.apiVersion)}/${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
}

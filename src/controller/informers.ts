/**
 * The informers that fill the controller's cache: discovery of the kinds kfmesh reads (asked again with
 * backoff while it fails, and now and then for kinds installed later), then per kind a list and a watch
 * with bookmarks, re-listed on 410 and restarted with backoff on any other error, with a watchdog for
 * watches that stop answering. A list that fails leaves the cache as it was and marks the kind failing:
 * nothing is pruned while any kind is.
 */
import { makeInformer, type Informer, type KubernetesObject } from '@kubernetes/client-node';
import type { KubeObject } from '../model/object.ts';
import { clusterKinds, servedKinds } from '../load/cluster.ts';
import { KubeApiError, KubeClient, type Resource } from '../kube/client.ts';
import type { ObjectCache } from './cache.ts';
import type { ListPart } from './desired.ts';
import { backoffMs } from './queue.ts';

export type Log = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface InformerOptions {
  /** Only these namespaces (all when empty). */
  namespaces: readonly string[];
  /** How long the server keeps a watch open before the informer renews it (default 300 s). */
  watchTimeoutSeconds?: number | undefined;
  /** Whether an object is one the controller watches (in its namespaces). */
  inScope: (object: KubeObject) => boolean;
  /** The parts a kind (`group/Kind`) is listed in, when it is not listed whole (ConfigMaps). */
  partsOf?: (kindKey: string) => readonly ListPart[] | undefined;
  log: Log;
}

export interface InformerEvents {
  /** An object was added, changed or deleted (already in the cache); `inputChanged` as `ObjectCache.set` says. */
  changed: (kindKey: string, object: KubeObject, inputChanged: boolean) => void;
  /** A kind was (re-)listed into the cache. */
  relisted: (kindKey: string) => void;
  /** A kind's list failed with another error than before: for an Event on the controller's Pod. */
  listFailed: (reason: string, message: string) => void;
}

/** The API groups of the kinds kfmesh reads. */
const readGroups = new Set(Object.keys(clusterKinds));

export class Informers {
  readonly #client: KubeClient;
  readonly #cache: ObjectCache;
  readonly #options: InformerOptions;
  readonly #events: InformerEvents;
  readonly #resources = new Map<string, Resource>();
  readonly #informers: Informer<KubernetesObject>[] = [];
  readonly #timers: ReturnType<typeof setInterval>[] = [];
  /** Informer starts under way (see #track). */
  readonly #pendingStarts = new Set<Promise<void>>();
  #halting: () => void = () => undefined;
  readonly #halted = new Promise<void>((resolve) => (this.#halting = resolve));
  #stopped = false;
  /** Why discovery has not succeeded yet, or undefined once it has. */
  #discovering: string | undefined = 'starting';

  constructor(client: KubeClient, cache: ObjectCache, options: InformerOptions, events: InformerEvents) {
    this.#client = client;
    this.#cache = cache;
    this.#options = options;
    this.#events = events;
  }

  /** Why discovery has not succeeded yet ("starting" before it is first asked), or undefined once it has. */
  get discovering(): string | undefined {
    return this.#discovering;
  }

  /** How the server serves a kind (`group/Kind`), once it is watched. */
  served(kindKey: string): Resource | undefined {
    return this.#resources.get(kindKey);
  }

  /**
   * Discovers the kinds to read and starts their informers; returns how many, or undefined when stopped
   * before discovery succeeded. Discovery that could not describe one of the groups kfmesh reads counts as
   * failed: a kind missing from it would be taken for a kind the cluster doesn't have, and what kfmesh made
   * from it pruned.
   */
  async start(): Promise<number | undefined> {
    for (let attempt = 0; !this.#stopped; attempt++) {
      try {
        await this.#serverReady();
        this.#client.rediscover();
        const wanted = await servedKinds(this.#client);
        const missing = this.#client.undiscoveredGroups.filter((g) => readGroups.has(g));
        if (missing.length > 0) throw new Error(`discovery could not describe ${missing.join(', ')}`);
        for (const r of wanted) this.#startInformers(r);
        this.#discovering = undefined;
        return wanted.length;
      } catch (error) {
        const retryMs = backoffMs(attempt);
        this.#discovering = `discovery failed (${errorText(error)}); retrying in ${retryMs} ms`;
        this.#options.log('warn', 'discovery failed; retrying', { error: errorText(error), retryMs });
        await Promise.race([sleep(retryMs), this.#halted]);
      }
    }
    return undefined;
  }

  /**
   * Asks discovery again now and then, and starts informers for kinds that appeared since (KServe or
   * the Gateway API installed after the controller, or a group a restarting server listed late).
   */
  rediscoverEvery(ms: number): void {
    const timer = setInterval(() => {
      if (this.#stopped) return;
      void (async () => {
        this.#client.rediscover();
        const wanted = await servedKinds(this.#client);
        for (const r of wanted)
          if (!this.#cache.hasKind(`${r.group}/${r.kind}`)) {
            this.#options.log('info', 'a kind appeared; watching it', { kind: `${r.group}/${r.kind}` });
            this.#startInformers(r);
          }
      })().catch((error: unknown) =>
        this.#options.log('warn', 'discovery failed', { error: errorText(error) }),
      );
    }, ms);
    timer.unref();
    this.#timers.push(timer);
  }

  /** No more restarts or discovery from now on; `stop` then closes the watches. */
  halt(): void {
    this.#stopped = true;
    this.#halting();
  }

  /** Stops every informer and timer. */
  async stop(): Promise<void> {
    this.halt();
    for (const t of this.#timers) clearInterval(t);
    await Promise.all(this.#informers.map((i) => i.stop()));
    // Starts under way open their watch after the stop above: wait for them (a few seconds at most) and
    // stop again, so that no connection outlives the controller.
    await Promise.race([Promise.allSettled([...this.#pendingStarts]), sleep(5000)]);
    await Promise.all(this.#informers.map((i) => i.stop()));
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

  /** The one namespace the controller reads, when it reads one (lists are then made there). */
  get #singleNamespace(): string | undefined {
    const namespaces = this.#options.namespaces;
    return namespaces.length === 1 ? namespaces[0] : undefined;
  }

  /** Starts the informers of a kind: one, or one per part of it. */
  #startInformers(resource: Resource): void {
    const kindKey = `${resource.group}/${resource.kind}`;
    const parts = this.#options.partsOf?.(kindKey);
    if (!parts) return this.#startInformer(resource);
    // A controller of one namespace lists in that namespace only (its role may allow no other).
    const single = this.#singleNamespace;
    for (const part of parts)
      if (single === undefined || part.namespace === undefined || part.namespace === single)
        this.#startInformer(resource, part);
  }

  // Why long: the informer's list, events, restart and watchdog share its closure (the kind, its path,
  // its attempt count), and apart they would each need it passed in.
  #startInformer(resource: Resource, part?: ListPart): void {
    const kindKey = `${resource.group}/${resource.kind}`;
    const listKey = part ? `${kindKey}#${part.key}` : kindKey;
    this.#resources.set(kindKey, resource);
    this.#cache.addKind(kindKey, part);
    const scoped = part?.namespace ?? (resource.namespaced ? this.#singleNamespace : undefined);
    const holds = (o: KubeObject) => this.#options.inScope(o) && (part?.holds(o) ?? true);
    // The server ends each watch after watchTimeoutSeconds and the informer opens the next one, so a
    // watch that stops answering (its server went away mid-request) is noticed by the watchdog below.
    const timeout = this.#options.watchTimeoutSeconds ?? 300;
    const selector = part?.fieldSelector ? `&fieldSelector=${encodeURIComponent(part.fieldSelector)}` : '';
    const path = `${KubeClient.collectionPath(resource, scoped)}?allowWatchBookmarks=true&timeoutSeconds=${timeout}${selector}`;
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    // A (re-)list replaces the cache with what the server has now. A list that fails leaves the cache as
    // it was and marks the kind failing.
    const informer = makeInformer<KubernetesObject>(this.#client.config, path, async () => {
      let listed;
      try {
        listed = await this.#client.listWithVersion(resource, scoped, 500, part?.fieldSelector);
      } catch (error) {
        this.#listFailed(listKey, error);
        throw error;
      }
      const { resourceVersion } = listed;
      // Only what the part holds is kept, here and in the informer's own copy.
      const items = listed.items.filter(holds);
      if (this.#cache.failing(listKey)) this.#options.log('info', 'list succeeded again', { kind: listKey });
      attempts = 0;
      this.#cache.relisted(listKey, items);
      this.#events.relisted(kindKey);
      return { apiVersion, kind: `${resource.kind}List`, metadata: { resourceVersion }, items };
    });
    const changed = (o: KubernetesObject, deleted: boolean) => {
      const object = { ...o, apiVersion, kind: resource.kind } as KubeObject;
      if (!holds(object)) return;
      this.#events.changed(kindKey, object, this.#cache.set(object, deleted));
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
      this.#options.log('warn', 'watch failed; restarting', {
        kind: listKey,
        error: errorText(error),
        retryMs,
      });
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
    this.#timers.push(watchdog);
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

  /** A kind's list failed: marked failing (so nothing is pruned), logged, and told once per error. */
  #listFailed(kindKey: string, error: unknown): void {
    const text = errorText(error);
    if (!this.#cache.listFailed(kindKey, text)) return;
    const forbidden = error instanceof KubeApiError && error.status === 403;
    this.#options.log(
      'error',
      forbidden
        ? 'list forbidden; nothing is pruned until it succeeds'
        : 'list failed; nothing is pruned until it succeeds',
      { kind: kindKey, error: text },
    );
    this.#events.listFailed(
      forbidden ? 'ListForbidden' : 'ListFailed',
      `kfmesh cannot list ${kindKey}: ${text}. Nothing is pruned while a list fails.`,
    );
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

const sleep = (ms: number): Promise<void> => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

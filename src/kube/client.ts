/**
 * A small client for the Kubernetes API: the kubeconfig (files, contexts, certificates, tokens, exec and
 * auth-provider plugins) is read by `@kubernetes/client-node`, which also signs each request; bodies go
 * and come as plain JSON, so objects keep exactly the fields the server sent (no typed models, no
 * renamed keys), for core and custom resources alike.
 */
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { createHash } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { InputError, messageOf } from '../model/errors.ts';
import type { KubeObject } from '../model/object.ts';

/** A failed call: the HTTP status and the server's `Status` reason and message. */
export class KubeApiError extends Error {
  override name = 'KubeApiError';
  readonly status: number;
  readonly reason: string;

  constructor(status: number, reason: string, message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

/** A resource the server serves: where to list it and whether it lives in namespaces. */
export interface Resource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

export interface RequestBody {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** How long to wait for the whole answer (default 10 s); past it the request fails with `KubeTimeoutError`. */
  timeoutMs?: number;
}

/** The default deadline of one request. */
export const DefaultRequestTimeoutMs = 10_000;

/** A request that got no complete answer within its deadline (a stalled or dead connection). */
class KubeTimeoutError extends Error {
  override name = 'KubeTimeoutError';
}

interface ApiResourceList {
  resources: { name: string; kind: string; namespaced: boolean }[];
}
interface ApiGroupList {
  groups: { name: string; preferredVersion?: { version: string }; versions: { version: string }[] }[];
}

/** One API server, as a kubeconfig context names it. */
export class KubeClient {
  readonly #config: KubeConfig;
  readonly #server: URL;
  /** Keep-alive agents by their TLS settings, so requests share connections (one handshake, not one each). */
  readonly #agents = new Map<string, Agent>();
  #resources: Map<string, Resource> | undefined;
  #undiscovered: string[] = [];

  constructor(config: KubeConfig) {
    const cluster = config.getCurrentCluster();
    if (!cluster) throw new InputError({}, 'the kubeconfig has no current cluster');
    this.#config = config;
    this.#server = new URL(cluster.server);
  }

  /** Reads a kubeconfig file (or the default chain: $KUBECONFIG, ~/.kube/config, in-cluster). */
  static fromKubeconfig(file?: string, context?: string): KubeClient {
    const config = new KubeConfig();
    try {
      if (file) config.loadFromFile(file);
      else config.loadFromDefault();
    } catch (error) {
      throw new InputError({ location: { file: file ?? 'kubeconfig' } }, messageOf(error));
    }
    // With nothing to read, the library falls back to an unauthenticated http://localhost:8080, whose
    // failures would not say what is missing.
    const fallback = config.getCurrentCluster();
    if (!file && fallback?.name === 'cluster' && fallback.server === 'http://localhost:8080')
      throw new InputError(
        { location: { file: 'kubeconfig' } },
        'no cluster configuration: pass --kubeconfig, set KUBECONFIG, create ~/.kube/config, or run in a Pod whose service account token is mounted (KUBERNETES_SERVICE_HOST and a readable /var/run/secrets/kubernetes.io/serviceaccount/token)',
      );
    if (context) {
      if (!config.getContextObject(context))
        throw new InputError(
          { location: { file: file ?? 'kubeconfig' } },
          `no context ${JSON.stringify(context)} (contexts: ${config.contexts.map((c) => c.name).join(', ') || 'none'})`,
        );
      config.setCurrentContext(context);
    }
    return new KubeClient(config);
  }

  /** The context in use, for messages. */
  get contextName(): string {
    return this.#config.getCurrentContext();
  }

  /** One call; JSON in and out (text when the server answers text). A non-2xx answer throws `KubeApiError`. */
  async request<T>(method: string, path: string, options: RequestBody = {}): Promise<T> {
    const url = new URL(this.#server.pathname.replace(/\/$/, '') + path, this.#server);
    for (const [k, v] of Object.entries(options.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
    const requestOptions: RequestOptions = {
      method,
      headers: {
        accept: 'application/json',
        ...(payload !== undefined
          ? {
              'content-type': options.contentType ?? 'application/json',
              'content-length': Buffer.byteLength(payload),
            }
          : {}),
      },
    };
    await this.#config.applyToHTTPSOptions(requestOptions);
    if (url.protocol === 'https:') requestOptions.agent = this.#agentFor(requestOptions);
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const timeoutMs = options.timeoutMs ?? DefaultRequestTimeoutMs;
    const { status, text, json } = await new Promise<{ status: number; text: string; json: boolean }>(
      (resolve, reject) => {
        // One deadline for the whole exchange (connect, send, answer): a connection that stalls without
        // closing would otherwise hold the request forever.
        const deadline = setTimeout(
          () =>
            req.destroy(new KubeTimeoutError(`${method} ${url.pathname}: no answer within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const fail = (error: Error) => {
          clearTimeout(deadline);
          reject(error);
        };
        const req = send(url, requestOptions, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(deadline);
            resolve({
              status: res.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              json: (res.headers['content-type'] ?? '').includes('json'),
            });
          });
          res.on('error', fail);
        });
        req.on('error', fail);
        req.end(payload);
      },
    );

    if (status < 200 || status > 299) {
      let reason = 'Unknown';
      let message = text.trim() || `HTTP ${status}`;
      try {
        const parsed = JSON.parse(text) as { reason?: string; message?: string };
        reason = parsed.reason ?? reason;
        message = parsed.message ?? message;
      } catch {
        // not a Status: keep the text
      }
      throw new KubeApiError(status, reason, `${method} ${url.pathname}: ${status} ${reason}: ${message}`);
    }
    // Health endpoints answer plain text.
    return (json ? JSON.parse(text) : text) as T;
  }

  /**
   * A keep-alive agent for these TLS settings (the kubeconfig's CA, client certificate and key, which an
   * exec plugin may renew: new settings get a new agent, and the previous one is dropped; its idle
   * connections end when the server closes them).
   */
  #agentFor(options: RequestOptions): Agent {
    const tls = [options.ca, options.cert, options.key, options.rejectUnauthorized, options.servername];
    const key = createHash('sha256').update(JSON.stringify(tls)).digest('hex');
    let agent = this.#agents.get(key);
    if (!agent) {
      this.#agents.clear();
      agent = new Agent({
        keepAlive: true,
        maxSockets: 32,
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.cert ? { cert: options.cert } : {}),
        ...(options.key ? { key: options.key } : {}),
        ...(options.rejectUnauthorized !== undefined
          ? { rejectUnauthorized: options.rejectUnauthorized }
          : {}),
        ...(options.servername ? { servername: options.servername } : {}),
      });
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Every resource the server serves, by `group/kind`, at the group's preferred version. */
  async resources(): Promise<Map<string, Resource>> {
    if (this.#resources) return this.#resources;
    const out = new Map<string, Resource>();
    const add = (group: string, version: string, list: ApiResourceList) => {
      for (const r of list.resources) {
        if (r.name.includes('/')) continue; // subresources
        out.set(`${group}/${r.kind}`, {
          group,
          version,
          kind: r.kind,
          plural: r.name,
          namespaced: r.namespaced,
        });
      }
    };
    add('', 'v1', await this.request<ApiResourceList>('GET', '/api/v1'));
    const groups = await this.request<ApiGroupList>('GET', '/apis');
    // A group the server lists but can't describe yet (a CRD not yet established, an aggregated API that is
    // down) is left out, as kubectl does, and discovery is asked again next time.
    const failed: string[] = [];
    await Promise.all(
      groups.groups.map(async (g) => {
        const version = g.preferredVersion?.version ?? g.versions[0]?.version;
        if (!version) return;
        try {
          add(g.name, version, await this.request<ApiResourceList>('GET', `/apis/${g.name}/${version}`));
        } catch (error) {
          if (!(error instanceof KubeApiError)) throw error;
          failed.push(g.name);
        }
      }),
    );
    this.#undiscovered = failed.sort();
    if (failed.length === 0) this.#resources = out;
    return out;
  }

  /** The groups the last discovery listed but could not describe (left out of its answer). */
  get undiscoveredGroups(): readonly string[] {
    return this.#undiscovered;
  }

  /** Forgets what discovery found (after CRDs are added). */
  rediscover(): void {
    this.#resources = undefined;
  }

  /** The URL path of a resource's collection (in a namespace, or across all of them). */
  static collectionPath(resource: Resource, namespace?: string): string {
    const base = resource.group ? `/apis/${resource.group}/${resource.version}` : `/api/${resource.version}`;
    return `${base}${resource.namespaced && namespace ? `/namespaces/${namespace}` : ''}/${resource.plural}`;
  }

  /** Every object of a resource, page by page; items get their apiVersion and kind (lists leave them out). */
  async list(resource: Resource, namespace?: string, pageSize = 500): Promise<KubeObject[]> {
    return (await this.listWithVersion(resource, namespace, pageSize)).items;
  }

  /** The same, with the list's resourceVersion (where a watch of the resource starts), optionally by field. */
  async listWithVersion(
    resource: Resource,
    namespace?: string,
    pageSize = 500,
    fieldSelector?: string,
  ): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
    const out: KubeObject[] = [];
    let token: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.request<{
        items: KubeObject[];
        metadata?: { continue?: string; resourceVersion?: string };
      }>('GET', KubeClient.collectionPath(resource, namespace), {
        query: { limit: pageSize, continue: token, fieldSelector },
      });
      for (const item of page.items) out.push({ ...item, apiVersion, kind: resource.kind });
      token = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
    } while (token);
    return { items: out, resourceVersion };
  }

  /** The kubeconfig this client reads (for watches, which client-node runs). */
  get config(): KubeConfig {
    return this.#config;
  }
}

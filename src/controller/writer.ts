/**
 * Every write the controller makes: server-side applies with field manager `kfmesh`, deletions, status
 * patches and Events. A write is refused once this replica may no longer write (it lost, or could not
 * renew, its leader lease) and gets no longer to complete than it may still write; what the server
 * answers goes into the cache before its watch event arrives.
 */
import type { KubeObject } from '../model/object.ts';
import {
  DefaultRequestTimeoutMs,
  KubeApiError,
  KubeClient,
  type RequestBody,
  type Resource,
} from '../kube/client.ts';
import { kindKeyOf, type ObjectCache } from './cache.ts';

/** The field manager of kfmesh's applies, and the component of its Events. */
export const FieldManager = 'kfmesh';

/** A write refused because this replica no longer leads. */
class NotLeadingError extends Error {
  override name = 'NotLeadingError';
}

/** The object an Event is about. */
export interface InvolvedObject {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string | undefined;
}

export class Writer {
  readonly #client: KubeClient;
  readonly #cache: ObjectCache;
  readonly #served: (kindKey: string) => Resource | undefined;
  readonly #writeDeadline: (() => number) | undefined;

  /**
   * `served` tells how the server serves a kind (for its path); `writeDeadline`, with leader election,
   * until when (epoch ms) this replica may still write, or 0 when it may not.
   */
  constructor(
    client: KubeClient,
    cache: ObjectCache,
    served: (kindKey: string) => Resource | undefined,
    writeDeadline?: () => number,
  ) {
    this.#client = client;
    this.#cache = cache;
    this.#served = served;
    this.#writeDeadline = writeDeadline;
  }

  /** Server-side applies an object as kfmesh, forcing its fields (kfmesh owns what it applies). */
  async apply(object: KubeObject): Promise<void> {
    const applied = await this.#write<KubeObject>('PATCH', this.#path(object), {
      body: object,
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: FieldManager, force: true },
    });
    this.#cache.remember(applied);
  }

  /** Deletes an object; one already gone is fine. */
  async delete(live: KubeObject): Promise<void> {
    await this.#write('DELETE', this.#path(live)).catch((error: unknown) => {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    });
    this.#cache.remember(live, true);
  }

  /** Merges `status` into the live object's, failing if the object changed since it was read. */
  async patchStatus(live: KubeObject, status: Record<string, unknown>): Promise<void> {
    const written = await this.#write<KubeObject>('PATCH', `${this.#path(live)}/status`, {
      body: { metadata: { resourceVersion: live.metadata.resourceVersion }, status },
      contentType: 'application/merge-patch+json',
    });
    this.#cache.remember(written);
  }

  /** Posts a Warning Event about an object. */
  async warn(
    namespace: string,
    involvedObject: InvolvedObject,
    reason: string,
    message: string,
  ): Promise<void> {
    const now = kubeTime();
    await this.#write('POST', `/api/v1/namespaces/${namespace}/events`, {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${involvedObject.name}.`, namespace },
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

  async #write<T>(method: string, path: string, options: RequestBody = {}): Promise<T> {
    let timeoutMs = DefaultRequestTimeoutMs;
    if (this.#writeDeadline) {
      const left = this.#writeDeadline() - Date.now();
      if (left <= 0) throw new NotLeadingError(`not writing ${method} ${path}: this replica no longer leads`);
      timeoutMs = Math.min(timeoutMs, left);
    }
    return this.#client.request<T>(method, path, { ...options, timeoutMs });
  }

  #path(object: KubeObject): string {
    const served = this.#served(kindKeyOf(object));
    if (!served) throw new Error(`the server does not serve ${object.apiVersion} ${object.kind}`);
    const version = object.apiVersion.split('/').at(-1) ?? served.version;
    return `${KubeClient.collectionPath({ ...served, version }, object.metadata.namespace)}/${object.metadata.name}`;
  }
}

/** Now, as Kubernetes writes times (RFC 3339, whole seconds). */
export function kubeTime(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * What the tests' stand-ins for other controllers (the profile controller, KServe) share: reads that may
 * find nothing, and writes under the stand-in's field manager, counted.
 */
import type { KubeObject } from '../src/model/object.ts';
import { KubeApiError } from '../src/kube/client.ts';
import { Label, ManagedByValue } from '../src/model/vocabulary.ts';
import { eventually } from './controller-process.ts';
import type { TestApiServer } from './kube-apiserver.ts';

/** The field manager of a controller-runtime controller (named after its binary, `manager`, in Kubeflow and KServe). */
export const ControllerRuntimeManager = 'manager';

export class StandInClient {
  /** How many writes the stand-in made. */
  writes = 0;
  readonly #server: TestApiServer;
  readonly #fieldManager: string;

  constructor(server: TestApiServer, fieldManager: string) {
    this.#server = server;
    this.#fieldManager = fieldManager;
  }

  /** Waits until kfmesh has written the object at `path` (it carries kfmesh's managed-by label). */
  async kfmeshWrote(path: string): Promise<void> {
    await eventually(`kfmesh's ${path}`, async () => {
      const object = await this.get(path);
      return object?.metadata.labels?.[Label.ManagedBy] === ManagedByValue ? true : undefined;
    });
  }

  /** The object at `path`, or undefined when there is none. */
  async get(path: string): Promise<KubeObject | undefined> {
    try {
      return await this.#server.client.request<KubeObject>('GET', path);
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /**
   * A create (POST to the collection) or an update (PUT); a conflict or a missing object, when `retried`,
   * is left for the next reconcile, as controller-runtime requeues.
   */
  async write(method: 'POST' | 'PUT', path: string, body: KubeObject, retried = false): Promise<void> {
    this.writes++;
    try {
      await this.#server.client.request(method, path, { body, query: { fieldManager: this.#fieldManager } });
    } catch (error) {
      if (retried && error instanceof KubeApiError && (error.status === 409 || error.status === 404)) return;
      throw error;
    }
  }
}

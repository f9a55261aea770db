/**
 * The desired state: every object kfmesh would apply for a snapshot, in one mode. `kfmesh render` prints
 * it and the controller applies it; both call `desiredState`.
 */
import type { ObjectProblem } from '../model/errors.ts';
import type { InferenceService } from '../model/inference-service.ts';
import { compareRefs, refOf, type KubeObject } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { kserveConfigFrom } from '../kserve/config.ts';
import { isInferenceService, renderInferenceService, type InferenceServiceRender } from '../kserve/render.ts';

/** The data-plane modes kfmesh renders for. */
export const MeshMode = { Sidecar: 'sidecar', Ambient: 'ambient' } as const;
export type MeshMode = (typeof MeshMode)[keyof typeof MeshMode];

/** Options of rendering. */
export interface RenderOptions {
  mode: MeshMode;
  /** The cluster domain (`cluster.local` by default). */
  clusterDomain?: string;
  /** Bind InferenceService VirtualServices to `mesh` (the default, as KServe since v0.14). */
  meshGateway?: boolean;
}

/** The rendered objects (sorted by group, kind, namespace, name) and the objects that could not be rendered. */
export interface RenderResult {
  objects: KubeObject[];
  problems: ObjectProblem[];
  /** Per InferenceService (`namespace/name`): its mode and status, for the controller and the console. */
  inferenceServices: Map<string, InferenceServiceRender>;
}

/**
 * Renders the desired state of a snapshot. Throws InputError when the platform's configuration is
 * unusable (nothing can be rendered); problems of single objects come back in `problems`.
 */
export function desiredState(snapshot: Snapshot, options: RenderOptions): RenderResult {
  const config = kserveConfigFrom(snapshot, options.clusterDomain ?? 'cluster.local');
  const objects: KubeObject[] = [];
  const problems: ObjectProblem[] = [];
  const inferenceServices = new Map<string, InferenceServiceRender>();
  for (const object of snapshot.all()) {
    if (!isInferenceService(object)) continue;
    const isvc = withDefaultNamespace(object);
    const result = renderInferenceService(isvc, config, snapshot, {
      meshGateway: options.meshGateway ?? true,
    });
    inferenceServices.set(`${isvc.metadata.namespace}/${isvc.metadata.name}`, result);
    objects.push(...result.objects);
    if (result.problem) problems.push(result.problem);
  }
  objects.sort((a, b) => compareRefs(refOf(a), refOf(b)));
  return { objects, problems, inferenceServices };
}

/** An object without a namespace is applied to `default`, as kubectl does. */
function withDefaultNamespace(isvc: InferenceService): InferenceService {
  if (isvc.metadata.namespace) return isvc;
  return { ...isvc, metadata: { ...isvc.metadata, namespace: 'default' } };
}

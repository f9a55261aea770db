/**
 * The desired state: every object kfmesh would apply for a snapshot. `kfmesh render` prints it and the
 * controller applies it; both call `desiredState`. The mode is chosen per namespace: `--mode` is the
 * default and a namespace label `kfmesh.io/mode: sidecar|ambient` overrides it, so a platform can move one
 * namespace at a time.
 */
import { NamespaceStanding, namespaceStanding } from '../model/sidecar.ts';
import type { ObjectProblem } from '../model/errors.ts';
import type { Finding } from '../model/finding.ts';
import type { InferenceService } from '../model/inference-service.ts';
import { compareRefs, refOf, type KubeObject } from '../model/object.ts';
import { managedByLabels, ownerReferenceTo } from '../model/ownership.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { hasWaypoint, waypointFor } from '../kubeflow/waypoint.ts';
import { ambientInferenceServiceObjects, serverlessInAmbientFinding } from '../kserve/ambient.ts';
import { isKnativeMode, kserveConfigFrom, kserveConfigInputs, type KServeConfig } from '../kserve/config.ts';
import { isDns1123Label } from '../kserve/hosts.ts';
import { KnativeConfigMaps } from '../kserve/knative.ts';
import { isInferenceService, renderInferenceService, type InferenceServiceRender } from '../kserve/render.ts';
import { kubeflowConfigFrom, kubeflowConfigInputs, type KubeflowConfig } from '../kubeflow/config.ts';
import { MeshConfigMap } from '../load/mesh-config.ts';
import type { ConfigMapInput } from '../model/inputs.ts';
import { notebookRoutesFor } from '../kubeflow/notebook.ts';
import { mixedModeFindings } from '../kubeflow/mixed-mode.ts';
import { profileObjects } from '../kubeflow/profile.ts';
import { Label, GroupKind } from '../model/vocabulary.ts';

/**
 * The ConfigMaps the render reads: KServe's and Knative's domains, Kubeflow's settings, and the mesh
 * config (whether sidecars take HBONE, for the mixed-mode findings). The controller watches exactly these.
 */
export const renderConfigInputs: readonly ConfigMapInput[] = [
  ...kserveConfigInputs,
  ...kubeflowConfigInputs,
  MeshConfigMap,
];

/**
 * Every ConfigMap kfmesh reads settings from: the render's, and Knative's network settings that the mesh
 * model and the migration read. Their data is the platform's configuration, not a tenant's.
 */
export const platformSettingInputs: readonly ConfigMapInput[] = [
  ...renderConfigInputs,
  KnativeConfigMaps.istio,
  KnativeConfigMaps.network,
];

/** The data-plane modes kfmesh renders for. */
export const MeshMode = { Sidecar: 'sidecar', Ambient: 'ambient' } as const;
export type MeshMode = (typeof MeshMode)[keyof typeof MeshMode];

/** Options of rendering. */
export interface RenderOptions {
  /** The default mode of namespaces without the mode label. */
  mode: MeshMode;
  /** The cluster domain (`cluster.local` by default). */
  clusterDomain?: string;
  /** Bind InferenceService VirtualServices to `mesh` (the default, as KServe since v0.14). */
  meshGateway?: boolean;
}

/** The rendered objects (sorted by group, kind, namespace, name), the objects that could not be rendered, and findings. */
export interface RenderResult {
  objects: KubeObject[];
  problems: ObjectProblem[];
  findings: Finding[];
  /** Per InferenceService (`namespace/name`): its mode and status, for the controller and the console. */
  inferenceServices: Map<string, InferenceServiceRender>;
  /** The objects rendered for each InferenceService (`namespace/name`) and each Profile (its name), for the console. */
  owned: { inferenceServices: Map<string, KubeObject[]>; profiles: Map<string, KubeObject[]> };
  /** The mode of each namespace rendering looked at (generated objects, or callers named by policies). */
  modes: Map<string, MeshMode>;
}

/**
 * Renders the desired state of a snapshot. Throws InputError when the platform's configuration is
 * unusable (nothing can be rendered); problems of single objects come back in `problems`.
 */
export function desiredState(snapshot: Snapshot, options: RenderOptions): RenderResult {
  const clusterDomain = options.clusterDomain ?? 'cluster.local';
  const config = kserveConfigFrom(snapshot, clusterDomain);
  const kubeflow = kubeflowConfigFrom(snapshot);
  const out: Rendering = {
    snapshot,
    kubeflow,
    objects: [],
    problems: [],
    findings: [],
    modes: new Map(),
    modeOf: (namespace) => modeOf(out, namespace, options.mode),
    owned: { inferenceServices: new Map(), profiles: new Map() },
  };
  const profileNamespaces = renderProfiles(out);
  renderNotebooks(out, clusterDomain);
  const { inferenceServices, ambientModelNamespaces } = renderInferenceServices(out, config, options);
  for (const namespace of ambientModelNamespaces)
    if (!profileNamespaces.has(namespace)) out.objects.push(...ambientModelNamespace(out, namespace));
  const ambientProfiles = snapshot
    .list(GroupKind.Profile)
    .filter((p) => out.modeOf(p.metadata.name ?? '') === MeshMode.Ambient);
  const moved = new Set([...profileNamespaces, ...ambientModelNamespaces]);
  const sidecars = (namespace: string) => runsSidecars(out, namespace, moved);
  const anySidecar =
    [...out.modes.values()].includes(MeshMode.Sidecar) ||
    snapshot
      .list(GroupKind.Namespace)
      .some(
        (n) => n.metadata.labels?.[Label.IstioInjection] === 'enabled' && sidecars(n.metadata.name ?? ''),
      );
  out.findings.push(...mixedModeFindings(snapshot, kubeflow, sidecars, ambientProfiles, anySidecar));
  const { objects, problems, findings, owned, modes } = out;
  objects.sort((a, b) => compareRefs(refOf(a), refOf(b)));
  return { objects, problems, findings, inferenceServices, owned, modes };
}

/** A render under way: what it has made so far, and the mode of each namespace it looked at. */
interface Rendering extends Pick<RenderResult, 'objects' | 'problems' | 'findings' | 'modes' | 'owned'> {
  snapshot: Snapshot;
  kubeflow: KubeflowConfig;
  modeOf: (namespace: string) => MeshMode;
}

/** A namespace's mode: its mode label, else the platform's; a label of another value is a problem. */
function modeOf(out: Rendering, namespace: string, platformMode: MeshMode): MeshMode {
  const known = out.modes.get(namespace);
  if (known) return known;
  const nsObject = out.snapshot.get(GroupKind.Namespace, '', namespace);
  const label = nsObject?.metadata.labels?.[Label.Mode];
  let mode = platformMode;
  if (label === MeshMode.Sidecar || label === MeshMode.Ambient) mode = label;
  else if (label !== undefined && nsObject) {
    out.problems.push({
      context: {
        location: out.snapshot.locate(nsObject, ['metadata', 'labels', Label.Mode]),
        object: refOf(nsObject),
        field: `metadata.labels.${Label.Mode}`,
      },
      message: `expected sidecar or ambient, got ${JSON.stringify(label)}; using ${platformMode}`,
    });
  }
  out.modes.set(namespace, mode);
  return mode;
}

/**
 * Whether a namespace's workloads run with sidecars once the render is applied: its mode where kfmesh sets
 * the namespace's labels (`moved`: Profiles' and ambient models' namespaces) or its mode is sidecar;
 * elsewhere (the platform's own namespaces, such as the one the pipelines UI runs in) what its labels
 * say now, since kfmesh does not change them.
 */
function runsSidecars(out: Rendering, namespace: string, moved: ReadonlySet<string>): boolean {
  if (out.modeOf(namespace) === MeshMode.Sidecar) return true;
  if (moved.has(namespace)) return false;
  const labels = out.snapshot.get(GroupKind.Namespace, '', namespace)?.metadata.labels ?? {};
  // Injection on gives pods sidecars whatever the ambient label says (docs/semantics.md, Sidecar injection).
  const standing = namespaceStanding(labels);
  return standing === NamespaceStanding.Sidecar || standing === NamespaceStanding.HalfAmbient;
}

/** Each Profile's namespace objects; returns the Profiles' namespaces. */
function renderProfiles(out: Rendering): Set<string> {
  const profileNamespaces = new Set<string>();
  for (const profile of out.snapshot.list(GroupKind.Profile)) {
    const namespace = profile.metadata.name ?? '';
    if (!isDns1123Label(namespace)) {
      // A Profile's name is its namespace's: without a valid one there is nothing to render.
      out.problems.push({
        context: {
          location: out.snapshot.locate(profile, ['metadata', 'name']),
          object: refOf(profile),
          field: 'metadata.name',
        },
        message: namespace ? `${JSON.stringify(namespace)} is not a valid namespace name` : 'required',
      });
      continue;
    }
    profileNamespaces.add(namespace);
    const rendered = profileObjects(profile, { ...out.kubeflow }, out.modeOf(namespace));
    out.owned.profiles.set(namespace, rendered);
    out.objects.push(...rendered);
  }
  return profileNamespaces;
}

/** Each Notebook's route (none when the notebook controller does not use Istio). */
function renderNotebooks(out: Rendering, clusterDomain: string): void {
  for (const notebook of out.snapshot.list(GroupKind.Notebook)) {
    if (!notebook.metadata.name) {
      out.problems.push({
        context: {
          location: out.snapshot.locate(notebook, ['metadata']),
          object: refOf(notebook),
          field: 'metadata.name',
        },
        message: 'required',
      });
      continue;
    }
    const mode = out.modeOf(notebook.metadata.namespace ?? 'default');
    out.objects.push(...notebookRoutesFor(notebook, out.kubeflow, mode, clusterDomain));
  }
}

/** Each InferenceService's objects, and in ambient namespaces its ambient ones; returns those namespaces. */
function renderInferenceServices(
  out: Rendering,
  config: KServeConfig,
  options: RenderOptions,
): { inferenceServices: Map<string, InferenceServiceRender>; ambientModelNamespaces: Set<string> } {
  const inferenceServices = new Map<string, InferenceServiceRender>();
  const ambientModelNamespaces = new Set<string>();
  for (const object of out.snapshot.all()) {
    if (!isInferenceService(object)) continue;
    const isvc = withDefaultNamespace(object);
    const namespace = isvc.metadata.namespace ?? 'default';
    const result = renderInferenceService(isvc, config, out.snapshot, {
      meshGateway: options.meshGateway ?? true,
    });
    const key = `${namespace}/${isvc.metadata.name}`;
    inferenceServices.set(key, result);
    out.owned.inferenceServices.set(key, [...result.objects]);
    out.objects.push(...result.objects);
    if (result.problem) out.problems.push(result.problem);
    if (!result.mode || out.modeOf(namespace) !== MeshMode.Ambient) continue;
    if (isKnativeMode(result.mode)) {
      out.findings.push({ ...serverlessInAmbientFinding(isvc), ...locationOf(out.snapshot, object) });
    } else {
      const ambient = ambientInferenceServiceObjects(isvc);
      out.owned.inferenceServices.get(key)?.push(...ambient);
      out.objects.push(...ambient);
      ambientModelNamespaces.add(namespace);
    }
  }
  return { inferenceServices, ambientModelNamespaces };
}

/**
 * A model namespace in ambient mode that is not a Profile's: the ambient labels on its Namespace, and a
 * waypoint if it has none.
 */
function ambientModelNamespace(out: Rendering, namespace: string): KubeObject[] {
  const nsObject = out.snapshot.get(GroupKind.Namespace, '', namespace) ?? {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: namespace },
  };
  const meta: KubeObject['metadata'] = {
    name: namespace,
    labels: {
      [Label.IstioInjection]: 'disabled',
      [Label.DataplaneMode]: 'ambient',
      [Label.UseWaypoint]: out.kubeflow.waypointName,
      ...managedByLabels(nsObject),
    },
  };
  const owners = ownerReferenceTo(nsObject, undefined);
  if (owners) meta.ownerReferences = owners;
  const objects: KubeObject[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: meta }];
  if (!hasWaypoint(out.snapshot.all(), namespace))
    objects.push(waypointFor(namespace, out.kubeflow.waypointName, nsObject));
  return objects;
}

function locationOf(snapshot: Snapshot, object: KubeObject): { location?: NonNullable<Finding['location']> } {
  const location = snapshot.locate(object);
  return location ? { location } : {};
}

/** An object without a namespace is applied to `default`, as kubectl does. */
function withDefaultNamespace(isvc: InferenceService): InferenceService {
  if (isvc.metadata.namespace) return isvc;
  return { ...isvc, metadata: { ...isvc.metadata, namespace: 'default' } };
}

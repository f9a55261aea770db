/**
 * What rules share: how findings show a trace and a label selector, where a workload is written, which
 * objects istioctl's checks leave out, the annotations it reads, and the gateways VirtualServices are bound to.
 */
import { fieldsOf, podTemplateOf } from '../model/specs.ts';
import type { Hop, TraceResult } from '../model/trace-result.ts';
import type { KubeObject, ObjectMeta } from '../model/object.ts';
import type { FieldPath } from '../load/parse.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { Workload } from '../mesh/workloads.ts';
import type { Mesh as CompiledMesh } from '../mesh/compiled.ts';
import type { MeshService } from '../mesh/services.ts';
import { traceRequest } from '../mesh/trace.ts';
import { GroupKind, Label } from '../model/vocabulary.ts';
import { Mesh, writtenAsVirtualService, type ResolvedVirtualService } from '../mesh/virtual-services.ts';
import { isInternalGatewayReference } from '../mesh/gateway-api.ts';
import type { AnalyzeContext } from './rule.ts';

/** The hops of a trace on one line: `sidecar ns/workload [cluster] → ...`. */
export function hopsText(hops: readonly Hop[]): string {
  return hops
    .map((h) => `${h.kind} ${h.namespace}/${h.workload}${h.cluster ? ` [${h.cluster}]` : ''}`)
    .join(' → ');
}

/** One line of evidence: the request, its hops and its answer. */
export function traceLine(request: string, result: TraceResult): string {
  const hops = hopsText(result.hops);
  return `${request}: ${hops ? `${hops} → ` : ''}${result.response.code}${result.response.flags !== '-' ? ` ${result.response.flags}` : ''} (${result.summary})`;
}

/**
 * The object that defines a workload's pods, and the path of its pod metadata: its Deployment, StatefulSet
 * or DaemonSet (`spec.template.metadata`), else the pod itself (`metadata`).
 */
export function definingObject(
  snapshot: Snapshot,
  workload: Workload,
): { object: KubeObject; podMetadata: FieldPath } {
  for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet']) {
    const owner = snapshot.get(`apps/${kind}`, workload.namespace, workload.name);
    if (owner) return { object: owner, podMetadata: ['spec', 'template', 'metadata'] };
  }
  return { object: workload.object, podMetadata: ['metadata'] };
}

/** A label selector as findings write it: `app=api,version=v2`. */
export function selectorText(selector: Readonly<Record<string, string>>): string {
  return Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** Kubernetes' own namespaces, whose pods Istio's injector never touches. */
const systemNamespaces = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage']);

/** One of Kubernetes' own namespaces. */
export function isSystemNamespace(name: string): boolean {
  return systemNamespaces.has(name);
}

/**
 * Objects of Istio's own control plane (labelled `istio`, or `release: istio`) or of Kubernetes' system
 * namespaces, which these checks leave out as istioctl does: they run no application behind a sidecar.
 */
export function isIstioOrSystem(object: KubeObject): boolean {
  const labels = object.metadata.labels ?? {};
  return (
    Label.Istio in labels ||
    labels['release'] === 'istio' ||
    systemNamespaces.has(object.metadata.namespace ?? '')
  );
}

/** Annotations as Istio's annotation checks see them, with where they are written. */
export interface AnnotatedMetadata {
  /** The object the annotations are written in. */
  object: KubeObject;
  /** The kind they apply to: the object's, or `Pod` for a workload's pod template. */
  kind: string;
  /** The path of the `annotations` map. */
  path: FieldPath;
  annotations: Readonly<Record<string, string>>;
  labels: Readonly<Record<string, string>>;
  /** A pod template (istioctl reads running pods only, not templates). */
  template: boolean;
  /** The pod's init container names (a pod or template). */
  initContainers: readonly string[];
}

/** The kinds whose annotations annotatedMetadata reads. */
export const annotatedKinds: readonly string[] = [
  GroupKind.Namespace,
  GroupKind.Service,
  GroupKind.Pod,
  GroupKind.Deployment,
  GroupKind.StatefulSet,
  GroupKind.DaemonSet,
];

/**
 * The annotations of Namespaces, Services, Pods and Deployments (what istioctl's annotation analyzers
 * read), and of the pod templates of Deployments, StatefulSets and DaemonSets, read as pods' annotations.
 */
export function annotatedMetadata(snapshot: Snapshot): AnnotatedMetadata[] {
  const out: AnnotatedMetadata[] = [];
  const initNames = (spec: unknown) =>
    ((spec as { initContainers?: { name?: string }[] } | undefined)?.initContainers ?? []).map(
      (c) => c.name ?? '',
    );
  const add = (
    object: KubeObject,
    kind: string,
    meta: ObjectMeta | undefined,
    path: FieldPath,
    template: boolean,
    spec: unknown,
  ) => {
    const annotations = meta?.annotations ?? {};
    if (Object.keys(annotations).length === 0) return;
    out.push({
      object,
      kind,
      path,
      annotations,
      labels: meta?.labels ?? {},
      template,
      initContainers: initNames(spec),
    });
  };
  for (const [group, kind] of [
    ['', 'Namespace'],
    ['', 'Service'],
    ['', 'Pod'],
    ['apps', 'Deployment'],
  ] as const)
    for (const o of snapshot.list(`${group}/${kind}`))
      add(o, kind, o.metadata, ['metadata', 'annotations'], false, fieldsOf(o, 'spec'));
  for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet'])
    for (const o of snapshot.list(`apps/${kind}`)) {
      const template = podTemplateOf(o);
      add(
        o,
        'Pod',
        template?.metadata,
        ['spec', 'template', 'metadata', 'annotations'],
        true,
        template?.spec,
      );
    }
  return out;
}

/**
 * Each gateway a written VirtualService is bound to (not `mesh`), at its index in `spec.gateways` (resolved
 * names keep that order), with the Istio or Gateway API Gateway of that name when there is one (as Istio's
 * analyzer of the published test data counts them), and whether the name is one of istiod's internal ones.
 */
export function gatewayBindings(context: AnalyzeContext): {
  vs: ResolvedVirtualService;
  name: string;
  index: number;
  gateway: KubeObject | undefined;
  internal: boolean;
}[] {
  return context
    .mesh()
    .virtualServices.filter(writtenAsVirtualService)
    .flatMap((vs) =>
      vs.gateways.flatMap((name, index) => {
        if (name === Mesh) return [];
        const [ns = '', gateway = ''] = name.split('/');
        return [
          {
            vs,
            name,
            index,
            gateway:
              context.snapshot.get(GroupKind.IstioGateway, ns, gateway) ??
              context.snapshot.get(GroupKind.Gateway, ns, gateway),
            internal: isInternalGatewayReference(name),
          },
        ];
      }),
    );
}

/**
 * A request to the Service from a workload in the mesh that passes no waypoint: the first (by name) whose
 * request is answered, else the first.
 */
export function traceWithoutWaypoint(mesh: CompiledMesh, service: MeshService): string[] {
  return tracedCall(
    mesh,
    service,
    (t) => !t.hops.some((h) => h.kind === 'waypoint'),
    (t) => t.response.code >= 200 && t.response.code < 400,
  );
}

/**
 * A request to the Service (its first port) from a workload with a proxy that is not one of its own, of
 * the first 20 by name: among those `keep` takes, the first `prefer` does, else the first.
 */
export function tracedCall(
  mesh: CompiledMesh,
  service: MeshService,
  keep: (trace: TraceResult) => boolean,
  prefer: (trace: TraceResult) => boolean,
): string[] {
  const port = service.ports[0]?.port;
  if (port === undefined) return [];
  const own = new Set(service.endpoints.map((e) => e.workload));
  const url = `http://${service.hostname}:${port}/`;
  const traces = [...mesh.workloadByName]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .filter(([, w]) => (w.proxy === 'ambient' || w.proxy === 'sidecar') && !own.has(w))
    .slice(0, 20)
    .map(([name]) => ({ name, trace: traceRequest(mesh, { from: name, url }) }))
    .filter((t) => keep(t.trace));
  const shown = traces.find((t) => prefer(t.trace)) ?? traces[0];
  if (!shown) return [];
  return [`GET ${url} from ${shown.name}: ${hopPath(shown.trace)} → ${shown.trace.response.code}`];
}

/** The proxies a traced request passed, in order: `kind namespace/workload → ...`. */
export function hopPath(trace: {
  hops: readonly { kind: string; namespace: string; workload: string }[];
}): string {
  return trace.hops.map((h) => `${h.kind} ${h.namespace}/${h.workload}`).join(' → ');
}

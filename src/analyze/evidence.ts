/** What rules share: how findings show a trace and a label selector, where a workload is written, and which objects istioctl's checks leave out. */
import type { Hop, TraceResult } from '../model/trace-result.ts';
import type { KubeObject } from '../model/object.ts';
import type { FieldPath } from '../load/parse.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { Workload } from '../mesh/workloads.ts';
import { Label } from '../model/vocabulary.ts';

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
    const owner = snapshot.get('apps', kind, workload.namespace, workload.name);
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

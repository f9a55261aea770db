/**
 * Workloads: the pods of the cluster (or, when a manifest has no Pods, one pod per Deployment, StatefulSet
 * or DaemonSet template), with the proxy each runs as Istio's injector and CNI decide, and the identity
 * and names Istio reports for it.
 */
import { proxyContainerOf, hasInjectedSidecar, injectedLabels } from '../model/sidecar.ts';
import { podTemplateOf, specIfKind, specOf, statusOf, type PodSpec } from '../model/specs.ts';
import { compareStrings, isPlainObject, type KubeObject } from '../model/object.ts';
import { labelsMatch, type Snapshot } from '../load/snapshot.ts';
import { Annotation, Label, GatewayClass, GroupKind } from '../model/vocabulary.ts';
import type { MeshConfig } from '../load/mesh-config.ts';

/** The proxy a workload runs. */
export const ProxyKind = {
  Sidecar: 'sidecar',
  Gateway: 'gateway',
  Waypoint: 'waypoint',
  Ztunnel: 'ztunnel',
  Ambient: 'ambient',
  None: 'none',
} as const;
export type ProxyKind = (typeof ProxyKind)[keyof typeof ProxyKind];

/** One workload (represented by one pod). */
export interface Workload {
  namespace: string;
  /** The workload name Istio reports: the Deployment, StatefulSet, DaemonSet, Job, or the pod itself. */
  name: string;
  /** The pod's name (generated when the input had only a template). */
  podName: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  serviceAccount: string;
  ip: string;
  /** The IP was not in the input; a stable one was assigned. */
  ipAssigned: boolean;
  proxy: ProxyKind;
  /** Auto-mTLS sends mTLS to this pod (label `security.istio.io/tlsMode=istio`, set by injection). */
  tlsModeIstio: boolean;
  /**
   * A sidecar that terminates HBONE (label `networking.istio.io/tunnel: http`, which injection sets
   * when the mesh config turns HBONE on for sidecars), so ztunnel tunnels to it with the client's identity.
   */
  acceptsHbone: boolean;
  canonicalService: string;
  canonicalRevision: string;
  /** The pod's DNS name under a headless Service: `spec.hostname` and `spec.subdomain`, when both are set. */
  dnsName?: { hostname: string; subdomain: string };
  /** Container ports by name, for named target ports. */
  containerPorts: ReadonlyMap<string, number>;
  object: KubeObject;
}

/** Builds the workloads of a snapshot; Istio Gateway selectors mark gateway pods. */
export function workloadsFrom(
  snapshot: Snapshot,
  gatewaySelectors: readonly Readonly<Record<string, string>>[],
  config: Pick<MeshConfig, 'sidecarsAcceptHbone'>,
): Workload[] {
  const pods = snapshot.list(GroupKind.Pod);
  const real = new Set(pods);
  const fromTemplates = templatePods(snapshot, pods);
  const workloads: Workload[] = [];
  let assigned = 0;
  for (const pod of [...pods, ...fromTemplates]) {
    const namespace = pod.metadata.namespace ?? 'default';
    const given = pod.metadata.labels ?? {};
    const annotations = pod.metadata.annotations ?? {};
    const spec = specOf(pod, '/Pod');
    const status = statusOf(pod, '/Pod');
    const nsLabels = snapshot.get(GroupKind.Namespace, '', namespace)?.metadata.labels ?? {};
    const proxy = proxyOf(given, annotations, spec, nsLabels, gatewaySelectors, real.has(pod));
    const ip = status.podIP ?? `10.254.${Math.floor(assigned / 250)}.${(assigned % 250) + 2}`;
    if (!status.podIP) assigned++;
    const containerPorts = new Map<string, number>();
    for (const c of spec.containers ?? [])
      for (const p of c.ports ?? [])
        if (p.name && p.containerPort) containerPorts.set(p.name, p.containerPort);
    const name = workloadName(snapshot, pod);
    // A template's pod runs with the labels the injector adds (a running pod has them already).
    const labels =
      proxy === ProxyKind.Sidecar && !real.has(pod)
        ? injectedLabels(given, name, config.sidecarsAcceptHbone)
        : given;
    workloads.push({
      namespace,
      name,
      podName: pod.metadata.name ?? name,
      labels,
      annotations,
      serviceAccount: spec.serviceAccountName ?? spec.serviceAccount ?? 'default',
      ip,
      ipAssigned: !status.podIP,
      proxy,
      tlsModeIstio: labels[Label.TlsMode] === 'istio' || (proxy === ProxyKind.Sidecar && !real.has(pod)),
      acceptsHbone:
        proxy === ProxyKind.Sidecar &&
        (labels[Label.Tunnel] === 'http' || (!real.has(pod) && config.sidecarsAcceptHbone)),
      canonicalService: labels[Label.CanonicalName] ?? labels[Label.AppName] ?? labels[Label.App] ?? name,
      canonicalRevision:
        labels[Label.CanonicalRevision] ?? labels[Label.AppVersion] ?? labels[Label.Version] ?? 'latest',
      containerPorts,
      ...(spec.hostname && spec.subdomain
        ? { dnsName: { hostname: spec.hostname, subdomain: spec.subdomain } }
        : {}),
      object: pod,
    });
  }
  return workloads.sort((a, b) =>
    compareStrings(`${a.namespace}/${a.name}/${a.podName}`, `${b.namespace}/${b.name}/${b.podName}`),
  );
}

/** Decides the proxy of a pod, as the injector (for templates) or the pod itself (for real pods) says. */
function proxyOf(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
  spec: PodSpec,
  nsLabels: Readonly<Record<string, string>>,
  gatewaySelectors: readonly Readonly<Record<string, string>>[],
  isRealPod: boolean,
): ProxyKind {
  const proxyContainer = proxyContainerOf(spec);
  if (
    labels[Label.GatewayClassName] === GatewayClass.Waypoint ||
    labels[Label.GatewayManaged] === 'istio.io-mesh-controller'
  ) {
    return ProxyKind.Waypoint;
  }
  if (labels[Label.App] === 'ztunnel' && proxyContainer) return ProxyKind.Ztunnel;
  if (proxyContainer?.args?.includes('router') || labels[Label.GatewayName] !== undefined)
    return ProxyKind.Gateway;
  if (gatewaySelectors.some((sel) => Object.keys(sel).length > 0 && labelsMatch(labels, sel))) {
    return ProxyKind.Gateway;
  }
  if (isRealPod) {
    if (hasInjectedSidecar(annotations, spec)) return ProxyKind.Sidecar;
  } else if (injects(labels, annotations, nsLabels)) {
    return ProxyKind.Sidecar;
  }
  return ambientEnrolled(labels, annotations, nsLabels) ? ProxyKind.Ambient : ProxyKind.None;
}

/** The sidecar injector's decision for a pod template (default webhook configuration). */
function injects(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
  nsLabels: Readonly<Record<string, string>>,
): boolean {
  const podSays = labels[Label.SidecarInject] ?? annotations[Label.SidecarInject];
  if (podSays === 'false') return false;
  if (nsLabels[Label.IstioInjection] === 'disabled') return false;
  if (nsLabels[Label.IstioInjection] === 'enabled' || nsLabels[Label.IstioRev] !== undefined) return true;
  return podSays === 'true' || labels[Label.IstioRev] !== undefined;
}

/** Ambient enrollment: the pod's or its namespace's `istio.io/dataplane-mode=ambient`, unless the pod says `none`. */
function ambientEnrolled(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
  nsLabels: Readonly<Record<string, string>>,
): boolean {
  if (annotations[Annotation.AmbientRedirection] === 'enabled') return true;
  const podMode = labels[Label.DataplaneMode];
  if (podMode === 'none') return false;
  return podMode === 'ambient' || nsLabels[Label.DataplaneMode] === 'ambient';
}

/** The workload name Istio reports for a pod: the owning Deployment (through its ReplicaSet), StatefulSet, DaemonSet, Job. */
function workloadName(snapshot: Snapshot, pod: KubeObject): string {
  const owner =
    (pod.metadata.ownerReferences ?? []).find((o) => o.controller) ?? pod.metadata.ownerReferences?.[0];
  if (!owner) return pod.metadata.name ?? '';
  if (owner.kind === 'ReplicaSet') {
    const rs = snapshot.get(GroupKind.ReplicaSet, pod.metadata.namespace ?? '', owner.name);
    const deployment = rs?.metadata.ownerReferences?.find((o) => o.kind === 'Deployment');
    if (deployment) return deployment.name;
    const hash = pod.metadata.labels?.['pod-template-hash'];
    return hash && owner.name.endsWith(`-${hash}`) ? owner.name.slice(0, -hash.length - 1) : owner.name;
  }
  if (owner.kind === 'Job') {
    const job = snapshot.get(GroupKind.Job, pod.metadata.namespace ?? '', owner.name);
    return job?.metadata.ownerReferences?.find((o) => o.kind === 'CronJob')?.name ?? owner.name;
  }
  return owner.name;
}

/** Pods for workload templates that have no Pod in the input (manifests before they run). */
function templatePods(snapshot: Snapshot, pods: readonly KubeObject[]): KubeObject[] {
  const out: KubeObject[] = [];
  for (const kind of ['Deployment', 'StatefulSet', 'DaemonSet']) {
    for (const owner of snapshot.list(`apps/${kind}`)) {
      const ns = owner.metadata.namespace ?? 'default';
      const name = owner.metadata.name ?? '';
      const hasPod = pods.some(
        (p) => (p.metadata.namespace ?? 'default') === ns && podBelongsTo(snapshot, p, kind, name),
      );
      if (hasPod) continue;
      const template = podTemplateOf(owner);
      const metadata = isPlainObject(template.metadata) ? template.metadata : {};
      // A StatefulSet's pods are named `<name>-<ordinal>`, with that hostname under its governing Service.
      const serviceName =
        kind === 'StatefulSet' ? specIfKind(owner, 'apps/StatefulSet').serviceName : undefined;
      const dns =
        kind === 'StatefulSet'
          ? { hostname: `${name}-0`, ...(serviceName ? { subdomain: serviceName } : {}) }
          : {};
      out.push({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          ...metadata,
          name: kind === 'StatefulSet' ? `${name}-0` : `${name}-template`,
          namespace: ns,
          ownerReferences: [{ apiVersion: 'apps/v1', kind, name, uid: '', controller: true }],
        },
        spec: { ...(template.spec ?? {}), ...dns },
      });
    }
  }
  return out;
}

function podBelongsTo(snapshot: Snapshot, pod: KubeObject, kind: string, name: string): boolean {
  for (const owner of pod.metadata.ownerReferences ?? []) {
    if (owner.kind === kind && owner.name === name) return true;
    if (kind === 'Deployment' && owner.kind === 'ReplicaSet') {
      const rs = snapshot.get(GroupKind.ReplicaSet, pod.metadata.namespace ?? '', owner.name);
      if (rs?.metadata.ownerReferences?.some((o) => o.kind === 'Deployment' && o.name === name)) return true;
      const hash = pod.metadata.labels?.['pod-template-hash'];
      if (!rs && hash && owner.name === `${name}-${hash}`) return true;
    }
  }
  return false;
}

/**
 * The marks Istio's sidecar injector leaves on a pod (docs/semantics.md, Sidecar injection): the proxy
 * container `istio-proxy` (and, without the CNI plugin, the init container `istio-init`), the status
 * annotation naming what it injected, and the TLS mode label. One home for writing them (a pod as it runs
 * once injected), reading them (does a running pod have a sidecar), and removing them (a pod restarted
 * without one).
 */
import type { KubeObject } from './object.ts';
import type { Container, PodSpec } from './specs.ts';
import { Annotation, Label } from './vocabulary.ts';

/** The containers the injector adds. */
export const ProxyContainer = 'istio-proxy';
export const InitContainer = 'istio-init';

/** Is this one of the containers the injector adds? */
function isInjectedContainer(container: Pick<Container, 'name'>): boolean {
  return container.name === ProxyContainer || container.name === InitContainer;
}

/** The proxy container of a pod spec (a sidecar's, a gateway's or ztunnel's), if it has one. */
export function proxyContainerOf(spec: PodSpec): Container | undefined {
  return spec.containers?.find((c) => c.name === ProxyContainer);
}

/** Does a pod spec run Istio's proxy, as a container or an init container (a native sidecar)? */
export function runsProxy(spec: PodSpec): boolean {
  return [...(spec.containers ?? []), ...(spec.initContainers ?? [])].some((c) => c.name === ProxyContainer);
}

/** Does a running pod say the injector gave it a sidecar (its status annotation or its proxy container)? */
export function hasInjectedSidecar(annotations: Readonly<Record<string, string>>, spec: PodSpec): boolean {
  return annotations[Annotation.SidecarStatus] !== undefined || proxyContainerOf(spec) !== undefined;
}

/** The status annotation's value for a sidecar of these containers. */
export function sidecarStatus(containers: readonly string[] = [ProxyContainer]): string {
  return JSON.stringify({ containers });
}

/**
 * The labels the injector gives a pod it injects (docs/semantics.md, Sidecar injection): its TLS mode, the
 * tunnel label of a sidecar that accepts HBONE (`hbone`), and its canonical service and revision, each
 * kept when the pod has it. `workload` is the name of the pod's workload (its Deployment's), the
 * canonical name's last fallback.
 */
export function injectedLabels(
  labels: Readonly<Record<string, string>>,
  workload: string,
  hbone = false,
): Record<string, string> {
  const canonicalName = (
    labels[Label.CanonicalName] ??
    labels[Label.AppName] ??
    labels[Label.App] ??
    workload
  )
    .slice(0, 63)
    .replace(/^[-_.]+|[-_.]+$/g, '');
  return {
    ...labels,
    [Label.TlsMode]: labels[Label.TlsMode] ?? 'istio',
    ...(hbone ? { [Label.Tunnel]: labels[Label.Tunnel] ?? 'http' } : {}),
    [Label.CanonicalName]: canonicalName,
    [Label.CanonicalRevision]:
      labels[Label.CanonicalRevision] ?? labels[Label.AppVersion] ?? labels[Label.Version] ?? 'latest',
  };
}

/**
 * The injector's labels that stay meaningful on a pod without a sidecar (its canonical service and
 * revision); its TLS mode label would make sidecar clients send mTLS to the pod's own port.
 */
export const CanonicalLabelKeys: readonly string[] = [Label.CanonicalName, Label.CanonicalRevision];

/** The keys of the labels the injector adds (`injectedLabels`); a pod in ambient mode has none of them. */
export const InjectedLabelKeys: readonly string[] = [
  Label.TlsMode,
  Label.Tunnel,
  Label.CanonicalName,
  Label.CanonicalRevision,
];

/** The injector's marks on a pod's metadata: its labels (`injectedLabels`) and the status annotation. */
export function injectedMetadata(
  metadata: KubeObject['metadata'],
  workload: string,
  hbone = false,
): KubeObject['metadata'] {
  return {
    ...metadata,
    labels: injectedLabels(metadata.labels ?? {}, workload, hbone),
    annotations: { ...metadata.annotations, [Annotation.SidecarStatus]: sidecarStatus() },
  };
}

/** A pod's labels, annotations and spec without the injector's marks. */
export function withoutInjection(
  labels: Readonly<Record<string, string>>,
  annotations: Readonly<Record<string, string>>,
  spec: PodSpec,
): { labels: Record<string, string>; annotations: Record<string, string>; spec: PodSpec } {
  const { [Label.TlsMode]: _mode, ...restLabels } = labels;
  const { [Annotation.SidecarStatus]: _status, ...restAnnotations } = annotations;
  const strip = <T extends { name?: string }>(list: T[]) => list.filter((c) => !isInjectedContainer(c));
  const next: PodSpec = { ...spec, containers: strip(spec.containers ?? []) };
  if (spec.initContainers) next.initContainers = strip(spec.initContainers);
  return { labels: restLabels, annotations: restAnnotations, spec: next };
}

/**
 * A namespace whose pods are in ambient mode: labelled `istio.io/dataplane-mode=ambient` without turning on
 * sidecar injection (`istio-injection: enabled` or a revision label), which would give its pods sidecars.
 */
export function namespaceIsAmbient(nsLabels: Readonly<Record<string, string>>): boolean {
  if (nsLabels[Label.DataplaneMode] !== 'ambient') return false;
  if (nsLabels[Label.IstioInjection] === 'disabled') return true;
  return nsLabels[Label.IstioInjection] !== 'enabled' && nsLabels[Label.IstioRev] === undefined;
}

/** Where a namespace stands between the two modes, by its labels (docs/semantics.md, The migration plan). */
export const NamespaceStanding = {
  Sidecar: 'sidecar',
  HalfAmbient: 'ambient with injection still on',
  Ambient: 'ambient',
  Outside: 'outside the mesh',
} as const;
export type NamespaceStanding = (typeof NamespaceStanding)[keyof typeof NamespaceStanding];

/** Where a namespace stands: injection only, both labels (its pods still get sidecars), ambient, or neither. */
export function namespaceStanding(nsLabels: Readonly<Record<string, string>>): NamespaceStanding {
  if (namespaceIsAmbient(nsLabels)) return NamespaceStanding.Ambient;
  const injected = nsLabels[Label.IstioInjection] === 'enabled' || nsLabels[Label.IstioRev] !== undefined;
  if (injected && nsLabels[Label.DataplaneMode] === 'ambient') return NamespaceStanding.HalfAmbient;
  return injected ? NamespaceStanding.Sidecar : NamespaceStanding.Outside;
}

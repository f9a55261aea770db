/**
 * Istio's annotations on Kubernetes objects (docs/semantics.md, Istio annotations): which keys are Istio's,
 * which of them Istio knows, where each belongs, and the values its sidecar injector accepts. The catalogue
 * is src/model/istio-annotations.ts.
 */
import { istioAnnotations, type IstioAnnotation } from '../model/istio-annotations.ts';
import { Annotation, Label } from '../model/vocabulary.ts';

const byName = new Map(istioAnnotations.map((a) => [a.name, a]));

/** Istio's annotation of this name, if it has one. */
export function istioAnnotation(name: string): IstioAnnotation | undefined {
  return byName.get(name);
}

/** Is the key in Istio's namespace (a prefix ending in `istio.io`), or the one Kubernetes key Istio documents? */
export function isIstioAnnotationKey(key: string): boolean {
  if (key === Annotation.IngressClass) return true;
  const slash = key.indexOf('/');
  return slash >= 0 && key.slice(0, slash).endsWith('istio.io');
}

/** Annotations Istio's own components write (the injector, the gateway controller, revisions): never the user's to fix. */
export function writtenByIstio(name: string): boolean {
  return (
    name === Annotation.SidecarStatus ||
    name === Annotation.GatewayControllerVersion ||
    name === Label.IstioRev
  );
}

/** Annotations istiod sets on every pod it redirects with the CNI plugin (no `istio-init` container). */
export const setByCni: ReadonlySet<string> = new Set([
  Annotation.InterceptionMode,
  Annotation.IncludeInboundPorts,
  Annotation.ExcludeInboundPorts,
  Annotation.IncludeOutboundIpRanges,
]);

const uint = (max: number) => (v: string) =>
  /^[0-9]+$/.test(v) && Number(v) <= max ? undefined : `not a whole number from 0 to ${max}`;
const port = uint(65535);
const uint32 = uint(4294967295);

function portList(v: string): string | undefined {
  const text = v.trim();
  if (text === '') return undefined;
  for (const p of text.split(',')) if (port(p.trim()) !== undefined) return `"${p}" is not a port`;
  return undefined;
}

function cidrList(v: string): string | undefined {
  if (v === '') return undefined;
  for (const cidr of v.split(','))
    if (!isPrefix(cidr)) return `"${cidr}" is not an address range (a.b.c.d/n)`;
  return undefined;
}

/** Go's netip.ParsePrefix: an IPv4 or IPv6 address (no zone), `/`, and a prefix length within it. */
function isPrefix(text: string): boolean {
  const [address, bits, ...rest] = text.split('/');
  if (rest.length > 0 || address === undefined || bits === undefined || !/^(0|[1-9][0-9]*)$/.test(bits))
    return false;
  if (isIpv4(address)) return Number(bits) <= 32;
  return isIpv6(address) && Number(bits) <= 128;
}

/** A dotted-quad IPv4 address. */
export function isIpv4(text: string): boolean {
  const octets = text.split('.');
  return octets.length === 4 && octets.every((o) => /^(0|[1-9][0-9]{0,2})$/.test(o) && Number(o) <= 255);
}

/** An IPv6 address (with `::` and an IPv4 tail allowed). */
export function isIpv6(text: string): boolean {
  const halves = text.split('::');
  if (halves.length > 2) return false;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const all = halves.flatMap(groups);
  const last = all[all.length - 1];
  // An embedded IPv4 address counts as two groups.
  const ipv4Tail = last !== undefined && last.includes('.');
  if (ipv4Tail && !isIpv4(last)) return false;
  const hex = ipv4Tail ? all.slice(0, -1) : all;
  if (!hex.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  const count = hex.length + (ipv4Tail ? 2 : 0);
  return halves.length === 2 ? count < 8 : count === 8;
}

function interfaces(v: string): string | undefined {
  if (v === '') return undefined;
  for (const raw of v.split(',')) {
    const name = raw.trim();
    if (name === '') return 'an interface name is empty';
    if (name.length > 15) return `interface name "${name}" is longer than 15 characters`;
    if (!/^[a-zA-Z][a-zA-Z0-9_.-]*$/.test(name))
      return `interface name "${name}" has characters an interface name cannot`;
  }
  return undefined;
}

const goBool = new Set(['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False']);
// A Kubernetes quantity: a decimal number, then a binary or decimal suffix or an exponent.
const quantity = /^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$/;

/** What the injector checks of each annotation's value: a reason when it refuses it. */
const validators: Readonly<Record<string, (value: string) => string | undefined>> = {
  [Annotation.InterceptionMode]: (v) =>
    ['REDIRECT', 'TPROXY', 'NONE'].includes(v) ? undefined : 'not REDIRECT, TPROXY or NONE',
  [Annotation.StatusPort]: (v) => port(v.trim()),
  [Annotation.ReadinessInitialDelaySeconds]: uint32,
  [Annotation.ReadinessPeriodSeconds]: uint32,
  [Annotation.ReadinessFailureThreshold]: uint32,
  [Annotation.IncludeOutboundIpRanges]: (v) => (v === '*' ? undefined : cidrList(v)),
  [Annotation.ExcludeOutboundIpRanges]: cidrList,
  [Annotation.IncludeInboundPorts]: (v) => (v === '*' ? undefined : portList(v)),
  [Annotation.ExcludeInboundPorts]: portList,
  [Annotation.ExcludeOutboundPorts]: portList,
  [Annotation.ExcludeInterfaces]: interfaces,
  [Annotation.KubevirtInterfaces]: interfaces,
  [Annotation.RerouteVirtualInterfaces]: interfaces,
  [Annotation.PrometheusMergeMetrics]: (v) => (goBool.has(v) ? undefined : 'not a boolean (true or false)'),
  [Annotation.ProxyCpu]: (v) => (quantity.test(v) ? undefined : 'not a Kubernetes quantity (100m, 1)'),
  [Annotation.ProxyMemory]: (v) => (quantity.test(v) ? undefined : 'not a Kubernetes quantity (128Mi, 1Gi)'),
  [Annotation.ProxyCpuLimit]: (v) => (quantity.test(v) ? undefined : 'not a Kubernetes quantity (100m, 1)'),
  [Annotation.ProxyMemoryLimit]: (v) =>
    quantity.test(v) ? undefined : 'not a Kubernetes quantity (128Mi, 1Gi)',
};

/** Why the sidecar injector refuses this value of the annotation, or undefined when it takes it (or does not check it). */
export function annotationValueProblem(name: string, value: string): string | undefined {
  return validators[name]?.(value);
}

/**
 * Which connections a pod's sidecar captures (docs/semantics.md, Sidecar traffic capture). The injector
 * writes the pod's `traffic.sidecar.istio.io/*` annotations into the redirection rules (istio-init's or
 * the CNI plugin's): an inbound port left out, or an outbound port or address range excluded, is not
 * redirected to the sidecar, so the connection goes straight between the application and the network,
 * with no mTLS, no routing and no authorization. ztunnel does not read these annotations.
 */
import { Annotation } from '../model/vocabulary.ts';
import { ipInBlock } from './authorization.ts';
import type { Workload } from './workloads.ts';

/** The ports of a list annotation (`80,443`); entries that are not ports are left out, as the injector refuses them. */
export function portList(value: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (value ?? '').split(',')) {
    const text = part.trim();
    if (/^[0-9]+$/.test(text) && Number(text) <= 65535) out.add(Number(text));
  }
  return out;
}

function ranges(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
}

/**
 * Whether the pod's sidecar takes inbound connections to this port: every port but `excludeInboundPorts`
 * when `includeInboundPorts` is `*` or unset, else only the ports it lists (the exclusions then unused).
 */
export function capturesInbound(w: Workload, port: number): boolean {
  const included = w.annotations[Annotation.IncludeInboundPorts];
  if (included !== undefined && included.trim() !== '*') return portList(included).has(port);
  return !portList(w.annotations[Annotation.ExcludeInboundPorts]).has(port);
}

/**
 * Whether the pod's sidecar takes an outbound connection to `ip:port`: not to an excluded port or
 * address range, and to an address `includeOutboundIPRanges` covers (every address when unset or `*`).
 */
export function capturesOutbound(w: Workload, ip: string, port: number): boolean {
  if (portList(w.annotations[Annotation.ExcludeOutboundPorts]).has(port)) return false;
  if (ranges(w.annotations[Annotation.ExcludeOutboundIpRanges]).some((r) => ipInBlock(ip, r))) return false;
  const included = w.annotations[Annotation.IncludeOutboundIpRanges];
  if (included === undefined || included.trim() === '*') return true;
  return ranges(included).some((r) => ipInBlock(ip, r));
}

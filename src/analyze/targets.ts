/**
 * The hosts a VirtualService's routes or a DestinationRule can name (docs/semantics.md, Route
 * destinations): each Service's and ServiceEntry's, with the namespaces it is exported to, and the lookup
 * of a host as seen by a configuration object of a namespace and exportTo. Shared by the rules that check
 * that a named host exists (KFM401 for routes, KFM422 for DestinationRules).
 */
import { addTo } from '../model/multimap.ts';
import { specOf } from '../model/specs.ts';
import { GroupKind } from '../model/vocabulary.ts';
import { exportedNamespaces, isExportedTo } from '../mesh/services.ts';
import { hostMatches } from '../mesh/security.ts';
import { resolveShortName } from '../mesh/virtual-services.ts';
import type { AnalyzeContext } from './rule.ts';

/** A host a route can reach: a Service's or a ServiceEntry's, with the namespaces it is exported to. */
export interface Target {
  host: string;
  /** `*`, or namespace names. */
  exportTo: string[];
  /** Port numbers, or undefined where any port reaches it (ExternalName). */
  ports: number[] | undefined;
}

/** Every target, and the lookup of a full host name from an object of `namespace` exported to `exportTo`. */
export interface Targets {
  all: readonly Target[];
  /**
   * The target a host names, visible where the object applies (its own namespace when it has no exportTo).
   * A wildcard host (`*.example.com`) finds a target it covers, as istiod applies it to those.
   */
  find(namespace: string, exportTo: readonly string[], host: string): Target | undefined;
}

export function destinationTargets(context: AnalyzeContext): Targets {
  const all = targetsOf(context);
  const exact = new Map<string, Target[]>();
  for (const t of all) if (!t.host.startsWith('*')) addTo(exact, t.host, t);
  const wildcards = all.filter((t) => t.host.startsWith('*'));
  return {
    all,
    find(namespace, exportTo, host) {
      const appliesIn = (ns: string) =>
        exportTo.length === 0 ? ns === namespace : isExportedTo([...exportTo], namespace, ns);
      const visible = (t: Target) =>
        t.exportTo.includes('*') || exportTo.includes('*') || t.exportTo.some(appliesIn);
      return (
        (exact.get(host) ?? []).find(visible) ??
        wildcards.find((t) => hostMatches(t.host, host) && visible(t)) ??
        (host.startsWith('*') ? all.find((t) => hostMatches(host, t.host) && visible(t)) : undefined)
      );
    },
  };
}

function targetsOf(context: AnalyzeContext): Target[] {
  const mesh = context.mesh();
  // ServiceEntries are read from their objects below (their hosts as written, even where a Service's
  // name took the registry's place).
  const services: Target[] = mesh.services
    .filter((s) => s.type !== 'ServiceEntry')
    .map((s) => ({
      host: s.hostname,
      exportTo: exportedNamespaces(s.exportTo, s.namespace),
      ports: s.type === 'ExternalName' ? undefined : s.ports.map((p) => p.port),
    }));
  const entries = context.snapshot.list(GroupKind.ServiceEntry).flatMap((entry) => {
    const ns = entry.metadata.namespace ?? 'default';
    const spec = specOf(entry, 'networking.istio.io/ServiceEntry');
    return (spec.hosts ?? []).map((h) => ({
      host: resolveShortName(h, ns, mesh.clusterDomain),
      exportTo: exportedNamespaces(spec.exportTo ?? [], ns),
      ports: (spec.ports ?? []).map((p) => p.number ?? 0),
    }));
  });
  return [...services, ...entries];
}

/**
 * KFM415: ServiceEntries that give one host and port different protocols where one namespace sees them
 * together (docs/semantics.md, ServiceEntries; exported to all, or to a namespace both name). Sidecars
 * build one listener and one cluster for a host and port: one protocol wins and the other entry's
 * traffic is handled as the wrong protocol.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { addTo } from '../../model/multimap.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { exportedNamespaces } from '../../mesh/services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

interface Claim {
  entry: KubeObject;
  protocol: string;
  /** `*`, or the namespaces the entry is exported to. */
  scope: string[];
}

export const conflictingServiceEntryProtocols: Rule = {
  code: 'KFM415',
  name: 'conflicting-service-entry-protocols',
  severity: Severity.Warning,
  description: 'ServiceEntries seen together give one host and port different protocols: one protocol wins',
  reads: [GroupKind.ServiceEntry],
  istio: [{ analyzer: 'serviceentry.ConflictingServiceEntryProtocolAnalyzer', code: 'IST0177' }],
  check(context: AnalyzeContext): Finding[] {
    const claims = new Map<string, Claim[]>();
    for (const entry of context.snapshot.list(GroupKind.ServiceEntry)) {
      const spec = specOf(entry, 'networking.istio.io/ServiceEntry');
      const own = entry.metadata.namespace ?? 'default';
      const scope = exportedNamespaces(spec.exportTo ?? [], own);
      for (const host of spec.hosts ?? [])
        for (const port of spec.ports ?? [])
          addTo(claims, `${host}:${port.number ?? 0}`, {
            entry,
            protocol: (port.protocol ?? '').toUpperCase(),
            scope,
          });
    }
    const together = (a: Claim, b: Claim) =>
      a.scope.includes('*') || b.scope.includes('*') || a.scope.some((ns) => b.scope.includes(ns));
    const conflicts = new Map<KubeObject, { key: string; with: Set<string>; protocols: Set<string> }>();
    for (const [key, list] of claims)
      for (const a of list)
        for (const b of list) {
          if (a.entry === b.entry || a.protocol === b.protocol || !together(a, b)) continue;
          const entry = conflicts.get(a.entry) ?? {
            key,
            with: new Set<string>(),
            protocols: new Set<string>(),
          };
          entry.with.add(`${b.entry.metadata.namespace ?? 'default'}/${b.entry.metadata.name ?? ''}`);
          entry.protocols.add(a.protocol || '(none)').add(b.protocol || '(none)');
          conflicts.set(a.entry, entry);
        }
    return [...conflicts].map(([entry, c]) =>
      findingOf(
        conflictingServiceEntryProtocols,
        context,
        entry,
        ['spec', 'ports'],
        `${c.key} is also declared by ServiceEntry ${[...c.with].sort().join(', ')} with another protocol (${[...c.protocols].sort().join(', ')}): sidecars that see both use one protocol for it`,
        {
          fix: 'declare one protocol for a host and port, or export the entries to different namespaces',
        },
      ),
    );
  },
};

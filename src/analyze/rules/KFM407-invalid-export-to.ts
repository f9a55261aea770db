/**
 * KFM407: an `exportTo` that Istio refuses or that names a namespace the platform does not have
 * (docs/semantics.md, exportTo). Istio's validation refuses duplicates, `*` beside other entries, `~` outside
 * a ServiceEntry or a Service's annotation, `~` beside other entries, and entries that are not `.`, `*` or
 * a namespace name: such an object is refused on apply, or ignored by istiod where no webhook checks it.
 * An entry naming a namespace that the input's Namespaces do not include exports to nobody.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf } from '../../model/specs.ts';
import { Annotation, GroupKind } from '../../model/vocabulary.ts';
import type { FieldPath } from '../../load/parse.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const dns1123Label = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export const invalidExportTo: Rule = {
  code: 'KFM407',
  name: 'invalid-export-to',
  severity: Severity.Error,
  description:
    'an exportTo that Istio refuses (duplicates, * or ~ beside other entries, not a namespace name) or that names a namespace the platform does not have',
  reads: [GroupKind.VirtualService, GroupKind.DestinationRule, GroupKind.ServiceEntry, GroupKind.Service],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    // Only an input that declares its Namespaces can say that one is missing.
    const namespaces = snapshot.holds('/Namespace')
      ? new Set(snapshot.list(GroupKind.Namespace).map((n) => n.metadata.name ?? ''))
      : undefined;
    const check = (object: KubeObject, entries: readonly string[], field: FieldPath, noneAllowed: boolean) =>
      problems(entries, object.metadata.namespace ?? 'default', noneAllowed, namespaces).map((problem) => ({
        ...findingOf(invalidExportTo, context, object, field, problem.message, {
          fix: problem.refused
            ? 'list `.`, `*` or namespace names, each once, with `*` alone'
            : 'correct the namespace name, or create the namespace',
        }),
        // A namespace that may yet be created is a warning; what Istio refuses is an error.
        ...(problem.refused ? {} : { severity: Severity.Warning }),
      }));
    const spec = <K extends 'VirtualService' | 'DestinationRule' | 'ServiceEntry'>(kind: K) =>
      snapshot.list(`networking.istio.io/${kind}`).flatMap((o) => {
        const exportTo = specOf(o, `networking.istio.io/${kind}`).exportTo ?? [];
        return check(o, exportTo, ['spec', 'exportTo'], kind === 'ServiceEntry');
      });
    const services = snapshot.list(GroupKind.Service).flatMap((s) => {
      const annotation = s.metadata.annotations?.[Annotation.ExportTo];
      if (annotation === undefined) return [];
      const entries = annotation.split(',').map((e) => e.trim());
      return check(s, entries, ['metadata', 'annotations', Annotation.ExportTo], true);
    });
    return [...spec('VirtualService'), ...spec('DestinationRule'), ...spec('ServiceEntry'), ...services];
  },
};

/** What is wrong with an exportTo list, one sentence each, and whether Istio refuses it. */
function problems(
  entries: readonly string[],
  own: string,
  noneAllowed: boolean,
  namespaces: ReadonlySet<string> | undefined,
): { message: string; refused: boolean }[] {
  const out: { message: string; refused: boolean }[] = [];
  const refused = (message: string) => out.push({ message, refused: true });
  const seen = new Set<string>();
  for (const entry of entries) {
    const key = entry === '.' ? own : entry;
    if (seen.has(key))
      refused(
        `exportTo lists ${key} twice${key === own && entries.includes('.') ? ' (. is its own namespace)' : ''}`,
      );
    seen.add(key);
    if (entry === '.' || entry === '*') continue;
    if (entry === '~') {
      if (!noneAllowed) refused('exportTo ~ (no one) is allowed only for ServiceEntries and Services');
      continue;
    }
    if (!dns1123Label.test(entry)) refused(`exportTo entry "${entry}" is not ., * or a namespace name`);
    else if (namespaces && !namespaces.has(entry))
      out.push({
        message: `exportTo names namespace ${entry}, which the platform does not have: that entry exports to no one`,
        refused: false,
      });
  }
  if (entries.length > 1 && entries.includes('*')) refused('exportTo lists * beside other entries');
  if (entries.length > 1 && entries.includes('~')) refused('exportTo lists ~ (no one) beside other entries');
  return out;
}

/**
 * Leaving findings out the way `istioctl analyze` does (docs/analyzers.md, "Suppressing findings"): an
 * object annotated `galley.istio.io/analyze-suppress: <code>[,<code>...]` (or `*`) gets no findings of
 * those codes, and a suppression `<code>=<resource>` drops a code on the resources its glob names. A code is
 * a kfmesh code (`KFM420`) or an istioctl one (`IST0133`), which drops the findings that carry it. The
 * resource is `<Kind> <namespace>/<name>` as istioctl names it (`<Kind> <name>` for cluster-scoped
 * objects), or `<Kind> <name>.<namespace>` as istioctl's help writes it; `*` matches any run of characters.
 */
import { istioCodes, type Finding } from '../model/finding.ts';
import { InputError } from '../model/errors.ts';
import { Annotation } from '../model/vocabulary.ts';
import type { Snapshot } from '../load/snapshot.ts';

/** One suppression: a code, and the resources (a glob) it is not reported on. */
export interface Suppression {
  code: string;
  resource: string;
}

/** Reads `<code>=<resource>` as `--suppress` takes it. */
export function parseSuppression(text: string): Suppression {
  const at = text.indexOf('=');
  const code = text.slice(0, at).trim();
  const resource = text.slice(at + 1).trim();
  if (at < 0 || !code || !resource || resource.includes('='))
    throw new InputError(
      { field: '--suppress' },
      `expected <code>=<resource>, as in "IST0102=Namespace frod" or "KFM420=AuthorizationPolicy kubeflow/*", got "${text}"`,
    );
  return { code, resource };
}

/** The findings left once the objects' annotations and the suppressions have dropped theirs. */
export function withoutSuppressed(
  findings: readonly Finding[],
  snapshot: Snapshot,
  suppressions: readonly Suppression[] = [],
): Finding[] {
  return findings.filter((f) => {
    const codes = [f.code, ...istioCodes(f)];
    const { group, kind, namespace, name } = f.object;
    const object = snapshot.get(`${group}/${kind}`, namespace || 'default', name);
    const annotated = object?.metadata.annotations?.[Annotation.AnalyzeSuppress];
    if (typeof annotated === 'string') {
      const listed = annotated.split(',').map((c) => c.trim());
      if (listed.includes('*') || codes.some((c) => listed.includes(c))) return false;
    }
    if (suppressions.length === 0) return true;
    const names = namespace
      ? [`${kind} ${namespace}/${name}`, `${kind} ${name}.${namespace}`]
      : [`${kind} ${name}`];
    return !suppressions.some((s) => codes.includes(s.code) && names.some((n) => globMatches(s.resource, n)));
  });
}

/**
 * Whether `text` is matched whole by `glob`, whose only special character is `*` (any run of characters).
 * By hand rather than as a regular expression: each `*` takes the earliest place its next literal part is
 * found, which is linear in the text for any glob (a pattern of many stars is no slower).
 */
export function globMatches(glob: string, text: string): boolean {
  const parts = glob.split('*');
  const first = parts[0] as string;
  if (parts.length === 1) return glob === text;
  const last = parts[parts.length - 1] as string;
  if (!text.startsWith(first) || text.length < first.length + last.length) return false;
  let at = first.length;
  const end = text.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = text.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return text.endsWith(last);
}

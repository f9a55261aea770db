/**
 * An analyzer rule: a stable code, a severity, and a check over the snapshot (and, where a finding needs
 * proof, the compiled mesh, which the rules share). Each rule lives in its own file named by its code.
 */
import type { Finding, PatchOperation, Severity } from '../model/finding.ts';
import type { FieldPath } from '../load/parse.ts';
import type { KubeObject } from '../model/object.ts';
import { refOf } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { Mesh } from '../mesh/compiled.ts';

/** What a rule reads: the snapshot, and the mesh compiled from it (once, on first use). */
export interface AnalyzeContext {
  snapshot: Snapshot;
  mesh(): Mesh;
}

/** One rule. */
export interface Rule {
  code: string;
  /** A short name, as in the rule's file name (`passthrough-for-mesh-clients`). */
  name: string;
  severity: Severity;
  /** One sentence: what the rule finds and why it matters. */
  description: string;
  check(context: AnalyzeContext): Finding[];
}

/** A finding of a rule about an object (and a field of it), located in its source file. */
export function findingOf(
  rule: Pick<Rule, 'code' | 'severity'>,
  context: AnalyzeContext,
  object: KubeObject,
  field: FieldPath | undefined,
  message: string,
  extra: { fix?: string; patch?: PatchOperation[]; evidence?: string[] } = {},
): Finding {
  const location = context.snapshot.locate(object, field ?? []);
  return {
    code: rule.code,
    severity: rule.severity,
    object: refOf(object),
    ...(field && field.length > 0 ? { field: fieldText(field) } : {}),
    ...(location ? { location } : {}),
    message,
    ...(extra.fix ? { fix: extra.fix } : {}),
    ...(extra.patch && extra.patch.length > 0 ? { patch: extra.patch } : {}),
    ...(extra.evidence && extra.evidence.length > 0 ? { evidence: extra.evidence } : {}),
  };
}

/** `spec.http[0].match` from a field path. */
export function fieldText(path: FieldPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

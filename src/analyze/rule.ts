/**
 * An analyzer rule: a stable code, a severity, and a check over the snapshot (and, where a finding needs
 * proof, the compiled mesh, which the rules share). Each rule lives in its own file named by its code.
 */
import type { Finding, IstioCounterpart, PatchOperation, Severity } from '../model/finding.ts';
import type { FieldPath } from '../load/parse.ts';
import type { KubeObject } from '../model/object.ts';
import { refOf } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import type { Mesh } from '../mesh/compiled.ts';

/** What a rule reads: the snapshot, and the mesh compiled from it (once, on first use). */
export interface AnalyzeContext {
  snapshot: Snapshot;
  mesh(): Mesh;
  /** The time certificates are judged at (the caller's clock, or `--now`); none: validity is not checked. */
  now?: Date;
}

/** One rule. */
export interface Rule {
  code: string;
  /** A short name, as in the rule's file name (`passthrough-for-mesh-clients`). */
  name: string;
  severity: Severity;
  /** One sentence: what the rule finds and why it matters. */
  description: string;
  /**
   * The kinds (`group/Kind`, the core group empty: `/Service`) whose objects the rule checks. `analyze`
   * runs the rule only when the input holds an object of one of them; without any, it has nothing to find.
   */
  reads: readonly string[];
  /**
   * What `istioctl analyze` reports for the problems this rule finds, where it reports them at all. A
   * finding carries the ones it corresponds to (the rule's only one, unless the rule names them).
   */
  istio?: readonly IstioCounterpart[];
  check(context: AnalyzeContext): Finding[];
}

/** A finding of a rule about an object (and a field of it), located in its source file. */
export function findingOf(
  rule: Pick<Rule, 'code' | 'severity' | 'istio'>,
  context: AnalyzeContext,
  object: KubeObject,
  field: FieldPath | undefined,
  message: string,
  extra: {
    fix?: string;
    patch?: PatchOperation[];
    evidence?: string[];
    istio?: IstioCounterpart | readonly IstioCounterpart[];
  } = {},
): Finding {
  const location = context.snapshot.locate(object, field ?? []);
  const named = extra.istio ?? (rule.istio?.length === 1 ? rule.istio : []);
  const istio = Array.isArray(named) ? [...named] : [named as IstioCounterpart];
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
    ...(istio.length > 0 ? { istio } : {}),
  };
}

/** `spec.http[0].match` from a field path. */
function fieldText(path: FieldPath): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

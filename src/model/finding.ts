/** Findings: things a person should know about their configuration, with a stable code and a suggested fix. */
import type { ObjectRef } from './object.ts';
import type { SourceLocation } from './errors.ts';

/** How much a finding matters. */
export const Severity = { Error: 'error', Warning: 'warning', Info: 'info' } as const;
export type Severity = (typeof Severity)[keyof typeof Severity];

/** One finding. */
export interface Finding {
  code: string;
  severity: Severity;
  object: ObjectRef;
  field?: string;
  location?: SourceLocation;
  message: string;
  fix?: string;
  /**
   * The fix as a JSON Patch (RFC 6902) of the object, where one is obvious: `kubectl patch --type=json`
   * applies it as it is.
   */
  patch?: PatchOperation[];
  /** What proves it (for example the hops of a trace), one line each. */
  evidence?: string[];
  /**
   * The messages `istioctl analyze` gives for the same problem, where it has any: usually one; more where
   * two of its analyzers report the same object (a Gateway that selects no pod: IST0101 from both the
   * port and the secret analyzer).
   */
  istio?: IstioCounterpart[];
  /** Observed traffic the finding is about: the edge between two nodes of the console's graph. */
  traffic?: { source: string; target: string };
}

/** An analyzer of `istioctl analyze` and the message code it reports (`IST0109`). */
export interface IstioCounterpart {
  /** The analyzer's name as Istio declares it (`virtualservice.ConflictingMeshGatewayHostsAnalyzer`). */
  analyzer: string;
  code: string;
}

/** One operation of a JSON Patch (RFC 6902); kfmesh writes only `add` and `replace`. */
export interface PatchOperation {
  op: 'add' | 'replace';
  /** A JSON Pointer (RFC 6901); `/-` appends to an array. */
  path: string;
  value: unknown;
}

/** A JSON Pointer from a field path, with `~` and `/` escaped. */
export function pointerOf(path: readonly (string | number)[]): string {
  return path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/** The IST codes of a finding's counterparts, each once (two analyzers may give the same code). */
export function istioCodes(finding: Finding): string[] {
  return [...new Set((finding.istio ?? []).map((c) => c.code))];
}

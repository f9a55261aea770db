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
  /** The message `istioctl analyze` gives for the same problem, when it has one. */
  istio?: IstioCounterpart;
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

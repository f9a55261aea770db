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
  /** What proves it (for example the hops of a trace), one line each. */
  evidence?: string[];
}

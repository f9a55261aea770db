/** Problems in the user's input, as values that carry where they are. */
import { describeRef, type ObjectRef } from './object.ts';

/** A place in an input file (line and column are 1-based). */
export interface SourceLocation {
  file: string;
  line?: number;
  column?: number;
}

/** What a problem is about: where, which object, which field. */
export interface ProblemContext {
  location?: SourceLocation;
  object?: ObjectRef;
  /** A field path such as `spec.predictor` or `data.ingress: enableGatewayApi`. */
  field?: string;
}

/** Formats `file:line:col` (as much of it as is known). */
export function formatLocation(loc: SourceLocation): string {
  let text = loc.file;
  if (loc.line !== undefined) {
    text += `:${loc.line}`;
    if (loc.column !== undefined) text += `:${loc.column}`;
  }
  return text;
}

/** One line a person can act on: `file:line:col: Kind ns/name: field: message`. */
export function formatProblem(context: ProblemContext, message: string): string {
  const parts: string[] = [];
  if (context.location) parts.push(formatLocation(context.location));
  if (context.object) parts.push(describeRef(context.object));
  if (context.field) parts.push(context.field);
  parts.push(message);
  return parts.join(': ');
}

/**
 * Bad input: the whole run is refused (exit code 2). Thrown by loaders and configuration readers;
 * the message already names the file, position, object and field that are known.
 */
export class InputError extends Error {
  readonly context: ProblemContext;
  readonly detail: string;

  constructor(context: ProblemContext, detail: string) {
    super(formatProblem(context, detail));
    this.name = 'InputError';
    this.context = context;
    this.detail = detail;
  }
}

/** A problem with one object: that object is skipped, the others still render (exit code 1). */
export interface ObjectProblem {
  context: ProblemContext;
  message: string;
}

/** Formats an object problem as one line. */
export function formatObjectProblem(problem: ObjectProblem): string {
  return formatProblem(problem.context, problem.message);
}

/** What a thrown value says: an Error's message, or the value as text (anything can be thrown). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Where the simulator compares a name by less than the whole of it (docs/semantics.md, Namespaces alike
 * up to renaming). Everywhere else `mesh/` compares names (namespaces, objects, service accounts, hosts,
 * principals, header values) whole, by equality. The equivalence check's symmetry (`verify/symmetry.ts`)
 * relies on this list being complete: it reads it from here, so a matcher added to `mesh/` that cuts into
 * names belongs here too.
 *
 * - a wildcard: a `*` in a host, a principal, a namespace, a path or a value of an AuthorizationPolicy,
 *   a Sidecar's or Gateway's host list, a ServiceEntry host (`*` first or last, or alone);
 * - a prefix: a StringMatch's `prefix` (VirtualService URI, headers, query), Gateway API `PathPrefix`;
 * - a regular expression: a StringMatch's `regex`, Gateway API `RegularExpression`; it may tell names
 *   apart by any part of them.
 */
import { isPlainObject } from '../model/object.ts';

/** The character that makes a string a wildcard pattern. */
export const Wildcard = '*';

/** Does this field (by its key and the mapping it is in) hold a prefix the simulator matches names by? */
export function isPrefixField(key: string, parent: Readonly<Record<string, unknown>> | undefined): boolean {
  return key === 'prefix' || (key === 'value' && parent?.['type'] === 'PathPrefix');
}

/** Does this mapping hold a regular expression the simulator matches by (at its own level)? */
function holdsRegularExpression(value: Readonly<Record<string, unknown>>): boolean {
  return typeof value['regex'] === 'string' || value['type'] === 'RegularExpression';
}

/** Does any mapping in a configuration tree hold a regular expression? */
export function anyRegularExpression(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(anyRegularExpression);
  return (
    isPlainObject(value) && (holdsRegularExpression(value) || Object.values(value).some(anyRegularExpression))
  );
}

/**
 * How a plain YAML 1.1 scalar resolves (`on` is true, `0755` is 493, `~` is null), as Kubernetes reads
 * manifests (docs/semantics.md, "Reading manifests"). The rules are the `yaml` library's own YAML 1.1
 * schema, taken from it rather than restated, so the fast reader and writer (`load/parse.ts`,
 * `serialize.ts`) resolve and quote exactly as the full parser does.
 */
import { Document, isScalar } from 'yaml';

interface ScalarRule {
  tag: string;
  test: RegExp;
  resolve(source: string, onError: (message: string) => void, options: object): unknown;
  /** `true` for every plain scalar; `'key'` only at a mapping key (the merge key `<<`). */
  default: boolean | 'key';
}

const schema = new Document(null, { version: '1.1' }).schema;
const options = new Document(null, { version: '1.1' }).options;
const stringTag = 'tag:yaml.org,2002:str';

/** The rules tried on a plain scalar, in the order the parser tries them (the first match wins). */
const rules: readonly ScalarRule[] = (schema.tags as unknown as ScalarRule[]).filter(
  (tag) => tag.test instanceof RegExp && tag.default !== false && tag.tag !== stringTag,
);
const valueRules = rules.filter((rule) => rule.default === true);

/** A value a plain scalar cannot be read as without the full parser's help (it reported a problem). */
export class UnresolvedScalar extends Error {}

/**
 * The value of a plain scalar in a value position (not a key): a string when no rule matches. Throws
 * UnresolvedScalar where the parser would report a problem with it, so the caller can let the full parser
 * say what it is.
 */
export function resolvePlain(source: string): unknown {
  const rule = valueRules.find((r) => r.test.test(source));
  if (!rule) return source;
  let problem: string | undefined;
  const value = rule.resolve(source, (message) => (problem = message), options);
  if (problem !== undefined) throw new UnresolvedScalar(problem);
  return isScalar(value) ? value.value : value;
}

/** Whether a plain scalar could be read as something other than this string (so it must be quoted). */
export function readsAsOtherThanString(text: string): boolean {
  return rules.some((rule) => rule.test.test(text));
}

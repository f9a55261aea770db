/**
 * How a plain YAML 1.1 scalar resolves (`on` is true, `0755` is 493, `~` is null), as Kubernetes reads
 * manifests (docs/semantics.md, "Reading manifests"). The rules are the `yaml` library's own YAML 1.1
 * schema, taken from it rather than restated, so the fast reader and writer (`load/parse.ts`,
 * `serialize.ts`) resolve and quote exactly as the full parser does.
 */
import { Document, isScalar, type ScalarTag, type Tags } from 'yaml';

interface ScalarRule {
  tag: string;
  test: RegExp;
  resolve(source: string, onError: (message: string) => void, options: object): unknown;
  /** `true` for every plain scalar; `'key'` only at a mapping key (the merge key `<<`). */
  default: boolean | 'key';
}

/**
 * The YAML 1.1 tags as Kubernetes applies them, where they differ from the library's (docs/semantics.md,
 * Reading manifests): its float rule takes a scalar with no digit (`.`, `-.`) as NaN, where go-yaml finds
 * no number and keeps the string (`exportTo: [.]` is the namespace `.`); and a plain timestamp
 * (`creationTimestamp: 2026-01-01T00:00:05Z`) stays the string it is written as, since go-yaml gives a
 * timestamp read into an untyped value as its text.
 */
export function kubernetesYamlTags(tags: Tags): Tags {
  return tags.map((tag) => {
    if (typeof tag !== 'object' || ('collection' in tag && tag.collection)) return tag;
    const scalar = tag as ScalarTag;
    if (scalar.tag === 'tag:yaml.org,2002:timestamp') return { ...scalar, default: false };
    if (
      scalar.tag === 'tag:yaml.org,2002:float' &&
      scalar.test?.source === '^[-+]?(?:[0-9][0-9_]*)?\\.[0-9_]*$'
    )
      return { ...scalar, test: /^[-+]?(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9_]*[0-9][0-9_]*)$/ };
    return tag;
  });
}

/** The options Kubernetes' YAML 1.1 is read with, for the `yaml` library. */
export const yaml11Options = { version: '1.1', customTags: kubernetesYamlTags } as const;

const schema = new Document(null, yaml11Options).schema;
const options = new Document(null, yaml11Options).options;
const stringTag = 'tag:yaml.org,2002:str';

/** The rules a schema tries on a plain scalar, in the order it tries them (the first match wins). */
function plainRules(tags: unknown): readonly ScalarRule[] {
  return (tags as ScalarRule[]).filter(
    (tag) => tag.test instanceof RegExp && tag.default !== false && tag.tag !== stringTag,
  );
}

const valueRules = plainRules(schema.tags).filter((rule) => rule.default === true);
/**
 * What any YAML 1.1 reader may take as other than a string: the library's own rules, a superset of
 * Kubernetes' (a timestamp is quoted on output, though Kubernetes would keep it a string).
 */
const quotingRules = plainRules(new Document(null, { version: '1.1' }).schema.tags);

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
  return quotingRules.some((rule) => rule.test.test(text));
}

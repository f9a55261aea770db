/**
 * YAML, in one place: the only module that imports a YAML library. kfmesh reads YAML two ways and writes
 * it one way (docs/semantics.md, Reading manifests):
 *
 * - the full parser (the `yaml` library), which keeps every node's position, for errors, findings and
 *   whatever the fast reader declines;
 * - the fast reader (js-yaml), several times faster, with the same YAML 1.1 scalar rules;
 * - the writer (`yaml-writer.ts`), which asks the library only for the strings it must quote.
 *
 * How a plain YAML 1.1 scalar resolves (`on` is true, `0755` is 493, `~` is null) is the `yaml` library's
 * own YAML 1.1 schema, taken from it rather than restated, so the fast reader and the writer resolve and
 * quote exactly as the full parser does.
 *
 * What the fast reader declines, and the full parser then reads:
 *
 * | what | where decided | why |
 * |---|---|---|
 * | a byte-order mark, a directive (`%YAML`), a document end marker (`...`) | the whole input (`documents.ts`) | js-yaml and the parser split documents differently |
 * | an alias to an anchor (`*a` naming `&a`) | the document (`documents.ts`) | the parser limits how far aliases expand |
 * | a merge key (`<<`) | the document | YAML 1.1 merges are the parser's |
 * | a document js-yaml refuses | the document (`readFast`) | the parser says where and why |
 * | a key the two read apart: null (`~:`) or a date | the document (`documents.ts`) | js-yaml makes them other strings |
 * | a scalar the parser would report a problem with | the scalar (`resolvePlain`) | the parser says what it is |
 */
import { Document, isScalar, type ScalarTag, type Tags } from 'yaml';
import { FAILSAFE_SCHEMA, Type, load } from 'js-yaml';

export {
  Document,
  LineCounter,
  isMap,
  isNode,
  isScalar,
  isSeq,
  parse as parseYaml,
  parseAllDocuments,
  parseDocument,
  stringify as stringifyYaml,
  visit,
} from 'yaml';

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
function kubernetesYamlTags(tags: Tags): Tags {
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

/**
 * The options Kubernetes' YAML 1.1 is read with, for the `yaml` library: its tags, and `logLevel: 'error'`,
 * which keeps the library from writing Node warnings of its own to the user's standard error (a
 * collection used as a key is read as its text, as the fast reader reads it).
 */
export const yaml11Options = { version: '1.1', customTags: kubernetesYamlTags, logLevel: 'error' } as const;

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
class UnresolvedScalar extends Error {}

/**
 * The value of a plain scalar in a value position (not a key): a string when no rule matches. Throws
 * UnresolvedScalar where the parser would report a problem with it, so the caller can let the full parser
 * say what it is.
 */
function resolvePlain(source: string): unknown {
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

const carriedByJson = (value: unknown): boolean =>
  !(value instanceof Date) &&
  (typeof value !== 'number' || (Number.isFinite(value) && !Object.is(value, -0)));

/** A fast reader's answer for one document: its value, and whether every scalar in it is one JSON carries. */
export interface FastRead {
  value: unknown;
  /** Whether a plain scalar read as a date, `.nan`, `.inf` or `-0` (the value cannot go through JSON). */
  notJson: boolean;
}

/**
 * A fast reader (js-yaml with the YAML 1.1 scalar rules above), with its own state: one per input, so
 * that nothing is shared between calls. Its `read` gives undefined for a document js-yaml refuses.
 */
export function fastReader(): { read(text: string): FastRead | undefined } {
  let notJson = false;
  const plainScalars = new Type('tag:kfmesh.io,2026:yaml-1.1-plain', {
    kind: 'scalar',
    // A scalar no rule matches stays the string js-yaml read.
    resolve: (source: string | null) => source === null || resolvePlain(source) !== source,
    construct: (source: string | null) => {
      if (source === null) return null;
      const value = resolvePlain(source);
      if (!carriedByJson(value)) notJson = true;
      return value;
    },
  });
  const schema = FAILSAFE_SCHEMA.extend({ implicit: [plainScalars] });
  return {
    read(text: string): FastRead | undefined {
      notJson = false;
      try {
        const value: unknown = load(text, { schema });
        return { value, notJson };
      } catch {
        return undefined;
      }
    },
  };
}

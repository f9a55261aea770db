/**
 * Every regular expression of Istio's and the Gateway API's configuration goes through here
 * (docs/semantics.md, Regular expressions): VirtualService string matches (`uri`, `scheme`, `method`,
 * `authority`, headers, query parameters), `rewrite.uriRegexRewrite`, HTTPRoute `RegularExpression`
 * matches. Envoy evaluates them with RE2, which runs in time linear in the input and has its own syntax
 * (POSIX classes, `(?P<name>…)`, inline flags, `\z`, Unicode classes); JavaScript's `RegExp` backtracks
 * (a tenant's `(/?a+)+$` takes seconds per character) and reads that syntax otherwise. So patterns are
 * compiled with `re2js`, a pure-JavaScript port of RE2 (chosen by measurement, docs/benchmarks.md): linear
 * time, RE2's syntax, and no native code, so it runs wherever kfmesh's core does.
 *
 * Each pattern is compiled once and kept; a pattern that does not compile is remembered as such.
 */
import { RE2JS } from 're2js';

const utf8 = new TextEncoder();

/** Istio's validation refuses a regex longer than this many bytes (its stand-in for Envoy's program-size limit). */
export const maxRegexBytes = 1024;

type Compiled = RE2JS | { error: string };

const cache = new Map<string, Compiled>();

function compiled(pattern: string): Compiled {
  let entry = cache.get(pattern);
  if (entry === undefined) {
    try {
      entry = RE2JS.compile(pattern);
    } catch (error) {
      entry = { error: error instanceof Error ? error.message : String(error) };
    }
    cache.set(pattern, entry);
  }
  return entry;
}

/** Why a pattern or a rewrite cannot run. */
export interface PatternProblem {
  message: string;
  /** Istio's validation (Go's regexp) takes it; Envoy's RE2 refuses it when it loads the route. */
  envoyOnly?: true;
}

/**
 * Why a pattern cannot run, or undefined when it can: empty, longer than `maxRegexBytes` bytes, or not
 * RE2 syntax (the message is RE2's, e.g. `missing closing ]: `[``). A name given to two groups is the one
 * refusal of RE2 that Istio's validation (Go's regexp) does not share.
 */
export function regexProblem(pattern: string): PatternProblem | undefined {
  if (pattern === '') return { message: 'the regex is empty' };
  const bytes = utf8.encode(pattern).length;
  if (bytes > maxRegexBytes)
    return { message: `the regex is ${bytes} bytes long; Istio takes at most ${maxRegexBytes}` };
  const c = compiled(pattern);
  if (!('error' in c)) return undefined;
  const message = `not an RE2 regex: ${c.error}`;
  return c.error.includes('duplicate capture group name') ? { message, envoyOnly: true } : { message };
}

/**
 * Does the pattern match the whole value, as Envoy's `safe_regex` does? A pattern that does not compile
 * matches nothing (Istio refuses it on apply; the analyzer reports one found in a cluster).
 */
export function fullMatch(pattern: string, value: string): boolean {
  const c = compiled(pattern);
  return !('error' in c) && c.matches(value);
}

/** A substitution read once: literal text and group numbers, in order; undefined when RE2 refuses it. */
type Substitution = readonly (string | number)[];

const substitutions = new Map<string, Substitution | null>();

/** RE2's rewrite syntax: `\0`–`\9` name groups, `\\` is a backslash, any other backslash is refused. */
function substitution(text: string): Substitution | undefined {
  let parts = substitutions.get(text);
  if (parts === undefined) {
    const out: (string | number)[] = [];
    let literal = '';
    parts = out;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c !== '\\') {
        literal += c;
        continue;
      }
      const next = text[++i];
      if (next === '\\') literal += '\\';
      else if (next !== undefined && next >= '0' && next <= '9') {
        out.push(literal, Number(next));
        literal = '';
      } else {
        parts = null;
        break;
      }
    }
    if (parts) out.push(literal);
    substitutions.set(text, parts);
  }
  return parts ?? undefined;
}

/** Why Envoy's RE2 would not rewrite with this pattern and substitution, or undefined when it would. */
export function rewriteProblem(pattern: string, text: string): PatternProblem | undefined {
  const c = compiled(pattern);
  if ('error' in c) return regexProblem(pattern);
  const parts = substitution(text);
  if (!parts)
    return {
      message: 'the substitution has a backslash that is neither \\\\ nor \\0-\\9',
      envoyOnly: true,
    };
  const highest = Math.max(0, ...parts.filter((p): p is number => typeof p === 'number'));
  const groups = c.groupCount();
  if (highest > groups)
    return {
      message: `the substitution names group \\${highest}, the regex has ${groups} group${groups === 1 ? '' : 's'}`,
      envoyOnly: true,
    };
  return undefined;
}

/**
 * Envoy's `regex_rewrite`: every non-overlapping match of the pattern in the value replaced by the
 * substitution, its `\N` the match's groups (an unmatched group is empty). When RE2 would refuse the
 * rewrite (`rewriteProblem`) the value is left as it is, as Envoy's replace does.
 */
export function replaceEvery(pattern: string, text: string, value: string): string {
  const re = compiled(pattern);
  const parts = substitution(text);
  if ('error' in re || !parts || rewriteProblem(pattern, text) !== undefined) return value;
  const m = re.matcher(value);
  let out = '';
  let copied = 0;
  let lastEnd = -1;
  let from = 0;
  while (from <= value.length && m.find(from)) {
    const start = m.start();
    const end = m.end();
    // RE2 takes no empty match where the previous match ended: it steps over one character.
    if (start === end && start === lastEnd) {
      from = start + ((value.codePointAt(start) ?? 0) > 0xffff ? 2 : 1);
      continue;
    }
    out += value.slice(copied, start);
    for (const p of parts) out += typeof p === 'number' ? (m.group(p) ?? '') : p;
    copied = lastEnd = from = end;
  }
  return out + value.slice(copied);
}

/**
 * kfmesh's regular expressions (mesh/regex.ts) judged by a reference RE2: Go's `regexp`, RE2's syntax and
 * semantics and the engine Istio's validation compiles patterns with, run by the oracle (`oracle regex`).
 * Patterns are drawn from RE2's grammar (literals, classes with POSIX and Unicode names, Perl classes,
 * anchors including `\A` and `\z`, plain, non-capturing and named groups, inline flags and flag groups,
 * greedy and lazy repetitions with counts, alternation) and from raw characters, so that about a fifth do
 * not compile; inputs from the same alphabet; substitutions from RE2's rewrite syntax with refused forms.
 * For every case both sides must agree on whether the pattern compiles, on the full match, and on the
 * text after every match is replaced (or that the rewrite is refused). The seed is printed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { fullMatch, regexProblem, replaceEvery, rewriteProblem } from '../../src/mesh/regex.ts';
import { oracleBinary, oracleTestOptions } from './istio-oracle.ts';

const seed = Number(process.env['KFMESH_PROPERTY_SEED'] ?? 20261207);
const runs = Number(process.env['KFMESH_REGEX_RUNS'] ?? 3000);

const alphabet = ['a', 'b', 'A', '/', '-', '.', '1', '9', ' ', '\n', 'é', 'λ', '😀', '_'];
const char = fc.constantFrom(...alphabet);
const literal = fc.oneof(
  char.map((c) => (c === '.' ? '\\.' : c === '\n' ? '\\n' : c)),
  fc.constantFrom('\\/', '\\-', '\\x41', '\\x{3bb}', '\\Qa.b\\E'),
);
const classItem = fc.oneof(
  fc.constantFrom('a-c', 'A-Z', '0-9', '/', '-', 'λ', '[:digit:]', '[:^alpha:]', '[:word:]', '\\d', '\\pL'),
  char,
);
const charClass = fc
  .tuple(fc.boolean(), fc.array(classItem, { minLength: 1, maxLength: 3 }))
  .map(([negated, items]) => `[${negated ? '^' : ''}${items.join('')}]`);
const atom = fc.oneof(
  { weight: 4, arbitrary: literal },
  { weight: 2, arbitrary: charClass },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '.',
      '\\d',
      '\\w',
      '\\s',
      '\\D',
      '\\W',
      '\\pL',
      '\\p{Greek}',
      '\\PN',
      '\\b',
      '\\B',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('^', '$', '\\A', '\\z') },
);
const quantifier = fc.constantFrom(
  '',
  '',
  '',
  '*',
  '+',
  '?',
  '*?',
  '+?',
  '??',
  '{2}',
  '{1,3}',
  '{2,}',
  '{0,1}?',
);
const { pattern } = fc.letrec<{ pattern: string; term: string; group: string }>((tie) => ({
  pattern: fc.array(tie('term'), { minLength: 1, maxLength: 3 }).chain((first) =>
    fc.oneof(
      fc.constant(first.join('')),
      tie('term').map((other) => `${first.join('')}|${other}`),
    ),
  ),
  term: fc.oneof(
    {
      weight: 5,
      arbitrary: fc.tuple(atom, quantifier).map(([a, q]) => (/^[\^$]|\\[Azb B]/.test(a) ? a : a + q)),
    },
    { weight: 1, arbitrary: fc.tuple(tie('group'), quantifier).map(([g, q]) => g + q) },
  ),
  group: fc
    .tuple(
      fc.constantFrom('(', '(?:', '(?P<name>', '(?<n2>', '(?i:', '(?s:', '(?i)', '(?m)', '(?U)'),
      tie('pattern'),
    )
    .map(([open, inner]) => (open.endsWith(')') ? `(?:${open}${inner})` : `${open}${inner})`)),
}));
const broken = fc
  .array(
    fc.constantFrom(
      '(',
      ')',
      '[',
      ']',
      '*',
      '+',
      '?',
      '{',
      '}',
      '\\',
      'a',
      ':',
      '<',
      'P',
      '^',
      '|',
      '8',
      ',',
    ),
    {
      minLength: 1,
      maxLength: 6,
    },
  )
  .map((cs) => cs.join(''));
const input = fc.array(char, { maxLength: 8 }).map((cs) => cs.join(''));
const substitution = fc
  .array(fc.constantFrom('x', '/', '\\0', '\\1', '\\2', '\\\\', '$1', '$', '\\q', 'λ'), { maxLength: 3 })
  .map((parts) => parts.join(''));
/** Each named group its own name: Go's regexp accepts a name used twice, RE2 (Envoy's engine) refuses it. */
function uniqueNames(p: string): string {
  let k = 0;
  return p.replace(/\(\?(P?)<\w+>/g, (_, P: string) => `(?${P}<g${k++}>`);
}
const regexCase = fc.record({
  pattern: fc.oneof({ weight: 4, arbitrary: pattern.map(uniqueNames) }, { weight: 1, arbitrary: broken }),
  input,
  substitution,
});

interface Answer {
  error?: string;
  match: boolean;
  replaced?: string;
}

function askGo(cases: readonly { pattern: string; input: string; substitution: string }[]): Answer[] {
  const binary = oracleBinary();
  if (!binary.path) throw new Error(binary.missing);
  const run = spawnSync(binary.path, ['regex'], {
    input: JSON.stringify(cases),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (run.status !== 0) throw new Error(`the oracle failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Answer[];
}

describe('regexes judged by RE2 (Go regexp, through the oracle)', oracleTestOptions(), () => {
  test(`${runs} drawn patterns, inputs and substitutions (seed ${seed})`, () => {
    const cases = fc.sample(regexCase, { seed, numRuns: runs });
    const go = askGo(cases);
    const differ: string[] = [];
    let refused = 0;
    let matched = 0;
    for (const [i, c] of cases.entries()) {
      const reference = go[i] ?? { match: false, error: 'no answer' };
      const problem = regexProblem(c.pattern);
      const theirs = {
        compiles: reference.error === undefined,
        match: reference.match,
        replaced: reference.replaced ?? null,
      };
      const ours = {
        compiles: problem === undefined,
        match: fullMatch(c.pattern, c.input),
        replaced:
          problem === undefined && rewriteProblem(c.pattern, c.substitution) === undefined
            ? replaceEvery(c.pattern, c.substitution, c.input)
            : null,
      };
      if (!theirs.compiles) refused++;
      if (theirs.match) matched++;
      if (JSON.stringify(ours) !== JSON.stringify(theirs))
        differ.push(`${JSON.stringify(c)}: RE2 ${JSON.stringify(theirs)}, kfmesh ${JSON.stringify(ours)}`);
    }
    console.log(
      `${cases.length} cases (seed ${seed}): ${refused} patterns refused, ${matched} full matches, ${differ.length} differ`,
    );
    assert.deepEqual(differ.slice(0, 20), []);
    assert.ok(refused > cases.length / 20 && matched > cases.length / 20, 'both outcomes are drawn');
  });
});

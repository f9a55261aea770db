/** The documentation that is generated from code matches the code, and the README keeps to its size. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { rules } from '../../src/analyze/analyze.ts';
import { analyzerCatalog, exampleFindings, type RuleExample } from '../../src/analyze/catalog.ts';
import { projectRoot } from '../conformance/cases.ts';

const folder = join(projectRoot, 'examples/rules');
const examples = new Map<string, RuleExample>(
  readdirSync(folder)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => [
      f.replace(/\.yaml$/, ''),
      { file: `examples/rules/${f}`, text: readFileSync(join(folder, f), 'utf8') },
    ]),
);

test('docs/analyzers.md is the rule registry as it is (npm run docs writes it)', () => {
  const file = readFileSync(join(projectRoot, 'docs/analyzers.md'), 'utf8');
  assert.equal(file, analyzerCatalog(examples), 'docs/analyzers.md is stale: run npm run docs');
});

test("every rule has an example, and the example gives that rule's finding", () => {
  const codes = new Set(rules.map((r) => r.code));
  assert.deepEqual(
    [...examples.keys()].filter((c) => !codes.has(c)),
    [],
    'examples of no rule',
  );
  const silent = rules
    .filter((r) => {
      const example = examples.get(r.code);
      return !example || exampleFindings(r.code, example).length === 0;
    })
    .map((r) => r.code);
  assert.deepEqual(silent, [], 'rules without an example that finds something');
});

test('the README stays an overview: at most 130 lines', () => {
  const lines = readFileSync(join(projectRoot, 'README.md'), 'utf8').split('\n').length;
  assert.ok(lines <= 131, `README.md has ${lines} lines`);
});

/** Every file under `dir` whose name ends in one of `extensions` (not dependencies, builds or stored outputs). */
function sourceFiles(dir: string, extensions: readonly string[]): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory())
      return ['node_modules', 'testdata', 'dist'].includes(e.name) ? [] : sourceFiles(path, extensions);
    return extensions.some((x) => e.name.endsWith(x)) ? [path] : [];
  });
}

test('every citation of docs/semantics.md names a heading, item or version entry it has', () => {
  const doc = readFileSync(join(projectRoot, 'docs/semantics.md'), 'utf8');
  // What a citation may name: a heading, a list item's bold label (`- **Name.**`), or a version entry (V7).
  const targets = [
    ...[...doc.matchAll(/^#{2,4} (.+)$/gm)].map((m) => (m[1] ?? '').trim()),
    ...[...doc.matchAll(/^- \*\*([^*]+?)\.?\*\*/gm)].map((m) => m[1] ?? ''),
  ].sort((a, b) => b.length - a.length);
  const versions = new Set([...doc.matchAll(/\b(V\d+)\b/g)].map((m) => m[1]));
  const broken: string[] = [];
  let citations = 0;
  for (const dir of ['src', 'test', 'oracle', 'scripts'])
    for (const file of sourceFiles(join(projectRoot, dir), ['.ts', '.go', '.mjs'])) {
      if (file.endsWith('docs.test.ts')) continue; // this test's own words about citations
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/docs\/semantics\.md/g)) {
        citations++;
        // What follows, with comment continuations joined: `, Name`, ` (Name; ...)`, `: Name`, or nothing.
        const rest = text
          .slice(m.index + m[0].length, m.index + 300)
          .replace(/\n\s*(\*|\/\/)\s*/g, ' ')
          .replace(/^\s*[,:(]?\s*["`]?/, '');
        if (rest === '' || /^[.)`'\s]/.test(rest)) continue;
        const named = targets.some(
          (t) => rest.startsWith(t) && /^([)\],;:."`?]| and |$)/.test(rest.slice(t.length)),
        );
        const version = /^(V\d+)/.exec(rest)?.[1];
        if (!named && !(version && versions.has(version)))
          broken.push(`${file.slice(projectRoot.length + 1)}: ${rest.slice(0, 60)}`);
      }
    }
  assert.ok(citations > 100, `only ${citations} citations found: is the scan looking in the right place?`);
  assert.deepEqual(broken, [], 'citations of sections docs/semantics.md does not have');
});

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

test('the README stays an overview: at most 200 lines', () => {
  const lines = readFileSync(join(projectRoot, 'README.md'), 'utf8').split('\n').length;
  assert.ok(lines <= 201, `README.md has ${lines} lines`);
});

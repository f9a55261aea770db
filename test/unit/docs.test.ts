/** The documentation that is generated from code matches the code, and the README keeps to its size. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { analyzerCatalog } from '../../src/analyze/catalog.ts';
import { projectRoot } from '../conformance/cases.ts';

test('docs/analyzers.md is the rule registry as it is (npm run docs writes it)', () => {
  const file = readFileSync(join(projectRoot, 'docs/analyzers.md'), 'utf8');
  assert.equal(file, analyzerCatalog(), 'docs/analyzers.md is stale: run npm run docs');
});

test('the README stays an overview: at most 200 lines', () => {
  const lines = readFileSync(join(projectRoot, 'README.md'), 'utf8').split('\n').length;
  assert.ok(lines <= 201, `README.md has ${lines} lines`);
});

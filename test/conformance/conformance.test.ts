/** Runs every conformance case, from the project's copies and ../shared/conformance, through the real CLI. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import { discoverCases, renderCaseFailures, traceCaseFailures } from './cases.ts';

const cases = discoverCases();

describe('conformance', () => {
  test('cases are found', () => {
    assert.ok(cases.length >= 21, `found ${cases.length} cases`);
  });

  for (const c of cases) {
    const kind = c.body['kind'];
    const name = `${c.label} — ${String(c.body['name'] ?? '')}`;
    if (kind === 'RenderCase') {
      test(name, () => {
        const input = writeManifest((c.body['input'] ?? []) as unknown[]);
        const args = ((c.body['args'] ?? []) as unknown[]).map(String);
        const run = runKfmesh(['render', input, '-o', 'json', ...args]);
        const failures = renderCaseFailures((c.body['expect'] ?? {}) as Record<string, unknown>, run);
        assert.deepEqual(failures, [], `${c.path}\n${failures.join('\n')}`);
      });
    } else if (kind === 'TraceCase') {
      test(name, (t) => {
        const input = writeManifest((c.body['input'] ?? []) as unknown[]);
        const args = ((c.body['args'] ?? []) as unknown[]).map(String);
        const run = runKfmesh(['trace', input, '-o', 'json', ...args]);
        const { failures, unsupported } = traceCaseFailures(
          (c.body['expect'] ?? {}) as Record<string, unknown>,
          run,
        );
        // A trace that says it crossed a part of the data plane it does not simulate yet is reported, not failed.
        if (failures.length > 0 && unsupported) {
          t.todo(`${unsupported}\n${failures.join('\n')}`);
          return;
        }
        assert.deepEqual(failures, [], `${c.path}\n${failures.join('\n')}`);
      });
    } else {
      test(name, () => assert.fail(`${c.path}: unknown case kind ${JSON.stringify(kind)}`));
    }
  }
});

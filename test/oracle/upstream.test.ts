/**
 * Istio's own code judges kfmesh on the translated upstream suites (../shared/upstream-tests: Istio's
 * simulation tests and the Gateway API conformance suite): every hop kfmesh traces at a sidecar or a
 * gateway is asked of the oracle, and every field that differs is a disagreement. A disagreement must be
 * a known limit of the oracle (docs/semantics.md, "What Istio's code cannot judge") or an open one
 * (open-disagreements.txt beside this file, each still to be fixed); any other fails, and so does an open
 * one that no longer occurs (the list only shrinks).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { projectRoot } from '../conformance/cases.ts';
import { partTestOptions } from '../kube-apiserver.ts';
import { differential } from './differential.ts';
import { oracleTestOptions } from './istio-oracle.ts';

const upstream = resolve(projectRoot, '../shared/upstream-tests');
const suites = ['istio-simulation', 'gateway-api'];

/** The disagreements still open, one per line (`#` comments). */
function openDisagreements(): Set<string> {
  const file = join(projectRoot, 'test/oracle/open-disagreements.txt');
  if (!existsSync(file)) return new Set();
  return new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#')),
  );
}

const options = oracleTestOptions();
const shared = options.skip
  ? options
  : partTestOptions('the upstream suites', existsSync(upstream) ? undefined : `${upstream} is missing`);

describe("kfmesh judged by Istio's own code on the upstream suites", shared, () => {
  const found: string[] = [];
  let compared = 0;
  for (const suite of suites) {
    const dir = join(upstream, suite);
    const files = existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => f.endsWith('.yaml'))
          .sort()
      : [];
    test(`${suite}: ${files.length} cases`, async () => {
      assert.ok(files.length > 0);
      for (const f of files) {
        const body = parse(readFileSync(join(dir, f), 'utf8')) as {
          input: KubeObject[];
          args: string[];
        };
        const report = await differential(body.input, [{ label: `${suite}/${f}`, args: body.args }]);
        compared += report.compared;
        found.push(...report.disagreements);
      }
    });
  }

  test('every disagreement is a known limit or still open, and every open one still occurs', () => {
    const open = openDisagreements();
    const unexplained = found.filter((d) => !open.has(d));
    const gone = [...open].filter((d) => !found.includes(d));
    console.log(
      `oracle: ${compared} hops compared, ${found.length} disagreements (${open.size} listed open)`,
    );
    assert.deepEqual(unexplained, [], `disagreements not listed:\n${unexplained.join('\n')}`);
    assert.deepEqual(
      gone,
      [],
      `listed disagreements that no longer occur (remove them):\n${gone.join('\n')}`,
    );
  });
});

/**
 * The translated upstream suites (../shared/upstream-tests: Istio's simulation tests and the Gateway API
 * conformance suite) judge kfmesh twice: by their own expectations (upstream's assertions), and by Istio's
 * own code, which is asked about every hop kfmesh traces at a sidecar or a gateway (every field that
 * differs is a disagreement). A failed expectation or a disagreement must be listed as still open
 * (open-disagreements.txt beside this file, each a defect to fix); any other fails, and so does a listed
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
import { traceCaseFailures } from '../conformance/cases.ts';
import { differential } from './differential.ts';
import { oracleTestOptions } from './istio-oracle.ts';
import { checkAgainstOpen } from './open.ts';

const upstream = resolve(projectRoot, '../shared/upstream-tests');
const suites = ['istio-simulation', 'gateway-api'];

const options = oracleTestOptions();
const shared = options.skip
  ? options
  : partTestOptions('the upstream suites', existsSync(upstream) ? undefined : `${upstream} is missing`);

describe("kfmesh judged by Istio's own code on the upstream suites", shared, () => {
  const found: string[] = [];
  let compared = 0;
  let notAsked = 0;
  let cases = 0;
  let expectations = 0;
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
          args: unknown[];
          expect?: Record<string, unknown>;
        };
        const label = `${suite}/${f}`;
        const report = await differential(body.input, [{ label, args: body.args.map(String) }]);
        compared += report.compared;
        notAsked += report.skipped.length;
        found.push(...report.disagreements);
        const run = report.runs.get(label);
        if (run) {
          const { failures } = traceCaseFailures(body.expect ?? {}, run);
          if (failures.length > 0) expectations++;
          found.push(...failures.map((x) => `${label}: expected by upstream: ${x.split('\n')[0] ?? ''}`));
        }
        cases++;
      }
    });
  }

  test('every failed expectation and disagreement is listed as open, and every listed one still occurs', () => {
    console.log(
      `upstream suites: ${cases - expectations} of ${cases} cases meet upstream's expectations; ` +
        `oracle: ${compared} hops compared (${notAsked} not asked); ${found.length} open items`,
    );
    for (const suite of suites)
      checkAgainstOpen(
        `${suite}/`,
        found.filter((f) => f.startsWith(`${suite}/`)),
      );
  });
});

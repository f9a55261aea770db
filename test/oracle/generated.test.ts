/**
 * kfmesh judged by Istio's own code on platforms drawn at random (test/oracle/generate.ts; fast-check,
 * seeded: the seed is printed, KFMESH_ORACLE_SEED replays one, KFMESH_ORACLE_PLATFORMS sets how many).
 * Every hop at the client's sidecar and the server's is asked of the oracle; with the default seed, any
 * disagreement must be listed as open (prefix `generated/`), and the list only shrinks; with another seed
 * any disagreement fails.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { differentialInProcess } from './differential.ts';
import { generatedPlatforms } from './generate.ts';
import { oracleTestOptions } from './istio-oracle.ts';
import { checkAgainstOpen } from './open.ts';

const defaultSeed = 20261206;
const seed = Number(process.env['KFMESH_ORACLE_SEED'] ?? defaultSeed);
const count = Number(process.env['KFMESH_ORACLE_PLATFORMS'] ?? 200);

describe("kfmesh judged by Istio's own code on generated platforms", oracleTestOptions(), () => {
  test(`${count} platforms (seed ${seed})`, async () => {
    console.log(`generated platforms: seed ${seed} (KFMESH_ORACLE_SEED=${seed} replays them)`);
    const { objects, requests } = generatedPlatforms(seed, count);
    const report = await differentialInProcess(objects, requests);
    console.log(
      `generated: ${count} platforms, ${requests.length} requests, ${report.compared} hops compared (${report.ztunnel} at ztunnel, ${report.waypoint} at waypoints; ${report.skipped.length} not asked), ` +
        `${report.disagreements.length} disagreements, ${report.rejected.length} objects Istio refuses`,
    );
    assert.ok(report.compared >= requests.length, `${report.compared} hops compared`);
    assert.deepEqual(report.rejected, [], 'every generated object is valid Istio configuration');
    if (seed === defaultSeed) checkAgainstOpen('generated/', report.disagreements);
    else assert.deepEqual(report.disagreements, [], report.disagreements.join('\n'));
  });
});

/**
 * The oracle's own evaluation of Envoy configuration (oracle/istio/envoy: virtual hosts, routes, filter
 * chains, RBAC) and of ztunnel's authorization (oracle/istio/ztunnel) is tested by its Go tests, written from
 * Envoy's and ztunnel's documented semantics; they run here so that `npm test` judges the judge too.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { projectRoot } from '../conformance/cases.ts';
import { onPath, partTestOptions } from '../kube-apiserver.ts';

describe(
  "the oracle's Envoy evaluator",
  partTestOptions('Go', onPath('go') ? undefined : 'is not on PATH'),
  () => {
    test('go test ./envoy/ ./ztunnel/ passes', () => {
      const run = spawnSync('go', ['test', '-count=1', './envoy/', './ztunnel/'], {
        cwd: join(projectRoot, 'oracle/istio'),
        encoding: 'utf8',
        env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
      });
      assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
      assert.match(run.stdout, /^ok\s+kfmesh\.test\/oracle\/istio\/envoy/m);
      assert.match(run.stdout, /^ok\s+kfmesh\.test\/oracle\/istio\/ztunnel/m);
    });
  },
);

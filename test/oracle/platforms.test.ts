/**
 * kfmesh judged by Istio's own code on whole platforms: the built-in example (sidecar mode) and the real
 * Kubeflow platforms of ../shared/real, and the example and the 26.03 release after `migrate --to ambient`.
 * On each, one client per namespace calls every HTTP port of every Service; each hop kfmesh traces (at a
 * sidecar, a gateway, a ztunnel or a waypoint) is asked of the oracle where it can be (what is not is
 * counted as not asked). Disagreements must be listed as open in open-disagreements.txt (by the platform's
 * prefix), which only shrinks.
 */
import { NewestModelledVersion } from '../../src/mesh/istio-version.ts';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { snapshotFromPath } from '../../src/cli/io.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import type { KubeObject } from '../../src/model/object.ts';
import type { TraceInput } from '../../src/mesh/trace/request.ts';
import { projectRoot } from '../conformance/cases.ts';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import { partTestOptions } from '../kube-apiserver.ts';
import { differentialInProcess, type DifferentialReport } from './differential.ts';
import { oracleTestOptions } from './istio-oracle.ts';
import { checkAgainstOpen } from './open.ts';

const quiet = { stdout: () => undefined, stderr: () => undefined, readStdin: async () => '' };
const real = resolve(projectRoot, '../shared/real');

/**
 * Every client (the first sidecar, or on a migrated platform the first sidecar or ambient pod, of each
 * namespace) to every HTTP port of every ClusterIP Service.
 */
async function requestsOn(objects: readonly KubeObject[], prefix: string, ambientClients = false) {
  const mesh = compileMesh(await snapshotFromPath(writeManifest(objects), quiet), {
    istioVersion: NewestModelledVersion,
  });
  const clients = new Map<string, string>();
  for (const w of mesh.workloads)
    if ((w.proxy === 'sidecar' || (ambientClients && w.proxy === 'ambient')) && !clients.has(w.namespace))
      clients.set(w.namespace, `${w.namespace}/${w.name}`);
  const requests: { label: string; input: TraceInput }[] = [];
  for (const from of [...clients.values()].sort())
    for (const s of mesh.services)
      for (const p of s.ports)
        if (s.type === 'ClusterIP' && /^(HTTP|HTTP2|GRPC)$/.test(p.protocol))
          requests.push({
            label: `${prefix}${from} → ${s.hostname}:${p.port}`,
            input: { from, url: `http://${s.hostname}:${p.port}/` },
          });
  return requests;
}

async function judge(
  name: string,
  objects: readonly KubeObject[],
  migrated = false,
): Promise<DifferentialReport> {
  const prefix = `${name}/`;
  const requests = await requestsOn(objects, prefix, migrated);
  assert.ok(requests.length > 50, `${requests.length} requests`);
  const report = await differentialInProcess(objects, requests);
  console.log(
    `${name}: ${requests.length} requests, ${report.compared} hops compared (${report.ztunnel} at ztunnel, ${report.waypoint} at waypoints; ${report.skipped.length} not asked), ${report.disagreements.length} disagreements`,
  );
  assert.deepEqual(report.rejected, [], 'every object is valid Istio configuration');
  assert.ok(report.compared > 50);
  // A migrated platform's traffic ends at ztunnel: its L4 authorization is judged there.
  if (migrated) assert.ok(report.ztunnel > 10, `${report.ztunnel} hops at ztunnel compared`);
  checkAgainstOpen(prefix, report.disagreements);
  return report;
}

/**
 * "The migration opens nothing", on traces whose every hop Istio's code answered alike: a request a
 * policy denied before the migration (a hop's decision deny) that reaches its application after it, from
 * the same client to the same Service port. Returns those requests.
 */
function openedBy(before: DifferentialReport, after: DifferentialReport): string[] {
  const byRequest = (r: DifferentialReport) =>
    new Map([...r.traces].map(([label, t]) => [label.slice(label.indexOf('/') + 1), t]));
  const was = byRequest(before);
  const opened: string[] = [];
  let compared = 0;
  let denied = 0;
  for (const [request, now] of byRequest(after)) {
    const then = was.get(request);
    if (!then) continue;
    compared++;
    if (!then.hops.some((h) => h.decision === 'deny')) continue;
    denied++;
    if (now.answeredBy !== undefined) opened.push(request);
  }
  assert.ok(compared > 20, `${compared} requests asked before and after the migration`);
  console.log(
    `${compared} requests before and after the migration: ${denied} denied before, ${opened.length} of them opened`,
  );
  return opened;
}

describe("kfmesh judged by Istio's own code on whole platforms", oracleTestOptions(), () => {
  // The example (sidecar mode), then after `kfmesh migrate --to ambient`: every hop (sidecars, gateways,
  // the Gateway API gateway, ztunnels and waypoints) is asked of the oracle on both, and no request a
  // policy denied before reaches its application after.
  test('the example, and the example migrated to ambient', async () => {
    const objects = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
    const before = await judge('example', objects);
    const after = await judge('example-migrated', migrated(writeManifest(objects)), true);
    assert.deepEqual(openedBy(before, after), []);
  });

  const platforms = {
    'kubeflow-manifests': 'kubeflow-manifests/platform.yaml',
    'kubeflow-v1.11.0': 'releases/kubeflow-v1.11.0.yaml',
    'kubeflow-26.03': 'releases/kubeflow-26.03.yaml',
  };
  for (const [name, file] of Object.entries(platforms)) {
    const path = resolve(real, file);
    test(
      `the real platform ${name}`,
      partTestOptions('the real platforms', existsSync(path) ? undefined : `${path} is missing`),
      async () => {
        const objects = parseAllDocuments(readFileSync(path, 'utf8'))
          .map((d) => d.toJS() as KubeObject | null)
          .filter((o): o is KubeObject => o !== null);
        const before = await judge(name, objects);
        // The latest release after the migration, as for the example.
        if (name === 'kubeflow-26.03')
          assert.deepEqual(openedBy(before, await judge(`${name}-migrated`, migrated(path), true)), []);
      },
    );
  }
});

/** The objects `kfmesh migrate --to ambient` makes of a file. */
function migrated(file: string): KubeObject[] {
  const run = runKfmesh(['migrate', '--to', 'ambient', file]);
  assert.equal(run.code, 0, run.stderr);
  return parseAllDocuments(run.stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

/**
 * kfmesh judged by Istio's own code on the built-in example platform (sidecar mode): every sidecar client
 * (one per namespace) calls every HTTP port of every Service, and an external client every host a gateway
 * serves; each hop kfmesh traces at a sidecar or a gateway is asked of the oracle. Disagreements must be
 * listed as open in open-disagreements.txt (prefix `example/`), which only shrinks.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { snapshotFromPath } from '../../src/cli/io.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import type { KubeObject } from '../../src/model/object.ts';
import type { TraceInput } from '../../src/mesh/trace/request.ts';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import { differentialInProcess } from './differential.ts';
import { oracleTestOptions } from './istio-oracle.ts';
import { checkAgainstOpen } from './open.ts';

const quiet = { stdout: () => undefined, stderr: () => undefined, readStdin: async () => '' };

describe("kfmesh judged by Istio's own code on the example platform", oracleTestOptions(), () => {
  test('sidecar mode: every sidecar client to every HTTP Service port, and external hosts', async () => {
    const objects = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
    const mesh = compileMesh(await snapshotFromPath(writeManifest(objects), quiet));
    const requests: { label: string; input: TraceInput }[] = [];
    const clients = new Map<string, string>();
    for (const w of mesh.workloads)
      if (w.proxy === 'sidecar' && !clients.has(w.namespace))
        clients.set(w.namespace, `${w.namespace}/${w.name}`);
    for (const from of [...clients.values()].sort())
      for (const s of mesh.services)
        for (const p of s.ports)
          if (s.type === 'ClusterIP' && /^(HTTP|HTTP2|GRPC)$/.test(p.protocol))
            requests.push({
              label: `example/${from} → ${s.hostname}:${p.port}`,
              input: { from, url: `http://${s.hostname}:${p.port}/` },
            });
    assert.ok(requests.length > 50, `${requests.length} requests`);
    const report = await differentialInProcess(objects, requests);
    console.log(
      `example: ${requests.length} requests, ${report.compared} hops compared, ${report.disagreements.length} disagreements`,
    );
    assert.ok(report.compared > 50);
    checkAgainstOpen('example/', report.disagreements);
  });
});

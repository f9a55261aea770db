/**
 * A live cluster as input (`--kubeconfig`), against a real kube-apiserver with the real CRDs: the same
 * findings as from files, the analyzer's patches applied through the API fix what they say, trace and
 * verify read the cluster too, and a cluster that can't be read is a clear exit 2.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { kfmeshBin, runKfmesh, writeManifest } from '../cli-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';

interface JsonFinding {
  code: string;
  object: { kind: string; namespace: string; name: string };
  field?: string;
  message: string;
  patch?: unknown[];
}

const findingsOf = (stdout: string): JsonFinding[] =>
  (JSON.parse(stdout) as { findings: JsonFinding[] }).findings;
const key = (o: KubeObject) =>
  `${o.apiVersion.split('/')[0]}/${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
const objectsOf = (text: string): KubeObject[] => parseAllDocuments(text).map((d) => d.toJS() as KubeObject);

describe('--kubeconfig: a live cluster as input', apiServerTestOptions(), () => {
  let server: TestApiServer;
  // The example platform as KServe before 0.14 left it (InferenceService routes not bound to mesh), less
  // the kinds whose CRDs this server doesn't have (Notebook).
  const example = objectsOf(runKfmesh(['example']).stdout);
  const unbound = objectsOf(runKfmesh(['render', '--no-mesh-gateway']).stdout);
  const byKey = new Map(example.map((o) => [key(o), o]));
  for (const o of unbound) byKey.set(key(o), o);
  const objects = [...byKey.values()].filter((o) => o.kind !== 'Notebook');
  const file = writeManifest(objects, 'cluster.yaml');

  before(async () => {
    server = await TestApiServer.start();
    await server.create(objects);
  });
  after(async () => {
    await server?.stop();
  });

  test('analyze: the same findings from the cluster as from the same objects in a file', async () => {
    const live = runKfmesh(['analyze', '--kubeconfig', server.kubeconfig, '-o', 'json']);
    assert.equal(live.code, 0, live.stderr);
    assert.match(live.stderr, /kfmesh: read \d+ objects of \d+ kinds from <cluster test> in [\d.]+ s/);
    const fromFile = runKfmesh(['analyze', file, '-o', 'json']);
    // The same findings; their order differs, since findings from a file are sorted by their position.
    const strip = (fs: JsonFinding[]) =>
      fs
        .map(({ code, object, field, message }) => ({ code, object, field, message }))
        .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
    // The cluster also has what the API server creates (the `default` namespace, without injection labels:
    // KFM704's info); the findings about the file's objects are the same.
    const inFile = new Set(objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`));
    const aboutFile = (fs: JsonFinding[]) =>
      fs.filter((f) => inFile.has(`${f.object.kind}/${f.object.namespace}/${f.object.name}`));
    assert.deepEqual(strip(aboutFile(findingsOf(live.stdout))), strip(findingsOf(fromFile.stdout)));
    assert.equal(findingsOf(live.stdout).filter((f) => f.code === 'KFM101').length, 4);
  });

  test("KFM101's patches, sent to the API server as kubectl patch would, leave no KFM101", async () => {
    const found = findingsOf(runKfmesh(['analyze', '--kubeconfig', server.kubeconfig, '-o', 'json']).stdout);
    const fixes = found.filter((f) => f.code === 'KFM101');
    for (const f of fixes)
      await server.client.request(
        'PATCH',
        `/apis/networking.istio.io/v1/namespaces/${f.object.namespace}/virtualservices/${f.object.name}`,
        { body: f.patch, contentType: 'application/json-patch+json' },
      );
    const now = findingsOf(runKfmesh(['analyze', '--kubeconfig', server.kubeconfig, '-o', 'json']).stdout);
    assert.deepEqual(
      now.filter((f) => f.code === 'KFM101' || f.code === 'KFM102'),
      [],
    );
    assert.equal(fixes.length, 4);
  });

  test('trace reads the cluster: the in-mesh client reaches a model', async () => {
    const run = runKfmesh([
      'trace',
      '--kubeconfig',
      server.kubeconfig,
      '--from',
      'kubeflow-user-example-com/curl-inside-mesh',
      '--url',
      'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict',
      '--method',
      'POST',
      '-o',
      'json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as { response: { code: number }; hops: { cluster?: string }[] };
    assert.equal(result.response.code, 200);
    assert.ok(!result.hops.some((h) => h.cluster === 'PassthroughCluster'));
  });

  test('verify --equivalence: the cluster before, its migration to ambient after, opens nothing', async () => {
    const migrated = runKfmesh(['migrate', '--to', 'ambient', '--kubeconfig', server.kubeconfig]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const afterFile = join(server.dir, 'after.yaml');
    writeFileSync(afterFile, migrated.stdout);
    const run = runKfmesh(['verify', '--equivalence', '--kubeconfig', server.kubeconfig, afterFile]);
    assert.equal(run.code, 0, run.stdout.slice(0, 2000));
    assert.match(run.stdout, / 0 errors/);
  });

  test('a kubeconfig that is missing, names no such context, or reaches no server: exit 2, clear message', () => {
    const missing = runKfmesh(['analyze', '--kubeconfig', '/nonexistent/kubeconfig']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^kfmesh: \/nonexistent\/kubeconfig: .*ENOENT/m);
    const context = runKfmesh(['analyze', '--kubeconfig', server.kubeconfig, '--context', 'prod']);
    assert.equal(context.code, 2);
    assert.match(context.stderr, /no context "prod" \(contexts: test\)/);
    const dead = join(server.dir, 'dead-kubeconfig');
    writeFileSync(dead, readFileSync(server.kubeconfig, 'utf8').replace(/127\.0\.0\.1:\d+/, '127.0.0.1:1'));
    const unreachable = runKfmesh(['analyze', '--kubeconfig', dead]);
    assert.equal(unreachable.code, 2);
    assert.match(unreachable.stderr, /cannot read the cluster of context test: .*ECONNREFUSED/);
    // No --kubeconfig, no KUBECONFIG, no ~/.kube/config and no service account token: says what it needs.
    const home = mkdtempSync(join(tmpdir(), 'kfmesh-home-'));
    const nothing = spawnSync(process.execPath, [kfmeshBin, 'controller'], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', HOME: home },
      timeout: 30_000,
    });
    assert.equal(nothing.status, 2, nothing.stderr);
    assert.match(nothing.stderr, /no cluster configuration: pass --kubeconfig, set KUBECONFIG/);
  });

  // Last: it loosens a CRD and adds an object the other tests would see.
  test("an object of the wrong type, under a CRD looser than kfmesh's schema: left out with a located warning", async () => {
    // A cluster whose InferenceService CRD keeps any spec (as KServe's older CRDs did).
    const path =
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/inferenceservices.serving.kserve.io';
    const crd = await server.client.request<{
      spec: { versions: { schema?: { openAPIV3Schema: { properties: Record<string, unknown> } } }[] };
    }>('GET', path);
    for (const version of crd.spec.versions)
      if (version.schema)
        version.schema.openAPIV3Schema.properties['spec'] = {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
        };
    await server.client.request('PUT', path, { body: crd });
    const wrong: KubeObject = {
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: { name: 'wrong-typed', namespace: 'kubeflow-user-example-com' },
      spec: { predictor: { minReplicas: 'two', model: { modelFormat: { name: 'sklearn' } } } },
    };
    for (let attempt = 0; ; attempt++) {
      try {
        await server.create([wrong]);
        break;
      } catch (error) {
        // The server takes the looser schema a moment after the update.
        if (attempt > 50) throw error;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const run = runKfmesh(['analyze', '--kubeconfig', server.kubeconfig, '-o', 'json', '--fail-on', 'never']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /kfmesh: warning: <cluster test>.*InferenceService kubeflow-user-example-com\/wrong-typed.*spec\.predictor\.minReplicas.*expected an integer, got string "two"; left out/,
    );
    assert.ok(!findingsOf(run.stdout).some((f) => f.object.name === 'wrong-typed'));
    // The same object in a file is bad input: exit 2 at the field, no stack trace.
    const file = writeManifest([wrong], 'wrong-typed.yaml');
    const fromFile = runKfmesh(['analyze', file]);
    assert.equal(fromFile.code, 2);
    assert.match(fromFile.stderr, /wrong-typed\.yaml:\d+.*spec\.predictor\.minReplicas.*expected an integer/);
    assert.doesNotMatch(fromFile.stderr, /\n\s+at /);
  });
});

/**
 * `kfmesh controller` beside Kubeflow's profile controller, against a real kube-apiserver: between
 * kfmesh's reconciles the test writes exactly what the profile controller (Kubeflow v1.10.0,
 * `profile_controller.go`) writes, with its field manager and its requests: it creates a Profile's
 * namespace with `istio-injection: enabled` and the labels of its labels file, adds missing file labels
 * to an existing one, and creates `ns-owner-access-istio` or puts its own spec back whenever it differs.
 * The labels file carries `kfmesh.io/mode: ambient`, so kfmesh moves the namespace to ambient mode.
 *
 * What must hold: no write loop (kfmesh's applies and the profile controller's updates over a minute of
 * its reconciles), the traffic as intended when traced from the objects the cluster ends with (the owner
 * reaches their notebook through the waypoint; another user is refused there), and MeshReady True.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { runKfmesh, writeText } from '../cli-process.ts';
import {
  eventually,
  noServerArgs,
  sleep,
  startController,
  type RunningController,
} from '../controller-process.ts';
import { apiServerTestOptions, TestApiServer } from '../kube-apiserver.ts';
import { ControllerRuntimeManager, StandInClient } from '../stand-in.ts';

const team = 'ml-research';
const owner = 'researcher@example.com';
/** The profile controller's field manager. */
const manager = ControllerRuntimeManager;
/** Its labels file (`namespace-labels-data`): Kubeflow's, plus the mode kfmesh is to give the namespace. */
const labelsFile: Record<string, string> = {
  'app.kubernetes.io/part-of': 'kubeflow-profile',
  'kfmesh.io/mode': 'ambient',
};
const nsPath = `/api/v1/namespaces/${team}`;
const policyPath = (name: string) =>
  `/apis/security.istio.io/v1/namespaces/${team}/authorizationpolicies/${name}`;

/** `getAuthorizationPolicy` of the profile controller, with Kubeflow's defaults (profiles-config). */
const ownerPolicySpec = {
  action: 'ALLOW',
  rules: [
    {
      when: [{ key: 'request.headers[kubeflow-userid]', values: [owner] }],
      from: [
        {
          source: {
            principals: [
              'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account',
              'cluster.local/ns/kubeflow/sa/ml-pipeline-ui',
            ],
          },
        },
      ],
    },
    { when: [{ key: 'source.namespace', values: [team] }] },
    { to: [{ operation: { paths: ['/healthz', '/metrics', '/wait-for-drain'] } }] },
    {
      from: [
        { source: { principals: ['cluster.local/ns/kubeflow/sa/notebook-controller-service-account'] } },
      ],
      to: [{ operation: { methods: ['GET'], paths: ['*/api/kernels'] } }],
    },
  ],
};

/** The profile controller's reconcile of one Profile (namespace and owner policy), counting its writes. */
class ProfileControllerStandIn {
  readonly #client: StandInClient;
  readonly #profile: KubeObject;

  constructor(server: TestApiServer, profile: KubeObject) {
    this.#client = new StandInClient(server, manager);
    this.#profile = profile;
  }

  get writes(): number {
    return this.#client.writes;
  }

  async reconcile(): Promise<void> {
    await this.#namespace();
    await this.#ownerPolicy();
  }

  get #ownerReferences() {
    const { name = '', uid = '' } = this.#profile.metadata;
    const controller = true;
    return [
      { apiVersion: 'kubeflow.org/v1', kind: 'Profile', name, uid, controller, blockOwnerDeletion: true },
    ];
  }

  async #namespace(): Promise<void> {
    const found = await this.#client.get(nsPath);
    if (!found) {
      // A new namespace: sidecar injection, hard-coded, then the labels file.
      await this.#client.write('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name: team,
          labels: { 'istio-injection': 'enabled', ...labelsFile },
          annotations: { owner },
          ownerReferences: this.#ownerReferences,
        },
      });
      return;
    }
    if (found.metadata.annotations?.['owner'] !== owner) return;
    // An existing one: a label of the file is added where the key is missing ("" removes it), never changed.
    const current = found.metadata.labels ?? {};
    const removed = new Set(
      Object.entries(labelsFile)
        .filter(([, value]) => value === '')
        .map(([key]) => key),
    );
    const labels = Object.fromEntries(Object.entries(current).filter(([key]) => !removed.has(key)));
    for (const [key, value] of Object.entries(labelsFile)) {
      if (value !== '' && !(key in labels)) labels[key] = value;
    }
    if (isDeepStrictEqual(labels, found.metadata.labels ?? {})) return;
    await this.#client.write('PUT', nsPath, { ...found, metadata: { ...found.metadata, labels } });
  }

  async #ownerPolicy(): Promise<void> {
    const found = await this.#client.get(policyPath('ns-owner-access-istio'));
    if (!found) {
      await this.#client.write(
        'POST',
        `/apis/security.istio.io/v1/namespaces/${team}/authorizationpolicies`,
        {
          apiVersion: 'security.istio.io/v1',
          kind: 'AuthorizationPolicy',
          metadata: {
            name: 'ns-owner-access-istio',
            namespace: team,
            annotations: { user: owner, role: 'admin' },
            ownerReferences: this.#ownerReferences,
          },
          spec: ownerPolicySpec,
        },
      );
      return;
    }
    // Its spec back whenever it differs (reflect.DeepEqual of the specs, then Update).
    if (isDeepStrictEqual(found['spec'], ownerPolicySpec)) return;
    await this.#client.write('PUT', policyPath('ns-owner-access-istio'), { ...found, spec: ownerPolicySpec });
  }
}

const appliedCount = (log: string) => log.split('\n').filter((l) => l.includes('"msg":"applied"')).length;

describe('kfmesh controller beside the profile controller', apiServerTestOptions(), () => {
  let server: TestApiServer;
  let controller: RunningController;
  let standIn: ProfileControllerStandIn;
  const example = parseAllDocuments(runKfmesh(['example', '--mode', 'ambient']).stdout).map(
    (d) => d.toJS() as KubeObject,
  );

  before(async () => {
    server = await TestApiServer.start();
    // The settings, the namespaces, and the Istio Gateways: the migrated example keeps its ingress gateway
    // as the one front door, and the owner policy kfmesh writes admits the gateways the cluster has.
    await server.create(
      example.filter(
        (o) =>
          o.kind === 'ConfigMap' ||
          (o.kind === 'Namespace' && o.metadata.name !== team) ||
          (o.kind === 'Gateway' && o.apiVersion.startsWith('networking.istio.io')),
      ),
    );
    const profile = example.find((o) => o.kind === 'Profile' && o.metadata.name === team);
    assert.ok(profile);
    await server.create([profile]);
    const created = await server.client.request<KubeObject>('GET', `/apis/kubeflow.org/v1/profiles/${team}`);
    standIn = new ProfileControllerStandIn(server, created);
    controller = startController(server.kubeconfig, noServerArgs);
  });

  after(async () => {
    if (controller && controller.process.exitCode === null) controller.process.kill('SIGKILL');
    await server?.stop();
  });

  test('no write loop over a minute of the profile controller reconciling', async () => {
    const started = appliedCount(controller.log());
    const begun = Date.now();
    let atHalf: number | undefined;
    while (Date.now() - begun < 60_000) {
      await standIn.reconcile();
      if (atHalf === undefined && Date.now() - begun >= 30_000) atHalf = appliedCount(controller.log());
      await sleep(500);
    }
    const total = appliedCount(controller.log());
    const applied = total - started;
    // kfmesh converges once (namespace labels, waypoint, its two policies), then writes nothing more;
    // the profile controller writes its namespace and policy once and finds nothing to put back.
    assert.ok(
      applied > 0 && applied <= 8,
      `kfmesh applied ${applied} objects: ${controller.log().slice(-4000)}`,
    );
    assert.equal(total - (atHalf ?? total), 0, 'kfmesh still applied objects in the second half minute');
    assert.equal(standIn.writes, 2, 'the profile controller wrote more than its namespace and policy');
  });

  test('the namespace in ambient mode, with both owner policies side by side', async () => {
    const ns = await server.client.request<KubeObject>('GET', nsPath);
    assert.equal(ns.metadata.labels?.['istio.io/dataplane-mode'], 'ambient');
    assert.equal(ns.metadata.labels?.['istio-injection'], 'disabled');
    const theirs = await server.client.request<KubeObject>('GET', policyPath('ns-owner-access-istio'));
    assert.deepEqual(theirs['spec'], ownerPolicySpec);
    const ours = await server.client.request<KubeObject>('GET', policyPath('ns-owner-access-waypoint'));
    assert.equal(ours.metadata.labels?.['app.kubernetes.io/managed-by'], 'kfmesh');
    assert.deepEqual((ours['spec'] as { targetRefs: unknown }).targetRefs, [
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint' },
    ]);
  });

  test('traced from what the cluster holds: the owner reaches the notebook, another user is refused', async () => {
    const live: KubeObject[] = [await server.client.request<KubeObject>('GET', nsPath)];
    for (const [group, plural] of [
      ['security.istio.io/v1', 'authorizationpolicies'],
      ['gateway.networking.k8s.io/v1', 'gateways'],
    ] as const) {
      const list = await server.client.request<{ items: KubeObject[] }>(
        'GET',
        `/apis/${group}/namespaces/${team}/${plural}`,
      );
      const kind = plural === 'gateways' ? 'Gateway' : 'AuthorizationPolicy';
      live.push(...list.items.map((o) => ({ ...o, apiVersion: group, kind })));
    }
    // The rest of the platform as the example has it; the namespace's mesh objects as the cluster has them.
    const replaced = new Set(['Namespace', 'AuthorizationPolicy', 'Gateway']);
    const rest = example.filter(
      (o) => !((o.metadata.namespace === team || o.metadata.name === team) && replaced.has(o.kind)),
    );
    const strip = (o: KubeObject): KubeObject => {
      const {
        managedFields: _m,
        resourceVersion: _r,
        uid: _u,
        creationTimestamp: _c,
        generation: _g,
        ...meta
      } = o.metadata as Record<string, unknown>;
      return { ...o, metadata: meta as KubeObject['metadata'] };
    };
    const file = writeText(
      [...rest, ...live.map(strip)].map((o) => stringify(o)).join('---\n'),
      'cluster-state.yaml',
    );
    const claims = { iss: 'http://dex.auth.svc.cluster.local:5556/dex', sub: 'researcher' };
    const token = `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
    const asUser = (user: string) => {
      const run = runKfmesh([
        'trace',
        file,
        '--from',
        'external',
        '--via',
        'istio-system/istio-ingressgateway',
        '-H',
        `Authorization: Bearer ${token}`,
        '-H',
        `kubeflow-userid: ${user}`,
        '--url',
        `http://kubeflow.example.com/notebook/${team}/lab/`,
        '-o',
        'json',
      ]);
      assert.equal(run.code, 0, run.stderr);
      return JSON.parse(run.stdout) as {
        response: { code: number };
        hops: { kind: string; policy?: string }[];
      };
    };
    const ownerTrace = asUser(owner);
    assert.equal(ownerTrace.response.code, 200);
    assert.equal(
      ownerTrace.hops.find((h) => h.kind === 'waypoint')?.policy,
      `${team}/ns-owner-access-waypoint`,
    );
    const other = asUser('someone-else@example.com');
    assert.equal(other.response.code, 403);
    assert.equal(other.hops.at(-1)?.kind, 'waypoint');
  });

  test('MeshReady True on the Profile', async () => {
    const condition = await eventually('MeshReady', async () => {
      const profile = await server.client.request<{
        status?: { conditions?: { type: string; status: string; message?: string }[] };
      }>('GET', `/apis/kubeflow.org/v1/profiles/${team}`);
      return profile.status?.conditions?.find((c) => c.type === 'MeshReady');
    });
    assert.equal(condition.status, 'True', condition.message);
  });
});

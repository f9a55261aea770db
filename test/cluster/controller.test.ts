/**
 * `kfmesh controller` against a real kube-apiserver with the real CRDs: it applies an InferenceService's
 * mesh objects, keeps them as rendered (restores a deleted object and a field it owns, keeps a field it
 * doesn't), leaves objects it didn't create alone, marks a bad InferenceService MeshReady=False with the
 * field named and an Event, prunes what an InferenceService no longer needs, serves its probes and
 * metrics, and stops cleanly on SIGTERM. The suite runs against the current Kubernetes release and the
 * oldest one still supported upstream (docs/reliability.md), so a feature kfmesh uses that an older
 * supported cluster lacks shows up.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { KubeApiError } from '../../src/kube/client.ts';
import { runKfmesh } from '../cli-process.ts';
import { eventually, sleep, startController, type RunningController } from '../controller-process.ts';
import { apiServerTestOptions, kubeVersion, TestApiServer, type KubeRelease } from '../kube-apiserver.ts';

const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
const ns = 'kubeflow-user-example-com';
const vsPath = (name: string) => `/apis/networking.istio.io/v1/namespaces/${ns}/virtualservices/${name}`;
const isvcPath = (name: string) =>
  `/apis/serving.kserve.io/v1beta1/namespaces/${ns}/inferenceservices/${name}`;

for (const release of ['current', 'oldest'] as const) suite(release);

function suite(release: KubeRelease): void {
  describe(
    `kfmesh controller against a real API server (${release}: ${kubeVersion(release) ?? 'not built'})`,
    apiServerTestOptions(release),
    () => {
      let server: TestApiServer;
      let controller: RunningController;
      let probes = '';
      let metrics = '';

      const get = <T = KubeObject>(path: string) => server.client.request<T>('GET', path);
      const missing = async (path: string) => {
        try {
          await get(path);
          return undefined;
        } catch (error) {
          return error instanceof KubeApiError && error.status === 404 ? true : undefined;
        }
      };

      before(async () => {
        server = await TestApiServer.start({ release });
        const platform = example.filter(
          (o) =>
            o.kind === 'Namespace' ||
            o.kind === 'ConfigMap' ||
            (o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris'),
        );
        await server.create(platform);
        controller = startController(server.kubeconfig, [
          '--metrics-bind-address',
          '127.0.0.1:0',
          '--health-probe-bind-address',
          '127.0.0.1:0',
        ]);
        const addresses = await eventually('the controller to serve', async () => {
          const found = [...controller.log().matchAll(/"address":"([^"]+)".*"msg":"serving"/g)].map(
            (m) => m[1] ?? '',
          );
          return found.length === 2 ? found : undefined;
        });
        [metrics, probes] = addresses as [string, string];
      });

      after(async () => {
        if (controller && controller.process.exitCode === null) controller.process.kill('SIGKILL');
        await server?.stop();
      });

      test("applies the InferenceService's VirtualService, marked as kfmesh's and owned by it; MeshReady True", async () => {
        const vs = await eventually<KubeObject>('the VirtualService', () => get(vsPath('sklearn-iris')));
        assert.equal(vs.metadata.labels?.['app.kubernetes.io/managed-by'], 'kfmesh');
        assert.equal(vs.metadata.ownerReferences?.[0]?.kind, 'InferenceService');
        assert.ok(((vs['spec'] as { gateways: string[] }).gateways ?? []).includes('mesh'));
        const condition = await eventually('MeshReady', async () => {
          const isvc = await get<{ status?: { conditions?: { type: string; status: string }[] } }>(
            isvcPath('sklearn-iris'),
          );
          return isvc.status?.conditions?.find((c) => c.type === 'MeshReady');
        });
        assert.equal(condition.status, 'True');
      });

      test('restores a deleted object and a field it owns; keeps a field it does not own', async () => {
        await server.client.request('DELETE', vsPath('sklearn-iris'));
        await eventually('the VirtualService back', () => get(vsPath('sklearn-iris')));
        await server.client.request('PATCH', vsPath('sklearn-iris'), {
          body: {
            metadata: { annotations: { 'team.example.com/note': 'kept' } },
            spec: { hosts: ['edited'] },
          },
          contentType: 'application/merge-patch+json',
        });
        const restored = await eventually('spec.hosts restored', async () => {
          const vs = await get(vsPath('sklearn-iris'));
          return (vs['spec'] as { hosts: string[] }).hosts.includes('edited') ? undefined : vs;
        });
        assert.equal(restored.metadata.annotations?.['team.example.com/note'], 'kept');
      });

      test('leaves an object it did not create alone', async () => {
        const theirs = {
          apiVersion: 'networking.istio.io/v1',
          kind: 'VirtualService',
          metadata: { name: 'theirs', namespace: ns, labels: { 'kfmesh.io/owner-kind': 'InferenceService' } },
          spec: { hosts: ['theirs.example.com'], http: [{ route: [{ destination: { host: 'x' } }] }] },
        };
        await server.create([theirs]);
        // A change that makes the controller reconcile everything (a ConfigMap), then a marker it must see.
        await server.create([
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'poke', namespace: ns } },
        ]);
        await sleep(1500);
        const still = await get(vsPath('theirs'));
        assert.deepEqual((still['spec'] as { hosts: string[] }).hosts, ['theirs.example.com']);
      });

      test('a bad InferenceService: MeshReady False naming the field, an Event, nothing applied for it', async () => {
        const name = `model-with-a-name-long-enough-that-its-predictor-svc-breaks`;
        const bad = {
          apiVersion: 'serving.kserve.io/v1beta1',
          kind: 'InferenceService',
          metadata: { name, namespace: ns },
          spec: { predictor: { sklearn: { storageUri: 'gs://models/iris' } } },
        };
        await server.create([bad]);
        const condition = await eventually('MeshReady False', async () => {
          const isvc = await get<{
            status?: { conditions?: { type: string; status: string; message: string }[] };
          }>(isvcPath(name));
          return isvc.status?.conditions?.find((c) => c.type === 'MeshReady' && c.status === 'False');
        });
        assert.match(
          condition.message,
          /metadata\.name: the predictor Service name .* is not a valid Service name/,
        );
        // The Event follows the condition.
        await eventually('the InvalidSpec Event', async () => {
          const events = await get<{ items: { reason: string; involvedObject: { name: string } }[] }>(
            `/api/v1/namespaces/${ns}/events`,
          );
          return events.items.some((e) => e.involvedObject.name === name && e.reason === 'InvalidSpec')
            ? true
            : undefined;
        });
        assert.equal(await missing(vsPath(name)), true);
        // The good one is untouched.
        await get(vsPath('sklearn-iris'));
      });

      test('updating the InferenceService: its VirtualService follows (cluster-local drops the ingress host)', async () => {
        await server.client.request('PATCH', isvcPath('sklearn-iris'), {
          body: { metadata: { labels: { 'networking.knative.dev/visibility': 'cluster-local' } } },
          contentType: 'application/merge-patch+json',
        });
        const vs = await eventually('the VirtualService without the ingress host', async () => {
          const live = await get(vsPath('sklearn-iris'));
          const { hosts } = live['spec'] as { hosts: string[] };
          return hosts.some((h) => h.endsWith('.example.com')) ? undefined : live;
        });
        assert.deepEqual((vs['spec'] as { hosts: string[] }).hosts, [`sklearn-iris.${ns}.svc.cluster.local`]);
      });

      test("someone else's object in the way: MeshReady False (NotManaged) naming it, the object kept", async () => {
        const name = 'preexisting';
        await server.create([
          {
            apiVersion: 'networking.istio.io/v1',
            kind: 'VirtualService',
            metadata: { name, namespace: ns },
            spec: { hosts: ['preexisting.example.org'], http: [{ route: [{ destination: { host: 'x' } }] }] },
          },
        ]);
        const model = example.find(
          (o) => o.kind === 'InferenceService' && o.metadata.name === 'sklearn-iris',
        );
        assert.ok(model);
        await server.create([{ ...model, metadata: { ...model.metadata, name, uid: undefined } }]);
        const condition = await eventually('MeshReady False', async () => {
          const isvc = await get<{
            status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
          }>(isvcPath(name));
          return isvc.status?.conditions?.find((c) => c.type === 'MeshReady' && c.status === 'False');
        });
        assert.equal(condition.reason, 'NotManaged');
        assert.match(condition.message, new RegExp(`VirtualService ${ns}/${name}`));
        const still = await get(vsPath(name));
        assert.deepEqual((still['spec'] as { hosts: string[] }).hosts, ['preexisting.example.org']);
        await server.client.request('DELETE', isvcPath(name));
      });

      test("a Profile: its namespace's objects follow the namespace's mode, and go with the Profile", async () => {
        const team = 'ml-research';
        const profile = example.find((o) => o.kind === 'Profile' && o.metadata.name === team);
        assert.ok(profile);
        const nsPath = `/api/v1/namespaces/${team}`;
        const waypoint = `/apis/gateway.networking.k8s.io/v1/namespaces/${team}/gateways/waypoint`;
        const policy = (name: string) =>
          `/apis/security.istio.io/v1/namespaces/${team}/authorizationpolicies/${name}`;
        const labels = async () => (await get(nsPath)).metadata.labels ?? {};
        const setMode = (mode: string) =>
          server.client.request('PATCH', nsPath, {
            body: { metadata: { labels: { 'kfmesh.io/mode': mode } } },
            contentType: 'application/merge-patch+json',
          });
        await server.create([{ ...profile, metadata: { ...profile.metadata, uid: undefined } }]);
        const owner = await eventually<KubeObject>('the owner policy', () =>
          get(policy('ns-owner-access-istio')),
        );
        assert.equal(owner.metadata.ownerReferences?.[0]?.kind, 'Profile');
        assert.equal(
          owner['spec'] && (owner['spec'] as { selector?: unknown; targetRefs?: unknown }).targetRefs,
          undefined,
        );
        assert.equal((await labels())['istio-injection'], 'enabled');
        assert.equal(await missing(waypoint), true);

        // To ambient: the waypoint, the L4 policy, the ambient labels; the owner policy targets the waypoint.
        await setMode('ambient');
        await eventually('the waypoint', () => get(waypoint));
        await eventually('the L4 policy', () => get(policy('ns-l4-waypoint')));
        await eventually('the ambient labels', async () => {
          const l = await labels();
          return l['istio.io/dataplane-mode'] === 'ambient' &&
            l['istio.io/use-waypoint'] === 'waypoint' &&
            l['istio-injection'] === 'disabled'
            ? l
            : undefined;
        });
        // Under kfmesh's name (the profile controller rewrites ns-owner-access-istio); kfmesh's sidecar form goes.
        await eventually('the owner policy on the waypoint', async () => {
          const live = await get(policy('ns-owner-access-waypoint'));
          return (live['spec'] as { targetRefs?: { name: string }[] }).targetRefs?.[0]?.name === 'waypoint'
            ? live
            : undefined;
        });
        await eventually('the sidecar owner policy pruned', () => missing(policy('ns-owner-access-istio')));

        // Back to sidecar: the waypoint and the L4 policy are pruned, the injection label is back.
        await setMode('sidecar');
        await eventually('the waypoint pruned', () => missing(waypoint));
        await eventually('the L4 policy pruned', () => missing(policy('ns-l4-waypoint')));
        await eventually('the waypoint owner policy pruned', () =>
          missing(policy('ns-owner-access-waypoint')),
        );
        await eventually('the sidecar owner policy back', () => get(policy('ns-owner-access-istio')));
        await eventually('the sidecar labels', async () => {
          const l = await labels();
          return l['istio-injection'] === 'enabled' && !('istio.io/dataplane-mode' in l) ? l : undefined;
        });

        await server.client.request('DELETE', `/apis/kubeflow.org/v1/profiles/${team}`);
        // Seen once in CI under load: the prune did not come within 30 s; the controller's log says why if again.
        await eventually('the owner policy pruned', () => missing(policy('ns-owner-access-istio')), {
          context: () => controller.log().slice(-6000),
        });
        // The namespace stays; kfmesh takes back the labels it set and its owner reference.
        const left = await eventually('the namespace released', async () => {
          const l = await labels();
          return l['app.kubernetes.io/managed-by'] === undefined ? l : undefined;
        });
        assert.equal(left['kfmesh.io/owner-kind'], undefined);
        assert.equal(left['kubernetes.io/metadata.name'], team);
        assert.equal((await get(nsPath)).metadata.ownerReferences, undefined);
      });

      test('deleting the InferenceService prunes its objects', async () => {
        await server.client.request('DELETE', isvcPath('sklearn-iris'));
        await eventually('the VirtualService pruned', () => missing(vsPath('sklearn-iris')));
        await eventually('the ExternalName Service pruned', () =>
          missing(`/api/v1/namespaces/${ns}/services/sklearn-iris`),
        );
      });

      test('probes and metrics are served; SIGTERM stops it cleanly', async () => {
        const ready = await fetch(`http://${probes}/readyz`);
        assert.equal(ready.status, 200);
        assert.equal((await fetch(`http://${probes}/healthz`)).status, 200);
        const text = await (await fetch(`http://${metrics}/metrics`)).text();
        assert.match(text, /kfmesh_reconcile_total\{result="success"\} \d+/);
        assert.match(text, /kfmesh_apply_duration_seconds_count \d+/);
        assert.match(text, /kfmesh_workqueue_depth \d+/);
        // Without --leader-elect it is the only writer, so it leads.
        assert.match(text, /^kfmesh_leader 1$/m);
        assert.equal(await controller.terminate(), 0, controller.log().slice(-2000));
        assert.match(controller.log(), /"msg":"stopped"/);
      });
    },
  );
}

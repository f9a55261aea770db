/**
 * The test API server is a current Kubernetes with the real CRDs loaded as shipped: it names its version,
 * and it enforces the CRDs' CEL rules (`x-kubernetes-validations`), so an object kfmesh writes that a real
 * cluster refuses is refused here too. Run against both built releases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KubeApiError } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { apiServerTestOptions, kubeVersion, TestApiServer, type KubeRelease } from '../kube-apiserver.ts';

const gateway = (listeners: object[]): KubeObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'front', namespace: 'default' },
  spec: { gatewayClassName: 'istio', listeners },
});

const http = { name: 'http', port: 80, protocol: 'HTTP' };

for (const release of ['current', 'oldest'] as const) suite(release);

function suite(release: KubeRelease): void {
  const version = kubeVersion(release) ?? 'not built';
  describe(
    `the test API server (${release}: ${version}) with the CRDs' CEL rules`,
    apiServerTestOptions(release),
    () => {
      let server: TestApiServer;
      const path = '/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways';

      before(async () => {
        server = await TestApiServer.start({ release });
      });
      after(async () => {
        await server?.stop();
      });

      test('reports the version it was built at', () => {
        assert.equal(server.version, version);
      });

      test('accepts a Gateway that keeps the rules', async () => {
        const created = await server.client.request<KubeObject>('POST', path, { body: gateway([http]) });
        assert.equal(created.metadata.name, 'front');
        await server.client.request('DELETE', `${path}/front`);
      });

      test('refuses a Gateway whose listeners share a name (a CEL rule, not the OpenAPI schema)', async () => {
        const error = await server.client
          .request('POST', path, { body: gateway([http, { ...http, port: 8080 }]) })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        assert.ok(error instanceof KubeApiError, `expected a refusal, got ${String(error)}`);
        assert.equal(error.status, 422);
        assert.match(error.message, /Listener name must be unique within the Gateway/);
      });

      test('refuses an HTTPRoute redirect the CEL rules reject (ReplaceFullPath without the path)', async () => {
        const route: KubeObject = {
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'HTTPRoute',
          metadata: { name: 'r', namespace: 'default' },
          spec: {
            parentRefs: [{ name: 'front' }],
            rules: [
              {
                filters: [
                  { type: 'RequestRedirect', requestRedirect: { path: { type: 'ReplaceFullPath' } } },
                ],
              },
            ],
          },
        };
        const error = await server.client
          .request('POST', '/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes', {
            body: route,
          })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        assert.ok(error instanceof KubeApiError, `expected a refusal, got ${String(error)}`);
        assert.equal(error.status, 422);
        assert.match(
          error.message,
          /replaceFullPath must be specified when type is set to 'ReplaceFullPath'/,
        );
      });
    },
  );
}

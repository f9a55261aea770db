/**
 * The migration keeps what a sidecar's capture and labels gave (docs/semantics.md, Sidecar traffic
 * capture): ports the sidecar let through stay open at ztunnel, and NetworkPolicies that select pods by
 * the injector's labels still select them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { deployment, istio, namespace, pod, service, trace } from '../mesh-fixtures.ts';

const migrated = (objects: KubeObject[]) => migrateToAmbient(Snapshot.of(objects));

/** A webhook Deployment whose pods leave 9443 out of their sidecar, the API server's way in, under deny-all. */
function webhookPlatform(): KubeObject[] {
  const d = deployment('system', 'webhook');
  const template = (d.spec as { template: { metadata: Record<string, unknown> } }).template;
  template.metadata['annotations'] = { 'traffic.sidecar.istio.io/excludeInboundPorts': '9443' };
  return [
    namespace('istio-system', {}),
    namespace('system'),
    d,
    service('system', 'webhook', { ports: [{ name: 'https', port: 443, targetPort: 9443 }] }),
    istio('AuthorizationPolicy', 'istio-system', 'global-deny-all', {}),
  ];
}

describe('migrate: what the sidecar did not capture', () => {
  test('a webhook port the sidecar let through stays open at ztunnel, and the API server still reaches it', () => {
    const call = (objects: KubeObject[]) =>
      trace(objects, { from: 'kube-apiserver', url: 'http://webhook.system:443/validate' }).response.code;
    const before = webhookPlatform();
    assert.equal(call(before), 200);
    const result = migrated(before);
    const allow = result.objects.find((o) => o.metadata.name === 'webhook-uncaptured-ports');
    assert.deepEqual(allow?.spec, {
      selector: { matchLabels: { app: 'webhook' } },
      action: 'ALLOW',
      rules: [{ from: [{ source: { notPrincipals: ['*'] } }], to: [{ operation: { ports: ['9443'] } }] }],
    });
    assert.equal(call(result.objects), 200);
    // Without it ztunnel would refuse the call under deny-all.
    assert.notEqual(call(result.objects.filter((o) => o !== allow)), 200);
    // A mesh client's mTLS to the port failed before; once it is in ambient mode too, it is not let in.
    const withClient = [...before, namespace('client'), pod('client', 'client')];
    const meshClient = (objects: KubeObject[]) =>
      trace(objects, { from: 'client/client-0', url: 'http://webhook.system:443/validate' }).response.code;
    assert.equal(meshClient(withClient), 503);
    assert.notEqual(meshClient(migrated(withClient).objects), 200);
    const entry = result.report.entries.find(
      (e) => e.object.kind === 'Deployment' && e.object.name === 'webhook',
    );
    assert.ok(
      entry?.notes.some((n) => n.kind === 'action' && n.message.includes('port 9443 was not captured')),
    );
  });

  test("a NetworkPolicy selecting the injector's canonical name still selects the pods after the move", () => {
    const objects = [
      namespace('apps'),
      namespace('client'),
      pod('client', 'client'),
      deployment('apps', 'trainer'),
      service('apps', 'trainer'),
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: 'trainer-webhook', namespace: 'apps' },
        spec: { podSelector: { matchLabels: { 'service.istio.io/canonical-name': 'trainer' } }, ingress: [] },
      },
    ];
    const call = (input: KubeObject[]) =>
      trace(input, { from: 'client/client-0', url: 'http://trainer.apps/' }).response.code;
    assert.equal(call(objects), 503);
    const result = migrated(objects);
    const trainer = result.objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'trainer');
    const labels = (trainer?.spec as { template: { metadata: { labels: Record<string, string> } } }).template
      .metadata.labels;
    assert.equal(labels['service.istio.io/canonical-name'], 'trainer');
    assert.equal(labels['service.istio.io/canonical-revision'], 'latest');
    assert.equal(labels['security.istio.io/tlsMode'], undefined);
    // Still isolated, as before (the client is a sidecar pod; the policy admits no one).
    assert.notEqual(call(result.objects), 200);
  });
});

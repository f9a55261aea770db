/**
 * What a sidecar captures and the labels its injector adds (docs/semantics.md, Sidecar traffic capture,
 * Sidecar injection): ports and addresses the pod's annotations leave out go around the sidecar; ztunnel
 * reads none of them; a template's pods carry the injector's canonical labels, which NetworkPolicies may select.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { deployment, istio, namespace, pod, service, trace } from '../mesh-fixtures.ts';

/** Deny by default, as Kubeflow's `global-deny-all`. */
const denyAll = istio('AuthorizationPolicy', 'istio-system', 'global-deny-all', {});

/** A webhook pod with a sidecar whose port 9443 the API server calls. */
function webhook(annotations: Record<string, string>, options: { ambient?: boolean } = {}): KubeObject[] {
  const p = pod('system', 'webhook', options.ambient ? { ambient: true } : {});
  return [
    namespace('istio-system', {}),
    namespace('system', options.ambient ? { 'istio.io/dataplane-mode': 'ambient' } : undefined),
    { ...p, metadata: { ...p.metadata, annotations: { ...p.metadata.annotations, ...annotations } } },
    service('system', 'webhook', { ports: [{ name: 'https', port: 443, targetPort: 9443 }] }),
    denyAll,
  ];
}

const apiServerCall = (objects: KubeObject[]) =>
  trace(objects, { from: 'kube-apiserver', url: 'http://webhook.system:443/validate' });

describe('sidecar traffic capture', () => {
  test('excludeInboundPorts: the API server reaches the webhook port around the sidecar and its policies', () => {
    assert.equal(apiServerCall(webhook({})).response.code, 403);
    const excluded = apiServerCall(webhook({ 'traffic.sidecar.istio.io/excludeInboundPorts': '9443' }));
    assert.equal(excluded.response.code, 200);
    assert.equal(excluded.hops.length, 0);
    assert.match(excluded.summary, /not through its sidecar/);
    // includeInboundPorts that leaves the port out does the same.
    const included = apiServerCall(webhook({ 'traffic.sidecar.istio.io/includeInboundPorts': '8080' }));
    assert.equal(included.response.code, 200);
  });

  test('a client sidecar still sends Istio mTLS to an excluded port, which the application cannot take', () => {
    const objects = [
      ...webhook({ 'traffic.sidecar.istio.io/excludeInboundPorts': '9443' }),
      namespace('client'),
      pod('client', 'client'),
    ];
    const r = trace(objects, { from: 'client/client-0', url: 'http://webhook.system:443/validate' });
    assert.deepEqual(r.response, { code: 503, flags: 'UF' });
    assert.match(r.summary, /mTLS handshake, which fails/);
  });

  test('ztunnel reads none of these annotations: in ambient mode the port is enforced', () => {
    const r = apiServerCall(
      webhook({ 'traffic.sidecar.istio.io/excludeInboundPorts': '9443' }, { ambient: true }),
    );
    assert.notEqual(r.response.code, 200);
  });

  test('excludeOutboundPorts and excludeOutboundIPRanges: the client connects as if it had no sidecar', () => {
    const objects = (annotations: Record<string, string>) => {
      const client = pod('default', 'client');
      return [
        namespace('default'),
        namespace('istio-system', {}),
        {
          ...client,
          metadata: { ...client.metadata, annotations: { ...client.metadata.annotations, ...annotations } },
        },
        pod('default', 'reviews'),
        service('default', 'reviews', {
          ip: '10.96.7.7',
          ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
        }),
        istio('AuthorizationPolicy', 'default', 'only-client', {
          selector: { matchLabels: { app: 'reviews' } },
          rules: [{ from: [{ source: { principals: ['cluster.local/ns/default/sa/client'] } }] }],
        }),
      ];
    };
    const call = (annotations: Record<string, string>) =>
      trace(objects(annotations), { from: 'default/client-0', url: 'http://reviews:9080/' });
    assert.equal(call({}).response.code, 200);
    const byPort = call({ 'traffic.sidecar.istio.io/excludeOutboundPorts': '9080' });
    // No client hop, and the server sees a plaintext peer with no identity.
    assert.equal(byPort.response.code, 403);
    assert.equal(byPort.hops[0]?.kind, 'sidecar');
    assert.equal(byPort.hops[0]?.direction, 'inbound');
    assert.equal(
      call({ 'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.96.0.0/16' }).response.code,
      403,
    );
    assert.equal(
      call({ 'traffic.sidecar.istio.io/includeOutboundIPRanges': '10.97.0.0/16' }).response.code,
      403,
    );
    assert.equal(
      call({ 'traffic.sidecar.istio.io/includeOutboundIPRanges': '10.96.0.0/16' }).response.code,
      200,
    );
  });
});

describe("the injector's labels on a template's pods", () => {
  const workloadLabels = (objects: KubeObject[], name: string) =>
    compileMesh(Snapshot.of(objects)).workloads.find((w) => w.name === name)?.labels ?? {};

  test('a sidecar pod gets its TLS mode and canonical name and revision; an ambient one does not', () => {
    const sidecar = workloadLabels(
      [namespace('apps'), deployment('apps', 'trainer', { version: 'v2' })],
      'trainer',
    );
    assert.equal(sidecar['security.istio.io/tlsMode'], 'istio');
    assert.equal(sidecar['service.istio.io/canonical-name'], 'trainer');
    assert.equal(sidecar['service.istio.io/canonical-revision'], 'v2');
    const named = workloadLabels(
      [namespace('apps'), deployment('apps', 'trainer', { 'app.kubernetes.io/name': 'trainer-controller' })],
      'trainer',
    );
    assert.equal(named['service.istio.io/canonical-name'], 'trainer-controller');
    const ambient = workloadLabels(
      [namespace('apps', { 'istio.io/dataplane-mode': 'ambient' }), deployment('apps', 'trainer')],
      'trainer',
    );
    assert.equal(ambient['service.istio.io/canonical-name'], undefined);
  });

  test('a NetworkPolicy that selects the canonical name isolates the sidecar pod, not the ambient one', () => {
    // As Kubeflow 26.03's kubeflow-system/trainer-webhook: it selects pods by the injector's label.
    const isolate = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'trainer-webhook', namespace: 'apps' },
      spec: { podSelector: { matchLabels: { 'service.istio.io/canonical-name': 'trainer' } }, ingress: [] },
    };
    const objects = (labels: Record<string, string>) => [
      namespace('apps', labels),
      namespace('client'),
      pod('client', 'client'),
      deployment('apps', 'trainer'),
      service('apps', 'trainer'),
      isolate,
    ];
    const call = (labels: Record<string, string>) =>
      trace(objects(labels), { from: 'client/client-0', url: 'http://trainer.apps/' }).response.code;
    assert.equal(call({ 'istio-injection': 'enabled' }), 503);
    assert.equal(call({ 'istio.io/dataplane-mode': 'ambient' }), 200);
  });
});

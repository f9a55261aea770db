/** Sidecars that accept HBONE (docs/semantics.md, Sidecars and ambient pods together): the mesh config, the simulator, the migration. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { meshConfigFrom } from '../../src/load/mesh-config.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { parse } from 'yaml';
import { deployment, istio, namespace, pod, service, trace } from '../mesh-fixtures.ts';

const meshConfigMap = (mesh: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'istio', namespace: 'istio-system' },
  data: { mesh },
});
const hboneOn = 'defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "true"\n';
const hboneOff = 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  proxyMetadata: {}\n';

describe('the mesh config: do sidecars accept HBONE', () => {
  const read = (objects: KubeObject[]) => meshConfigFrom(Snapshot.of(objects)).sidecarsAcceptHbone;
  test('on with ISTIO_META_ENABLE_HBONE "true" in defaultConfig.proxyMetadata, off otherwise', () => {
    assert.equal(read([meshConfigMap(hboneOn)]), true);
    assert.equal(read([meshConfigMap(hboneOff)]), false);
    assert.equal(
      read([meshConfigMap('defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "false"\n')]),
      false,
    );
    assert.equal(read([]), false);
  });
  test('an unquoted true is read as the string Istio reads', () => {
    assert.equal(
      read([meshConfigMap('defaultConfig:\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: true\n')]),
      true,
    );
  });
});

describe('the simulator: an ambient client calling a sidecar', () => {
  const from = 'client/client-0';
  const url = 'http://app.legacy/';
  const base = (server: KubeObject, mesh: string): KubeObject[] => [
    namespace('client', { 'istio.io/dataplane-mode': 'ambient' }),
    namespace('legacy'),
    pod('client', 'client', { ambient: true }),
    server,
    service('legacy', 'app'),
    istio('PeerAuthentication', 'legacy', 'strict', { mtls: { mode: 'STRICT' } }),
    meshConfigMap(mesh),
  ];

  test('a pod injected under a config that turns HBONE on gets the client identity over HBONE', () => {
    const r = trace(base(deployment('legacy', 'app'), hboneOn), { from, url });
    assert.equal(r.hops[0]?.tls, 'HBONE');
    assert.equal(r.hops[0]?.mtls, true);
    assert.equal(r.response.code, 200);
  });

  test('without it the client arrives in plaintext and STRICT refuses it', () => {
    const r = trace(base(deployment('legacy', 'app'), hboneOff), { from, url });
    assert.equal(r.hops[0]?.mtls, false);
    assert.deepEqual(r.response, { code: 0, flags: '-' });
  });

  test('a running pod injected before the change keeps plaintext until it is restarted', () => {
    const r = trace(base(pod('legacy', 'app'), hboneOn), { from, url });
    assert.equal(r.hops[0]?.mtls, false);
    assert.deepEqual(r.response, { code: 0, flags: '-' });
  });
});

describe('the migration turns HBONE on for sidecars that stay', () => {
  const platform = (mesh?: string): KubeObject[] => [
    namespace('istio-system', {}),
    namespace('apps'),
    namespace('legacy', { 'istio-injection': 'enabled', 'kfmesh.io/mode': 'sidecar' }),
    deployment('apps', 'api'),
    deployment('legacy', 'app'),
    ...(mesh === undefined ? [] : [meshConfigMap(mesh)]),
  ];
  const notes = (result: ReturnType<typeof migrateToAmbient>, kind: string, name: string) =>
    result.report.entries
      .filter((e) => e.object.kind === kind && e.object.name === name)
      .flatMap((e) => e.notes.map((n) => `${n.kind}: ${n.message}`));
  const meshOf = (result: ReturnType<typeof migrateToAmbient>) =>
    result.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'istio')?.['data'] as Record<
      string,
      string
    >;

  test('sets the proxy metadata in the mesh config, keeping the rest, and asks for the restart', () => {
    const result = migrateToAmbient(Snapshot.of(platform(hboneOff), 'in.yaml'));
    const mesh = meshOf(result)['mesh'] ?? '';
    assert.deepEqual(parse(mesh), {
      defaultConfig: {
        discoveryAddress: 'istiod.istio-system.svc:15012',
        proxyMetadata: { ISTIO_META_ENABLE_HBONE: 'true' },
      },
    });
    assert.match(mesh, /proxyMetadata:\n {4}ISTIO_META_ENABLE_HBONE: "true"/);
    const said = notes(result, 'ConfigMap', 'istio').join('\n');
    assert.match(said, /^changed: "true"/m);
    assert.match(said, /^action: restart the sidecar workloads of legacy/m);
    assert.equal(meshConfigFrom(Snapshot.of(result.objects)).sidecarsAcceptHbone, true);
  });

  test('migrating the output again changes nothing more', () => {
    const once = migrateToAmbient(Snapshot.of(platform(hboneOff), 'in.yaml'));
    const twice = migrateToAmbient(Snapshot.of(once.objects, 'out.yaml'));
    assert.deepEqual(meshOf(twice), meshOf(once));
    assert.deepEqual(notes(twice, 'ConfigMap', 'istio'), []);
  });

  test('nothing to change when sidecars already accept HBONE', () => {
    const result = migrateToAmbient(Snapshot.of(platform(hboneOn), 'in.yaml'));
    assert.equal(meshOf(result)['mesh'], hboneOn);
    assert.deepEqual(notes(result, 'ConfigMap', 'istio'), []);
  });

  test('without a mesh config in the input, the namespaces that keep sidecars carry the instruction', () => {
    const result = migrateToAmbient(Snapshot.of(platform(), 'in.yaml'));
    assert.match(notes(result, 'Namespace', 'legacy').join('\n'), /ISTIO_META_ENABLE_HBONE: "true"/);
    assert.deepEqual(
      notes(result, 'Namespace', 'apps').filter((n) => n.includes('HBONE')),
      [],
    );
  });
});

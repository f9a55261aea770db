/**
 * Every object `render` generates for the example platform, in both modes, passes the OpenAPI schema of
 * the real CRD version it names (Istio, Gateway API, Kubeflow; copies in test/data/crds), or the core
 * Kubernetes schema.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { examplePlatform, exampleAmbientPlatform } from '../../src/example/platform.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';
import { isSchemaChecked, schemaFailures, validate, validators } from '../crd-validation.ts';

describe('generated objects against the real CRD schemas', () => {
  test('the CRDs load', () => {
    assert.ok(validators.has('networking.istio.io/v1beta1/VirtualService'));
    assert.ok(validators.has('gateway.networking.k8s.io/v1/HTTPRoute'));
    assert.ok(validators.has('security.istio.io/v1/AuthorizationPolicy'));
  });

  test('a schema violation is caught', () => {
    assert.match(
      validate({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: 'g' },
        spec: { gatewayClassName: 'x', listeners: [{ name: 'mesh', port: 99999, protocol: 'HBONE' }] },
      }) ?? '',
      /maximum|port/,
    );
  });

  test('migrate --to ambient of the example platform: every mesh object, Namespace and Service', () => {
    const checked = exampleAmbientPlatform().filter(isSchemaChecked);
    // Waypoints (the front door stays an Istio Gateway: a Profile in sidecar mode routes "*" there).
    assert.ok(
      checked.some((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('gateway.networking.k8s.io')),
    );
    assert.ok(
      checked.some((o) => o.kind === 'AuthorizationPolicy' && JSON.stringify(o).includes('targetRefs')),
    );
    assert.deepEqual(schemaFailures(checked), []);
  });

  for (const mode of ['sidecar', 'ambient'] as const) {
    test(`render --mode ${mode} of the example platform`, () => {
      const { objects } = desiredState(Snapshot.of(examplePlatform()), { mode });
      assert.ok(objects.length > 10);
      assert.deepEqual(schemaFailures(objects), []);
    });
  }
});

/**
 * Every object `render` generates for the example platform, in both modes, passes the OpenAPI schema of
 * the real CRD version it names (Istio, Gateway API, Kubeflow; copies in test/data/crds), or the core
 * Kubernetes schema.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import { parseAllDocuments } from 'yaml';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import type { KubeObject } from '../../src/model/object.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';
import { exampleAmbientPlatform } from '../../src/example/platform.ts';
import { projectRoot } from '../conformance/cases.ts';

type Crd = {
  spec: {
    group: string;
    names: { kind: string };
    versions: { name: string; served?: boolean; schema?: { openAPIV3Schema?: object } }[];
  };
};

/** Validators by `group/version/kind`, compiled from the CRDs. */
function crdValidators(): Map<string, ValidateFunction> {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
  const out = new Map<string, ValidateFunction>();
  for (const file of ['istio-crd-all.yaml', 'gateway-api-v1.6.1-standard.yaml', 'kubeflow-profiles.yaml']) {
    const docs = parseAllDocuments(readFileSync(join(projectRoot, 'test/data/crds', file), 'utf8'));
    for (const doc of Array.isArray(docs) ? docs : [docs]) {
      const crd = doc.toJS() as Crd | null;
      if (!crd?.spec?.versions) continue;
      for (const version of crd.spec.versions) {
        const schema = version.schema?.openAPIV3Schema;
        if (!schema || version.served === false) continue;
        out.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, ajv.compile(schema));
      }
    }
  }
  return out;
}

const validators = crdValidators();
/** Core kinds, by `apiVersion/kind`. */
const core: Record<string, (o: KubeObject) => void> = {
  'v1/Namespace': (o) => new Namespace(o as never).validate(),
  'v1/Service': (o) => new Service(o as never).validate(),
  'networking.k8s.io/v1/Ingress': (o) => new Ingress(o as never).validate(),
};

function validate(object: KubeObject): string | undefined {
  const coreCheck = core[`${object.apiVersion}/${object.kind}`];
  if (coreCheck) {
    try {
      coreCheck(object);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
  const validator = validators.get(`${object.apiVersion}/${object.kind}`);
  if (!validator) return `no served CRD version for ${object.apiVersion} ${object.kind}`;
  return validator(object) ? undefined : JSON.stringify(validator.errors);
}

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
    const meshGroups = ['networking.istio.io', 'security.istio.io', 'gateway.networking.k8s.io'];
    const checked = exampleAmbientPlatform().filter(
      (o) =>
        meshGroups.some((g) => o.apiVersion.startsWith(`${g}/`)) ||
        core[`${o.apiVersion}/${o.kind}`] !== undefined,
    );
    assert.ok(checked.some((o) => o.kind === 'HTTPRoute'));
    assert.ok(
      checked.some((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('gateway.networking.k8s.io')),
    );
    const failures = checked
      .map(
        (o) =>
          [
            `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`,
            validate(o),
          ] as const,
      )
      .filter(([, e]) => e !== undefined);
    assert.deepEqual(failures, []);
  });

  for (const mode of ['sidecar', 'ambient'] as const) {
    test(`render --mode ${mode} of the example platform`, () => {
      const { objects } = desiredState(Snapshot.of(examplePlatform()), { mode });
      assert.ok(objects.length > 10);
      const failures = objects
        .map(
          (o) =>
            [
              `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`,
              validate(o),
            ] as const,
        )
        .filter(([, e]) => e !== undefined);
      assert.deepEqual(failures, []);
    });
  }
});

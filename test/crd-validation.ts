/**
 * Validation against the OpenAPI schema of the real CRD version an object names (Istio, Gateway API,
 * Kubeflow; copies in test/data/crds), or the core Kubernetes schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { parseAllDocuments } from 'yaml';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import type { KubeObject } from '../src/model/object.ts';
import { projectRoot } from './conformance/cases.ts';

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

export const validators = crdValidators();
/** Core kinds, by `apiVersion/kind`. */
export const core: Record<string, (o: KubeObject) => void> = {
  'v1/Namespace': (o) => new Namespace(o as never).validate(),
  'v1/Service': (o) => new Service(o as never).validate(),
  'networking.k8s.io/v1/Ingress': (o) => new Ingress(o as never).validate(),
};

export function validate(object: KubeObject): string | undefined {
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

const meshGroups = ['networking.istio.io', 'security.istio.io', 'gateway.networking.k8s.io'];

/** True for the objects the schemas cover: Istio and Gateway API objects, Namespaces, Services, Ingresses. */
export function isSchemaChecked(o: KubeObject): boolean {
  return (
    meshGroups.some((g) => o.apiVersion.startsWith(`${g}/`)) ||
    core[`${o.apiVersion}/${o.kind}`] !== undefined
  );
}

/** `apiVersion kind ns/name` and the schema errors of every object that fails its schema. */
export function schemaFailures(objects: readonly KubeObject[]): [string, string][] {
  const out: [string, string][] = [];
  for (const o of objects) {
    const error = validate(o);
    if (error !== undefined)
      out.push([`${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, error]);
  }
  return out;
}

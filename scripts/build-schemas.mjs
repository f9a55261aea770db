// Builds dist/src/load/schemas.json: the type structure of every kind kfmesh reads from files, which
// `src/load/schema.ts` checks each input object against (a field of the wrong type is exit 2 with its
// position, not a crash later).
//
// - Kubernetes kinds: from the models of @kubernetes/client-node (each model's `attributeTypeMap` names
//   its fields' types), as shared definitions referred to by name.
// - Custom resources (Istio, Gateway API, KServe, Kubeflow): from the real CRDs (test/data/crds, the
//   project's copies of ../shared/crds), every served version, reduced to what a structural schema says
//   about types: type, properties, items, additionalProperties, x-kubernetes-int-or-string,
//   x-kubernetes-preserve-unknown-fields; and numbers' bounds (minimum, maximum, int32).
//
// Generated at build time rather than kept in the repository, so the CRDs stay the one source.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

const out = 'dist/src/load/schemas.json';

/** The Kubernetes kinds kfmesh reads, by `apiVersion/Kind`, with their client-node model. */
const coreKinds = {
  'v1/Namespace': 'V1Namespace',
  'v1/Service': 'V1Service',
  'v1/Endpoints': 'V1Endpoints',
  'v1/Pod': 'V1Pod',
  'v1/ConfigMap': 'V1ConfigMap',
  'discovery.k8s.io/v1/EndpointSlice': 'V1EndpointSlice',
  'apps/v1/Deployment': 'V1Deployment',
  'apps/v1/StatefulSet': 'V1StatefulSet',
  'apps/v1/DaemonSet': 'V1DaemonSet',
  'networking.k8s.io/v1/Ingress': 'V1Ingress',
  'networking.k8s.io/v1/IngressClass': 'V1IngressClass',
  'networking.k8s.io/v1/NetworkPolicy': 'V1NetworkPolicy',
};

const crdFiles = [
  'istio-crd-all.yaml',
  'gateway-api-v1.6.1-standard.yaml',
  'kserve-inferenceservices.yaml',
  'kubeflow-profiles.yaml',
];

const definitions = {};

/**
 * Ranges Kubernetes validates in code rather than in its OpenAPI models (the API server refuses a port
 * outside 1-65535): by client-node model and field. A field that is int-or-string keeps taking names.
 */
const port = { type: 'integer', minimum: 1, maximum: 65535 };
const namedPort = { intOrString: true, minimum: 1, maximum: 65535 };
/** 0 asks for none (hostPort) or for one to be allocated (nodePort). */
const optionalPort = { type: 'integer', minimum: 0, maximum: 65535 };
const coreRanges = {
  V1ServicePort: { port, targetPort: namedPort, nodePort: optionalPort },
  V1ContainerPort: { containerPort: port, hostPort: optionalPort },
  V1EndpointPort: { port },
  DiscoveryV1EndpointPort: { port },
  V1NetworkPolicyPort: { port: namedPort, endPort: port },
  V1ServiceBackendPort: { number: port },
};

/** A client-node type name (`string`, `Array<V1Container>`, `{ [key: string]: string; }`, a model). */
function typeSchema(type) {
  const array = /^Array<(.+)>$/.exec(type);
  if (array) return { type: 'array', items: typeSchema(array[1]) };
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) return { type: 'object', additionalProperties: typeSchema(map[1]) };
  switch (type) {
    case 'string':
    case 'Date':
      return { type: 'string' };
    case 'number':
      return { type: 'number' };
    case 'boolean':
      return { type: 'boolean' };
    case 'IntOrString':
      return { intOrString: true };
    case 'any':
    case 'object':
      return { any: true };
  }
  const model = k8s[type];
  if (!model?.attributeTypeMap) throw new Error(`unknown client-node type ${type}`);
  define(type, model);
  return { ref: type };
}

function define(name, model) {
  if (definitions[name]) return;
  definitions[name] = { type: 'object', properties: {} };
  const properties = {};
  for (const attribute of model.attributeTypeMap)
    properties[attribute.baseName] = coreRanges[name]?.[attribute.baseName] ?? typeSchema(attribute.type);
  definitions[name] = { type: 'object', properties };
}

/** What a CRD's schema says about types, and nothing else. */
function structural(schema) {
  if (!schema || typeof schema !== 'object') return {};
  const out = {};
  if (schema['x-kubernetes-int-or-string']) out.intOrString = true;
  else if (schema.type) out.type = schema.type;
  if (schema['x-kubernetes-preserve-unknown-fields'] && !schema.properties && !schema.items) out.any = true;
  // Numbers' bounds: the schema's own, else those of an int32 (the API server refuses what does not fit).
  const int32 = schema.format === 'int32';
  if (typeof schema.minimum === 'number') out.minimum = schema.minimum;
  else if (int32) out.minimum = -(2 ** 31);
  if (typeof schema.maximum === 'number') out.maximum = schema.maximum;
  else if (int32) out.maximum = 2 ** 31 - 1;
  if (schema.properties) {
    out.properties = {};
    for (const [k, v] of Object.entries(schema.properties)) out.properties[k] = structural(v);
  }
  if (schema.items) out.items = structural(schema.items);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
    out.additionalProperties = structural(schema.additionalProperties);
  return out;
}

const kinds = {};
for (const [key, model] of Object.entries(coreKinds)) kinds[key] = typeSchema(model);
for (const file of crdFiles) {
  for (const doc of parseAllDocuments(readFileSync(`test/data/crds/${file}`, 'utf8'))) {
    const crd = doc.toJS();
    if (crd?.kind !== 'CustomResourceDefinition') continue;
    const { group, names, versions } = crd.spec;
    for (const version of versions) {
      if (!version.served || !version.schema?.openAPIV3Schema) continue;
      // Versions of one CRD often share a schema: defined once, referred to by each.
      const schema = structural(version.schema.openAPIV3Schema);
      const text = JSON.stringify(schema);
      let name = `${group}/${names.kind}@${version.name}`;
      const same = Object.entries(definitions).find(
        ([n, d]) => n.startsWith(`${group}/${names.kind}@`) && JSON.stringify(d) === text,
      );
      if (same) name = same[0];
      else definitions[name] = schema;
      kinds[`${group}/${version.name}/${names.kind}`] = { ref: name };
    }
  }
}

mkdirSync('dist/src/load', { recursive: true });
writeFileSync(out, JSON.stringify({ kinds, definitions }));

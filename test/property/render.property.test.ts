/**
 * Properties of rendering over generated InferenceServices and KServe configurations: it never throws,
 * it is deterministic, every host regex matches its own host (with and without port) and no other
 * generated host, and every generated object passes the published schema of its kind (the real CRD's, or
 * the Kubernetes API's for core kinds).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { isSchemaChecked, validate } from '../crd-validation.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { serialize } from '../../src/load/serialize.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState } from '../../src/render/desired-state.ts';

const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,18}[a-z0-9]$/);
const component = fc.constantFrom('predictor', 'transformer', 'explainer');

/** One InferenceService: name, components, readiness, visibility, status URL style. */
const isvcArb = fc.record({
  name: label,
  namespace: fc.constantFrom('team-a', 'team-b', 'kubeflow-user-example-com'),
  components: fc.subarray(['transformer', 'explainer']),
  notReady: fc.subarray(['predictor', 'transformer', 'explainer']),
  clusterLocal: fc.boolean(),
  defaultSuffix: fc.boolean(),
  mode: fc.constantFrom('Serverless', 'RawDeployment', undefined),
  timeout: fc.option(fc.integer({ min: 1, max: 600 }), { nil: undefined }),
  labels: fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[a-z0-9]{0,8}$/), {
    maxKeys: 2,
  }),
  readyComponent: fc.option(component, { nil: undefined }),
});

const configArb = fc.record({
  pathTemplate: fc.constantFrom('', '/serving/{{ .Namespace }}/{{ .Name }}', '/v2/{{ .Name }}/'),
  additional: fc.subarray(['extra.example.org', 'models.example.net']),
  enableGatewayApi: fc.boolean(),
  disableIstioVirtualHost: fc.boolean(),
  ingressDomain: fc.constantFrom('example.com', 'ml.example.org'),
  defaultMode: fc.constantFrom('Serverless', 'RawDeployment'),
});

type IsvcSpec = typeof isvcArb extends fc.Arbitrary<infer T> ? T : never;
type ConfigSpec = typeof configArb extends fc.Arbitrary<infer T> ? T : never;

function isvcObject(s: IsvcSpec, domain: string): KubeObject {
  const components = ['predictor', ...s.components];
  const spec: Record<string, unknown> = {};
  for (const c of components) spec[c] = s.timeout === undefined ? {} : { timeout: s.timeout };
  const labels: Record<string, string> = { ...s.labels };
  if (s.clusterLocal) labels['networking.knative.dev/visibility'] = 'cluster-local';
  const suffix = s.defaultSuffix ? '-default' : '';
  return {
    apiVersion: 'serving.kserve.io/v1beta1',
    kind: 'InferenceService',
    metadata: {
      name: s.name,
      namespace: s.namespace,
      labels,
      ...(s.mode ? { annotations: { 'serving.kserve.io/deploymentMode': s.mode } } : {}),
    },
    spec,
    status: {
      conditions: components.map((c) => ({
        type: `${c[0]?.toUpperCase()}${c.slice(1)}Ready`,
        status: s.notReady.includes(c) ? 'False' : 'True',
      })),
      components: Object.fromEntries(
        components.map((c) => [c, { url: `http://${s.name}-${c}${suffix}.${s.namespace}.${domain}` }]),
      ),
    },
  };
}

function configMap(c: ConfigSpec): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'inferenceservice-config', namespace: 'kserve' },
    data: {
      deploy: JSON.stringify({ defaultDeploymentMode: c.defaultMode }),
      ingress: JSON.stringify({
        ingressGateway: 'knative-serving/knative-ingress-gateway',
        localGateway: 'knative-serving/knative-local-gateway',
        localGatewayService: 'knative-local-gateway.istio-system.svc.cluster.local',
        kserveIngressGateway: 'kserve/kserve-ingress-gateway',
        enableGatewayApi: c.enableGatewayApi,
        disableIstioVirtualHost: c.disableIstioVirtualHost,
        ingressDomain: c.ingressDomain,
        pathTemplate: c.pathTemplate,
        additionalIngressDomains: c.additional,
      }),
      inferenceService: '{}',
    },
  };
}

const platformArb = fc.record({
  config: configArb,
  isvcs: fc.uniqueArray(isvcArb, { minLength: 1, maxLength: 5, selector: (s) => `${s.namespace}/${s.name}` }),
});

function objectsOf(p: { config: ConfigSpec; isvcs: IsvcSpec[] }): KubeObject[] {
  const domains: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'config-domain', namespace: 'knative-serving' },
    data: { [p.config.ingressDomain]: '' },
  };
  return [configMap(p.config), domains, ...p.isvcs.map((s) => isvcObject(s, p.config.ingressDomain))];
}

const runs = { numRuns: 300 };

describe('render properties', () => {
  test('never throws, and every InferenceService either renders or reports a problem', () => {
    fc.assert(
      fc.property(platformArb, (p) => {
        const result = desiredState(Snapshot.of(objectsOf(p)), { mode: 'sidecar' });
        assert.equal(result.inferenceServices.size, p.isvcs.length);
      }),
      runs,
    );
  });

  test('is deterministic: same bytes for the same objects in any order', () => {
    fc.assert(
      fc.property(platformArb, fc.integer(), (p, seed) => {
        const objects = objectsOf(p);
        const shuffled = [...objects].sort(
          (a, b) =>
            (((a.metadata.name ?? '').length * seed) % 7) - (((b.metadata.name ?? '').length * seed) % 7),
        );
        const first = serialize(desiredState(Snapshot.of(objects), { mode: 'sidecar' }).objects, 'yaml');
        const again = serialize(desiredState(Snapshot.of(shuffled), { mode: 'sidecar' }).objects, 'yaml');
        assert.equal(again, first);
      }),
      runs,
    );
  });

  test('every authority regex compiles and matches its own host, with and without port, and no other generated host', () => {
    fc.assert(
      fc.property(platformArb, (p) => {
        const { objects } = desiredState(Snapshot.of(objectsOf(p)), { mode: 'sidecar' });
        const virtualServices = objects.filter((o) => o.kind === 'VirtualService');
        const allHosts = new Set<string>();
        for (const o of objects) {
          const spec = o['spec'] as { hosts?: string[]; hostnames?: string[] };
          for (const h of [...(spec.hosts ?? []), ...(spec.hostnames ?? [])]) allHosts.add(h);
        }
        for (const vs of virtualServices) {
          const spec = vs['spec'] as {
            hosts: string[];
            http: { match: { authority?: { regex: string } }[] }[];
          };
          for (const route of spec.http) {
            for (const match of route.match) {
              const source = match.authority?.regex;
              assert.ok(source, 'every KServe match has an authority regex');
              const re = new RegExp(source);
              const matched = [...allHosts].filter((h) => re.test(h));
              assert.equal(matched.length, 1, `${source} matches ${matched.join(', ')}`);
              const own = matched[0] as string;
              assert.ok(spec.hosts.includes(own), `${own} is a host of its VirtualService`);
              assert.ok(re.test(`${own}:8080`), `${source} accepts a port`);
              assert.ok(!re.test(`x${own}`) && !re.test(`${own}.evil`), `${source} is anchored`);
            }
          }
        }
      }),
      runs,
    );
  });

  test('every generated object passes the published schema of its kind', () => {
    fc.assert(
      fc.property(platformArb, (p) => {
        for (const o of desiredState(Snapshot.of(objectsOf(p)), { mode: 'sidecar' }).objects) {
          assert.ok(isSchemaChecked(o), `no schema for ${o.apiVersion} ${o.kind}`);
          const error = validate(o);
          assert.equal(error, undefined, `${o.kind} ${o.metadata.namespace}/${o.metadata.name}: ${error}`);
        }
      }),
      { numRuns: 150 },
    );
  });
});

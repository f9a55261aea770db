/** Kubernetes Ingress as istiod serves it (docs/semantics.md, Kubernetes Ingress), and rule KFM404. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { meshConfigFrom } from '../../src/load/mesh-config.ts';
import { ingressServed } from '../../src/mesh/kube-ingress.ts';
import { analyze } from '../../src/analyze/analyze.ts';
import { istio, namespace, pod, service, trace } from '../mesh-fixtures.ts';

type Path = { path?: string; pathType?: string; backend: Record<string, unknown> };
const backend = (name: string, port: number | string) => ({
  service: { name, port: typeof port === 'number' ? { number: port } : { name: port } },
});

function ingress(
  name: string,
  rules: { host?: string; paths: Path[] }[],
  options: { className?: string; annotation?: string; created?: string } = {},
): KubeObject {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: 'apps',
      ...(options.annotation ? { annotations: { 'kubernetes.io/ingress.class': options.annotation } } : {}),
      ...(options.created ? { creationTimestamp: options.created } : {}),
    },
    spec: {
      ...(options.className ? { ingressClassName: options.className } : {}),
      rules: rules.map((r) => ({ ...(r.host ? { host: r.host } : {}), http: { paths: r.paths } })),
    },
  };
}

const ingressClass = (name: string, controller: string): KubeObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'IngressClass',
  metadata: { name },
  spec: { controller },
});
const istioClass = ingressClass('istio', 'istio.io/ingress-controller');
const meshConfig = (mesh: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'istio', namespace: 'istio-system' },
  data: { mesh },
});

/** Istio's ingress gateway pods, a dashboard behind a `*` Gateway route, and the apps the Ingresses name. */
const base: KubeObject[] = [
  namespace('istio-system', {}),
  namespace('apps'),
  pod('istio-system', 'istio-ingressgateway', {
    sidecar: false,
    gateway: true,
    labels: { istio: 'ingressgateway' },
  }),
  istio('Gateway', 'apps', 'web', {
    selector: { istio: 'ingressgateway' },
    servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
  }),
  istio('VirtualService', 'apps', 'dashboard', {
    hosts: ['*'],
    gateways: ['web'],
    http: [{ route: [{ destination: { host: 'dashboard.apps.svc.cluster.local', port: { number: 80 } } }] }],
  }),
  ...['dashboard', 'model', 'api', 'docs'].flatMap((app) => [pod('apps', app), service('apps', app)]),
];

const answeredBy = (objects: KubeObject[], url: string) => {
  const r = trace(objects, { from: 'external', url });
  return r.answeredBy ?? `${r.response.code}`;
};

const modelIngress = (options: { className?: string; annotation?: string } = { className: 'istio' }) =>
  ingress(
    'model',
    [
      {
        host: 'model.example.com',
        paths: [{ path: '/', pathType: 'Prefix', backend: backend('model', 80) }],
      },
    ],
    options,
  );

describe('which Ingresses istiod serves', () => {
  const served = (objects: KubeObject[], i: KubeObject) => {
    const snapshot = Snapshot.of([...objects, i]);
    return ingressServed(snapshot, meshConfigFrom(snapshot), i);
  };

  test('ingressClassName istio with the IngressClass naming Istio’s controller: served, and routed', () => {
    assert.equal(served([istioClass], modelIngress()).served, true);
    assert.equal(
      answeredBy([...base, istioClass, modelIngress()], 'http://model.example.com/v1/models/m'),
      'apps/model-0',
    );
  });

  test('without the IngressClass, STRICT (Istio’s default) ignores it: the gateway’s other routes take the host', () => {
    const verdict = served([], modelIngress());
    assert.equal(verdict.served, false);
    assert.match(verdict.why, /no IngressClass istio .* ingressControllerMode is STRICT/);
    assert.equal(answeredBy([...base, modelIngress()], 'http://model.example.com/'), 'apps/dashboard-0');
  });

  test('an IngressClass of another controller: not served', () => {
    assert.equal(served([ingressClass('istio', 'k8s.io/ingress-nginx')], modelIngress()).served, false);
  });

  test('the class annotation decides before the IngressClass; OFF serves none', () => {
    assert.equal(served([], modelIngress({ annotation: 'istio' })).served, true);
    assert.equal(served([], modelIngress({ annotation: 'nginx' })).served, false);
    assert.equal(
      served([meshConfig('ingressControllerMode: OFF\n')], modelIngress({ annotation: 'istio' })).served,
      false,
    );
  });

  test('no class at all: served only in DEFAULT mode', () => {
    assert.equal(served([], modelIngress({})).served, false);
    assert.equal(served([meshConfig('ingressControllerMode: DEFAULT\n')], modelIngress({})).served, true);
  });

  test('ingressSelector picks the gateway pods', () => {
    const objects = [...base, istioClass, modelIngress(), meshConfig('ingressSelector: other\n')];
    // The derived Gateway selects `istio: other`, which no pod has: the host stays the dashboard's.
    assert.equal(answeredBy(objects, 'http://model.example.com/'), 'apps/dashboard-0');
  });
});

describe('the routes istiod derives', () => {
  const paths = ingress(
    'paths',
    [
      {
        host: 'app.example.com',
        paths: [
          { path: '/a', pathType: 'Prefix', backend: backend('model', 80) },
          { path: '/a/b', pathType: 'Exact', backend: backend('api', 80) },
          { path: '/docs/*', pathType: 'ImplementationSpecific', backend: backend('docs', 'http') },
        ],
      },
    ],
    { className: 'istio' },
  );
  const objects = [...base, istioClass, paths];

  test('Prefix matches whole path segments; Exact wins where it is longer', () => {
    assert.equal(answeredBy(objects, 'http://app.example.com/a'), 'apps/model-0');
    assert.equal(answeredBy(objects, 'http://app.example.com/a/bc'), 'apps/model-0');
    assert.equal(answeredBy(objects, 'http://app.example.com/a/b'), 'apps/api-0');
    // `/ab` is not under the segment `/a`: no route of the host takes it.
    assert.equal(answeredBy(objects, 'http://app.example.com/ab'), '404');
  });

  test('other path types by their form, a named port through the Service', () => {
    assert.equal(answeredBy(objects, 'http://app.example.com/docs/x'), 'apps/docs-0');
  });

  test('the VirtualService is named as istiod names it, and the trace says so', () => {
    const r = trace(objects, { from: 'external', url: 'http://app.example.com/a' });
    assert.equal(r.hops[0]?.virtualService, 'apps/app-example-com-paths-istio-autogenerated-k8s-ingress');
  });

  test('two Ingresses for one host: one VirtualService with the paths of both', () => {
    const second = ingress(
      'second',
      [
        {
          host: 'app.example.com',
          paths: [{ path: '/z', pathType: 'Prefix', backend: backend('docs', 80) }],
        },
      ],
      { className: 'istio', created: '2030-01-01T00:00:00Z' },
    );
    const both = [...objects, second];
    assert.equal(answeredBy(both, 'http://app.example.com/z/1'), 'apps/docs-0');
    assert.equal(answeredBy(both, 'http://app.example.com/a'), 'apps/model-0');
  });
});

describe('KFM404: an Ingress of Istio’s class that istiod does not serve', () => {
  const codes = (objects: KubeObject[]) =>
    analyze(Snapshot.of(objects, 'test.yaml'))
      .filter((f) => f.code === 'KFM404')
      .map((f) => `${f.object.name} ${f.field ?? ''}`);

  test('reported at spec.ingressClassName with the fix', () => {
    const [finding] = analyze(Snapshot.of([...base, modelIngress()], 'test.yaml')).filter(
      (f) => f.code === 'KFM404',
    );
    assert.equal(finding?.field, 'spec.ingressClassName');
    assert.match(finding?.message ?? '', /model\.example\.com/);
    assert.match(finding?.fix ?? '', /IngressClass istio with spec.controller: istio.io\/ingress-controller/);
  });

  test('not when the IngressClass is there, nor for another class', () => {
    assert.deepEqual(codes([...base, istioClass, modelIngress()]), []);
    assert.deepEqual(codes([...base, modelIngress({ className: 'nginx' })]), []);
  });
});

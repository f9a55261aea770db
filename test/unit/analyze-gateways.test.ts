/** The gateway rules (KFM411 to KFM413) on configurations that break them and ones that do not. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { only } from './analyze-fixtures.ts';

/** Istio's ingress gateway: a Deployment labelled `istio: ingressgateway` and its Service. */
export const ingressGateway = (
  ports: { port: number; targetPort?: number }[] = [{ port: 80, targetPort: 8080 }],
): KubeObject[] => [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'istio-ingressgateway', namespace: 'istio-system' },
    spec: {
      selector: { matchLabels: { istio: 'ingressgateway' } },
      template: {
        metadata: { labels: { istio: 'ingressgateway', app: 'istio-ingressgateway' } },
        spec: { containers: [{ name: 'istio-proxy', args: ['proxy', 'router'] }] },
      },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'istio-ingressgateway', namespace: 'istio-system' },
    spec: {
      selector: { istio: 'ingressgateway' },
      ports: ports.map((p, i) => ({ name: `http-${i}`, protocol: 'TCP', ...p })),
    },
  },
];

export const istioGateway = (
  name: string,
  selector: Record<string, string>,
  servers: Record<string, unknown>[],
): KubeObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace: 'kubeflow' },
  spec: { selector, servers },
});

const http = (number: number, hosts = ['*']) => ({
  port: { number, name: `http-${number}`, protocol: 'HTTP' },
  hosts,
});

describe('KFM411 gateway-port-not-on-service', () => {
  test('a selector no pod carries (IST0101), a port no Service offers (IST0162)', () => {
    const typo = only(
      [...ingressGateway(), istioGateway('g', { istio: 'ingresgateway' }, [http(80)])],
      'KFM411',
    );
    assert.equal(typo[0]?.istio?.[0]?.code, 'IST0101');
    assert.match(typo[0]?.message ?? '', /selects istio=ingresgateway, which no pod carries/);
    const port = only(
      [...ingressGateway(), istioGateway('g', { istio: 'ingressgateway' }, [http(80), http(9000)])],
      'KFM411',
    );
    assert.deepEqual(
      port.map((f) => `${f.field} ${f.istio?.[0]?.code}`),
      ['spec.servers[1].port.number IST0162'],
    );
  });

  test('a Service port or its target port will do; an input without gateway pods is not judged', () => {
    assert.deepEqual(
      only(
        [...ingressGateway(), istioGateway('g', { istio: 'ingressgateway' }, [http(80), http(8080)])],
        'KFM411',
      ),
      [],
    );
    assert.deepEqual(only([istioGateway('g', { istio: 'ingressgateway' }, [http(9000)])], 'KFM411'), []);
  });
});

describe('KFM412 conflicting-gateways', () => {
  const selector = { istio: 'ingressgateway' };
  const tls = (host: string) => ({
    port: { number: 443, name: 'https', protocol: 'HTTPS' },
    hosts: [host],
    tls: { mode: 'SIMPLE', credentialName: 'cert' },
  });

  test('TLS servers for one host and port on one pod: a warning on each Gateway', () => {
    const found = only(
      [
        ...ingressGateway(),
        istioGateway('a', selector, [tls('models.example.com')]),
        istioGateway('b', selector, [tls('models.example.com')]),
      ],
      'KFM412',
    );
    assert.deepEqual(found.map((f) => `${f.severity} ${f.object.name} ${f.istio?.[0]?.code}`).sort(), [
      'warning a IST0145',
      'warning b IST0145',
    ]);
    assert.match(found[0]?.message ?? '', /istiod serves one of the TLS servers and skips the other/);
  });

  test('plain servers merge (info); other hosts, ports or pods do not conflict', () => {
    const plain = only(
      [...ingressGateway(), istioGateway('a', selector, [http(80)]), istioGateway('b', selector, [http(80)])],
      'KFM412',
    );
    assert.deepEqual(
      plain.map((f) => f.severity),
      ['info', 'info'],
    );
    assert.deepEqual(
      only(
        [
          ...ingressGateway(),
          istioGateway('a', selector, [http(80, ['a.com'])]),
          istioGateway('b', selector, [http(80, ['b.com'])]),
        ],
        'KFM412',
      ),
      [],
    );
    assert.deepEqual(
      only(
        [
          ...ingressGateway(),
          istioGateway('a', selector, [http(80)]),
          istioGateway('b', { istio: 'other' }, [http(80)]),
        ],
        'KFM412',
      ),
      [],
    );
  });
});

describe('KFM210 selector-on-gateway-api-pods and KFM416 claim-route-without-jwt', () => {
  const gatewayApi: KubeObject = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'web', namespace: 'kubeflow' },
    spec: { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
  };
  const selecting = (spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: 'p', namespace: 'kubeflow' },
    spec,
  });

  test("a policy selecting a Gateway API gateway's pods by label (info, IST0166); targetRefs: nothing", () => {
    const found = only(
      [
        gatewayApi,
        selecting({ selector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'web' } } }),
      ],
      'KFM210',
    );
    assert.deepEqual(
      found.map((f) => `${f.severity} ${f.istio?.[0]?.code}`),
      ['info IST0166'],
    );
    const targeted = selecting({
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'web' }],
    });
    assert.deepEqual(only([gatewayApi, targeted], 'KFM210'), []);
  });

  test('a claim route at a gateway without a RequestAuthentication (IST0149); with one: nothing', () => {
    const claimRoute: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'models', namespace: 'kubeflow' },
      spec: {
        hosts: ['models.example.com'],
        gateways: ['kubeflow/g'],
        http: [
          {
            match: [{ headers: { '@request.auth.claims.groups': { exact: 'ml' } } }],
            route: [{ destination: { host: 'api' } }],
          },
        ],
      },
    };
    const objects = [
      ...ingressGateway(),
      istioGateway('g', { istio: 'ingressgateway' }, [http(80)]),
      claimRoute,
    ];
    assert.deepEqual(
      only(objects, 'KFM416').map((f) => f.istio?.[0]?.code),
      ['IST0149'],
    );
    const jwt: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'RequestAuthentication',
      metadata: { name: 'dex', namespace: 'istio-system' },
      spec: {
        selector: { matchLabels: { istio: 'ingressgateway' } },
        jwtRules: [{ issuer: 'http://dex.auth.svc.cluster.local:5556/dex' }],
      },
    };
    assert.deepEqual(only([...objects, jwt], 'KFM416'), []);
  });
});

/**
 * KFM423 rejected-by-istio-validation on objects Istio's validation refuses and accepts (the generated
 * differential in test/oracle/validation.test.ts judges the same checks against Istio's own code).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { validationProblems } from '../../src/analyze/validation.ts';
import { only } from './analyze-fixtures.ts';

const istio = (kind: string, spec: Record<string, unknown>, group = 'networking.istio.io'): KubeObject => ({
  apiVersion: `${group}/v1`,
  kind,
  metadata: { name: 'x', namespace: 'apps' },
  spec,
});
const problems = (o: KubeObject) => validationProblems(o).map((p) => p.message);
const server = (port: Record<string, unknown> | undefined, tls?: Record<string, unknown>) => ({
  hosts: ['models.example.com'],
  ...(port ? { port } : {}),
  ...(tls ? { tls } : {}),
});

describe('KFM423 rejected-by-istio-validation', () => {
  test('Gateways: servers, ports, unique port names, TLS for the protocol and its certificates', () => {
    const https = { number: 443, name: 'https', protocol: 'HTTPS' };
    assert.deepEqual(problems(istio('Gateway', { servers: [] })), [
      'a Gateway must have at least one server',
    ]);
    assert.deepEqual(problems(istio('Gateway', { servers: [server(undefined)] })), [
      'a server must have a port',
    ]);
    assert.deepEqual(problems(istio('Gateway', { servers: [server(https)] })), [
      'a HTTPS server must have TLS settings',
    ]);
    assert.deepEqual(
      problems(istio('Gateway', { servers: [server(https, { mode: 'SIMPLE', credentialName: 'c' })] })),
      [],
    );
    assert.equal(problems(istio('Gateway', { servers: [server(https, { mode: 'MUTUAL' })] })).length, 3);
    const http = { number: 80, name: 'http', protocol: 'HTTP' };
    assert.deepEqual(problems(istio('Gateway', { servers: [server(http, { httpsRedirect: true })] })), []);
    assert.deepEqual(
      problems(istio('Gateway', { servers: [server(http, { mode: 'SIMPLE', credentialName: 'c' })] })),
      ['a plain-text HTTP server may have TLS settings only to redirect to HTTPS'],
    );
    assert.match(
      problems(istio('Gateway', { servers: [server(http), server({ ...http, number: 8080 })] })).join(),
      /port names must be unique, and http is used twice/,
    );
    assert.match(
      problems(istio('Gateway', { servers: [server({ ...http, protocol: 'QUIC' })] })).join(),
      /protocol "QUIC"/,
    );
  });

  test('VirtualServices: routes, delegates, destinations and gateway names', () => {
    const route = [{ destination: { host: 'iris' } }];
    assert.deepEqual(problems(istio('VirtualService', { hosts: ['a'], http: [{ route }] })), []);
    assert.deepEqual(problems(istio('VirtualService', { hosts: ['a'] })), [
      'a VirtualService must have http, tcp or tls routes',
    ]);
    assert.deepEqual(problems(istio('VirtualService', { hosts: ['a'], http: [{ timeout: '1s' }] })), [
      'an HTTP rule must route, redirect or respond directly',
    ]);
    assert.deepEqual(
      problems(istio('VirtualService', { hosts: ['a'], http: [{ route, redirect: { uri: '/' } }] })),
      ['a rule cannot both route and redirect'],
    );
    assert.deepEqual(
      problems(istio('VirtualService', { hosts: ['a'], http: [{ delegate: { name: 'd' } }] })),
      [],
    );
    assert.deepEqual(problems(istio('VirtualService', { http: [{ route }], tcp: [{ route }] })), [
      'a VirtualService without hosts (a delegate) cannot have tcp',
    ]);
    assert.deepEqual(problems(istio('VirtualService', { hosts: ['a'], tcp: [{ route: [{}] }] })), [
      'a route must have a destination',
    ]);
    assert.match(
      problems(
        istio('VirtualService', { hosts: ['a'], gateways: ['kubeflow/gw~x'], http: [{ route }] }),
      ).join(),
      /"gw~x" is not a valid Gateway name/,
    );
    assert.deepEqual(
      problems(
        istio('VirtualService', { hosts: ['a'], gateways: ['kubeflow/gw', 'mesh'], http: [{ route }] }),
      ),
      [],
    );
  });

  test('Sidecars, ServiceEntries and policies that both select and target', () => {
    assert.equal(problems(istio('Sidecar', {})).length, 1);
    assert.deepEqual(problems(istio('Sidecar', { outboundTrafficPolicy: { mode: 'REGISTRY_ONLY' } })), []);
    const ports = [{ number: 443, name: 'tls', protocol: 'TLS' }];
    assert.deepEqual(
      problems(istio('ServiceEntry', { hosts: ['*.example.com'], ports, resolution: 'NONE' })),
      [],
    );
    assert.deepEqual(
      problems(istio('ServiceEntry', { hosts: ['*.example.com'], ports, resolution: 'DNS' })),
      ['host *.example.com has a wildcard, which DNS resolution without endpoints cannot resolve'],
    );
    assert.deepEqual(problems(istio('ServiceEntry', { hosts: ['*'], ports })), [
      'a ServiceEntry cannot have the host *',
    ]);
    const target = { group: '', kind: 'Service', name: 'iris' };
    assert.equal(
      problems(istio('AuthorizationPolicy', { selector: {}, targetRefs: [target] }, 'security.istio.io'))
        .length,
      1,
    );
    assert.deepEqual(
      problems(istio('AuthorizationPolicy', { targetRefs: [target] }, 'security.istio.io')),
      [],
    );
  });

  test('findings carry IST0106 and the field', () => {
    const found = only([istio('Gateway', { selector: { istio: 'ingressgateway' }, servers: [] })], 'KFM423');
    assert.deepEqual(
      found.map((f) => [f.field, f.istio?.[0]?.code]),
      [['spec.servers', 'IST0106']],
    );
  });
});

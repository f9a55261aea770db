/**
 * KFM423 judged by Istio's own validation, on objects drawn at random: Gateways (servers, hosts, ports,
 * protocols, TLS modes and certificate sources), VirtualServices (HTTP rules that route, redirect, respond
 * directly, delegate, rewrite, inject faults and mirror; TCP routes with and without destinations; gateway
 * references), Sidecars (each of their four parts present or not), ServiceEntries (hosts, wildcards,
 * resolutions, endpoints) and policies that select workloads, name targets, or both. The oracle runs
 * istioctl's analyzers on all of them at once; for every object, istioctl's validation error (IST0106) and a
 * KFM423 finding must come together. What varies is what KFM423 checks; every other field is drawn valid,
 * so this says nothing about the rest of Istio's validation (header names, durations, ...). Regexes are
 * drawn from a few that Istio compiles or refuses; test/oracle/regex.test.ts judges RE2's syntax at large.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { analyze } from '../../src/analyze/analyze.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { loadPaths } from '../../src/load/files.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { writeManifest } from '../cli-process.ts';
import { istioAnalyze } from './istio-analyze.ts';
import { oracleTestOptions } from './istio-oracle.ts';

const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

const tls = fc.record(
  {
    mode: opt(
      fc.constantFrom(
        'PASSTHROUGH',
        'SIMPLE',
        'MUTUAL',
        'OPTIONAL_MUTUAL',
        'AUTO_PASSTHROUGH',
        'ISTIO_MUTUAL',
      ),
    ),
    credentialName: opt(fc.constant('model-cert')),
    serverCertificate: opt(fc.constant('/etc/certs/cert.pem')),
    privateKey: opt(fc.constant('/etc/certs/key.pem')),
    caCertificates: opt(fc.constant('/etc/certs/ca.pem')),
    httpsRedirect: opt(fc.constant(true)),
  },
  { requiredKeys: [] },
);
const server = fc.record(
  {
    hosts: fc.constantFrom([], ['*'], ['models.example.com'], ['kubeflow/*']),
    port: opt(
      fc.record(
        {
          number: fc.constantFrom(80, 443, 8443, 0),
          name: fc.constantFrom('http', 'https', 'tcp', ''),
          protocol: fc.constantFrom('HTTP', 'HTTPS', 'TLS', 'TCP', 'http2', 'GRPC', 'QUIC'),
        },
        { requiredKeys: ['number', 'protocol'] },
      ),
    ),
    tls: opt(tls),
  },
  { requiredKeys: ['hosts'] },
);
const gateway = fc.array(server, { maxLength: 3 }).map((servers) => ({
  kind: 'Gateway',
  apiVersion: 'networking.istio.io/v1',
  spec: { selector: { istio: 'ingressgateway' }, servers },
}));

const destination = fc.constantFrom(
  { destination: { host: 'iris' } },
  {},
  { destination: { host: 'iris' }, weight: -5 },
  { destination: { host: 'iris' }, weight: 30 },
);
/** Regexes Istio compiles and refuses: RE2 syntax, Perl syntax, empty, too long, `*`. */
const regex = fc.constantFrom(
  '/v1/[[:digit:]]+',
  '(?P<m>[a-z]+)\\.example\\.com',
  '(?i)/API/.*',
  '([',
  '/v1/(?!x).*',
  '',
  '*',
  'a'.repeat(1025),
  '\\pL+\\z',
);
const match = fc.record(
  {
    uri: regex.map((r) => ({ regex: r })),
    authority: regex.map((r) => ({ regex: r })),
    headers: regex.map((r) => ({ 'x-model': { regex: r } })),
    withoutHeaders: regex.map((r) => ({ 'x-model': { regex: r } })),
    queryParams: regex.map((r) => ({ v: { regex: r } })),
  },
  { requiredKeys: [] },
);
const percentage = fc.constantFrom(0, 0.00001, 1, 100, 150, -1);
const httpRule = fc.record(
  {
    match: fc.array(match, { maxLength: 1 }),
    route: fc.array(destination, { maxLength: 2 }),
    redirect: fc.constant({ uri: '/v2' }),
    directResponse: fc.constant({ status: 503 }),
    fault: percentage.map((value) => ({ abort: { httpStatus: 500, percentage: { value } } })),
    mirrorPercentage: fc.constantFrom(50, 101, -3).map((value) => ({ value })),
    rewrite: fc.constantFrom(
      { uri: '/v1' },
      { uriRegexRewrite: { match: '^/v1/(.*)', rewrite: '/\\1' } },
      { uriRegexRewrite: { match: '([', rewrite: '/' } },
    ),
    delegate: fc.constant({ name: 'models', namespace: 'kubeflow' }),
    mirror: fc.constant({ host: 'shadow' }),
    mirrors: fc.constant([{ destination: { host: 'shadow' } }]),
  },
  { requiredKeys: [] },
);
const virtualService = fc
  .record(
    {
      delegated: fc.boolean(),
      gateways: fc.constantFrom(
        ['mesh'],
        ['kubeflow/kubeflow-gateway'],
        ['kubeflow/gw~internal'],
        ['Kubeflow/gw'],
        ['kubeflow/gw.v1'],
        ['/gw'],
      ),
      http: fc.array(httpRule, { maxLength: 2 }),
      tcp: fc.array(fc.record({ route: fc.array(destination, { maxLength: 1 }) }), { maxLength: 1 }),
    },
    { requiredKeys: ['delegated', 'gateways'] },
  )
  .map(({ delegated, ...spec }) => ({
    kind: 'VirtualService',
    apiVersion: 'networking.istio.io/v1',
    spec: { ...(delegated ? {} : { hosts: ['iris.example.com'] }), ...spec },
  }));

const sidecar = fc
  .record(
    {
      egress: fc.constant([{ hosts: ['./*', 'istio-system/*'] }]),
      ingress: fc.constant([
        { port: { number: 8080, name: 'http', protocol: 'HTTP' }, defaultEndpoint: '127.0.0.1:8080' },
      ]),
      outboundTrafficPolicy: fc.constant({ mode: 'REGISTRY_ONLY' }),
      inboundConnectionPool: fc.constant({ http: { http1MaxPendingRequests: 10 } }),
    },
    { requiredKeys: [] },
  )
  .map((spec) => ({ kind: 'Sidecar', apiVersion: 'networking.istio.io/v1', spec }));

const serviceEntry = fc
  .record({
    hosts: fc.constantFrom([], ['*'], ['*.example.com'], ['db.example.com']),
    resolution: fc.constantFrom('DNS', 'NONE', 'DNS_ROUND_ROBIN'),
    endpoints: opt(fc.constant([{ address: 'db.internal.example.com' }])),
  })
  .map(({ endpoints, ...spec }) => ({
    kind: 'ServiceEntry',
    apiVersion: 'networking.istio.io/v1',
    spec: {
      ...spec,
      ports: [{ number: 5432, name: 'tcp', protocol: 'TCP' }],
      ...(endpoints ? { endpoints } : {}),
    },
  }));

const policy = fc
  .record(
    {
      kind: fc.constantFrom('AuthorizationPolicy', 'RequestAuthentication'),
      selector: fc.constantFrom({ matchLabels: { app: 'iris' } }, {}),
      targetRef: fc.constant({ group: '', kind: 'Service', name: 'iris' }),
      targetRefs: fc.constant([{ group: '', kind: 'Service', name: 'iris' }]),
    },
    { requiredKeys: ['kind'] },
  )
  .map(({ kind, ...spec }) => ({ kind, apiVersion: 'security.istio.io/v1', spec }));

const drawn = fc.oneof(gateway, virtualService, sidecar, serviceEntry, policy);

describe("KFM423 judged by Istio's validation on generated objects", oracleTestOptions(), () => {
  test('every object: IST0106 from istioctl exactly where kfmesh finds KFM423', async () => {
    const objects: KubeObject[] = fc
      .sample(drawn, {
        seed: Number(process.env['KFMESH_PROPERTY_SEED'] ?? 20261207),
        numRuns: Number(process.env['KFMESH_VALIDATION_RUNS'] ?? 1000),
      })
      .map((o, i) => ({ ...o, metadata: { name: `o${i}`, namespace: 'kubeflow' } }) as KubeObject);
    const file = writeManifest(objects, 'validation.yaml');
    const snapshot = new Snapshot(await loadPaths([file]));
    assert.deepEqual(snapshot.problems, [], 'the generated objects pass the CRDs');
    const kfmesh = new Map(
      analyze(snapshot, { now: new Date() })
        .filter((f) => f.code === 'KFM423')
        .map((f) => [`${f.object.kind} ${f.object.name}`, f.message]),
    );
    const istio = istioAnalyze([file]);
    const refused = new Map<string, string>();
    for (const m of istio.messages) if (m.code === 'IST0106') refused.set(`${m.kind} ${m.name}`, m.text);
    const differ = objects
      .map((o) => `${o.kind} ${o.metadata.name}`)
      .filter((k) => kfmesh.has(k) !== refused.has(k))
      .map(
        (k) => `${k}: istioctl ${refused.get(k) ?? 'accepts it'}; kfmesh ${kfmesh.get(k) ?? 'accepts it'}`,
      );
    console.log(
      `${objects.length} objects: ${refused.size} refused by Istio's validation, ${differ.length} judged otherwise by kfmesh`,
    );
    assert.deepEqual(differ, []);
    assert.ok(refused.size > objects.length / 5 && refused.size < objects.length, 'both outcomes are drawn');
  });
});

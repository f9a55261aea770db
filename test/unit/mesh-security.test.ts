/** mTLS, authorization and version-dependent labels (docs/semantics.md: mTLS and identity, authorization, V4, V5). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bookinfo, istio, labelsOf, namespace, pod, service, trace } from '../mesh-fixtures.ts';
import { examplePlatform } from '../../src/example/platform.ts';

const from = 'default/productpage-0';
const url = 'http://reviews:9080/reviews/1';
const pa = (ns: string, name: string, spec: Record<string, unknown>, created?: string) =>
  istio('PeerAuthentication', ns, name, spec, created);
const policy = (ns: string, name: string, spec: Record<string, unknown>) =>
  istio('AuthorizationPolicy', ns, name, spec);
/** A RequestAuthentication for the reviews pods. */
const requestAuthn = (spec: Record<string, unknown>) =>
  istio('RequestAuthentication', 'default', 'jwt', {
    selector: { matchLabels: { app: 'reviews' } },
    ...spec,
  });
/** A token with these claims (its signature is not checked offline). */
const jwt = (claims: object) => `Bearer e30.${btoa(JSON.stringify(claims)).replace(/=+$/, '')}.sig`;

describe('PeerAuthentication and client TLS', () => {
  const plaintextClient = istio('DestinationRule', 'default', 'reviews', {
    host: 'reviews',
    trafficPolicy: { tls: { mode: 'DISABLE' } },
  });

  test('STRICT rejects plaintext: the connection is reset, the client reports 503 UC, the server nothing', () => {
    const r = trace(
      [...bookinfo(), pa('istio-system', 'default', { mtls: { mode: 'STRICT' } }), plaintextClient],
      { from, url },
    );
    assert.deepEqual(r.response, { code: 503, flags: 'UC' });
    assert.equal(r.hops[1]?.decision, 'deny');
    assert.ok(!r.telemetry.some((t) => t.reporter === 'destination'));
    assert.equal(labelsOf(r, 'source')['response_flags'], 'UC');
  });

  test('STRICT and a client without a proxy: the client itself sees the reset (no HTTP status)', () => {
    const r = trace(
      [
        ...bookinfo(),
        pa('istio-system', 'default', { mtls: { mode: 'STRICT' } }),
        pod('default', 'plain', { sidecar: false }),
      ],
      { from: 'default/plain-0', url },
    );
    assert.deepEqual(r.response, { code: 0, flags: '-' });
    assert.equal(r.hops.at(-1)?.decision, 'deny');
  });

  test('workload policy beats namespace policy beats the root namespace; port-level settings win', () => {
    const objects = [
      ...bookinfo(),
      plaintextClient,
      pa('istio-system', 'mesh', { mtls: { mode: 'STRICT' } }),
      pa('default', 'ns', { mtls: { mode: 'STRICT' } }),
      pa('default', 'reviews', {
        selector: { matchLabels: { app: 'reviews' } },
        mtls: { mode: 'STRICT' },
        portLevelMtls: { '9080': { mode: 'PERMISSIVE' } },
      }),
    ];
    const r = trace(objects, { from, url });
    assert.equal(r.response.code, 200);
    assert.match(r.hops[1]?.tls ?? '', /PERMISSIVE \(default\/reviews \(port 9080\)\)/);
    const noPort = objects.map((o) =>
      o.metadata.name === 'reviews' && o.kind === 'PeerAuthentication'
        ? pa('default', 'reviews', {
            selector: { matchLabels: { app: 'reviews' } },
            mtls: { mode: 'PERMISSIVE' },
          })
        : o,
    );
    assert.equal(trace(noPort, { from, url }).response.code, 200);
    const nsStrict = objects.filter(
      (o) => !(o.kind === 'PeerAuthentication' && o.metadata.name === 'reviews'),
    );
    assert.equal(trace(nsStrict, { from, url }).response.code, 503);
  });

  test('auto-mTLS: mTLS to pods with the sidecar label, plaintext to pods without; a DestinationRule wins', () => {
    assert.equal(trace(bookinfo(), { from, url }).hops[0]?.mtls, true);
    const noSidecar = [
      namespace('default'),
      pod('default', 'productpage'),
      pod('default', 'reviews', { sidecar: false }),
      service('default', 'reviews', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
    ];
    const r = trace(noSidecar, { from, url });
    assert.equal(r.hops[0]?.mtls, false);
    assert.deepEqual(
      r.hops.map((h) => h.kind),
      ['sidecar'],
    );
    const forced = [
      ...noSidecar,
      istio('DestinationRule', 'default', 'reviews', {
        host: 'reviews',
        trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } },
      }),
    ];
    assert.deepEqual(trace(forced, { from, url }).response, { code: 503, flags: 'UF' });
  });

  test('DestinationRule precedence: the client namespace, then the service namespace, then the root; most specific host', () => {
    const objects = [
      ...bookinfo(),
      istio('DestinationRule', 'istio-system', 'mesh', {
        host: '*.local',
        trafficPolicy: { tls: { mode: 'DISABLE' } },
      }),
      istio('DestinationRule', 'default', 'all', {
        host: '*.default.svc.cluster.local',
        trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } },
      }),
    ];
    assert.match(
      trace(objects, { from, url }).hops[0]?.tls ?? '',
      /ISTIO_MUTUAL \(DestinationRule default\/all\)/,
    );
  });
});

describe('AuthorizationPolicy on sidecars', () => {
  const cases: {
    name: string;
    policies: Record<string, unknown>[];
    headers?: Record<string, string>;
    method?: string;
    code: number;
    policy?: string;
  }[] = [
    { name: 'no policy: allow', policies: [], code: 200 },
    {
      name: 'ALLOW that matches the principal: allow',
      policies: [
        {
          action: 'ALLOW',
          rules: [{ from: [{ source: { principals: ['cluster.local/ns/default/sa/productpage'] } }] }],
        },
      ],
      code: 200,
      policy: 'default/p0',
    },
    {
      name: 'ALLOW that matches nothing: deny (default deny once an ALLOW applies)',
      policies: [{ action: 'ALLOW', rules: [{ from: [{ source: { namespaces: ['other'] } }] }] }],
      code: 403,
    },
    { name: 'ALLOW with no rules: allow nothing', policies: [{ action: 'ALLOW' }], code: 403 },
    {
      name: 'DENY on the method: deny',
      policies: [{ action: 'DENY', rules: [{ to: [{ operation: { methods: ['POST'] } }] }] }],
      method: 'POST',
      code: 403,
      policy: 'default/p0',
    },
    {
      name: 'DENY on another path: allow',
      policies: [{ action: 'DENY', rules: [{ to: [{ operation: { paths: ['/admin/*'] } }] }] }],
      code: 200,
    },
    {
      name: 'DENY beats ALLOW',
      policies: [
        { action: 'ALLOW', rules: [{}] },
        { action: 'DENY', rules: [{ from: [{ source: { namespaces: ['default'] } }] }] },
      ],
      code: 403,
    },
    {
      name: 'when on a request header',
      policies: [
        { action: 'ALLOW', rules: [{ when: [{ key: 'request.headers[x-user]', values: ['alice'] }] }] },
      ],
      headers: { 'X-User': 'alice' },
      code: 200,
    },
    {
      name: 'path template {*}',
      policies: [{ action: 'ALLOW', rules: [{ to: [{ operation: { paths: ['/reviews/{*}'] } }] }] }],
      code: 200,
    },
    {
      name: 'serviceAccounts (policy namespace default)',
      policies: [{ action: 'ALLOW', rules: [{ from: [{ source: { serviceAccounts: ['productpage'] } }] }] }],
      code: 200,
    },
    {
      name: 'targetRefs are ignored by sidecars',
      policies: [{ action: 'DENY', targetRefs: [{ kind: 'Gateway', name: 'waypoint' }], rules: [{}] }],
      code: 200,
    },
    {
      name: 'a selector that does not select the workload does not apply',
      policies: [{ action: 'DENY', selector: { matchLabels: { app: 'other' } }, rules: [{}] }],
      code: 200,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const objects = [...bookinfo(), ...c.policies.map((spec, i) => policy('default', `p${i}`, spec))];
      const r = trace(objects, {
        from,
        url,
        ...(c.method ? { method: c.method } : {}),
        ...(c.headers ? { headers: c.headers } : {}),
      });
      assert.equal(r.response.code, c.code, JSON.stringify(r.hops[1]?.notes));
      if (c.policy) assert.equal(r.hops[1]?.policy, c.policy);
      if (c.code === 403) assert.equal(labelsOf(r, 'destination')['response_code'], '403');
    });
  }

  test('principals need mTLS: without it an ALLOW on principals denies', () => {
    const objects = [
      ...bookinfo(),
      istio('DestinationRule', 'default', 'reviews', {
        host: 'reviews',
        trafficPolicy: { tls: { mode: 'DISABLE' } },
      }),
      policy('default', 'p', { action: 'ALLOW', rules: [{ from: [{ source: { principals: ['*'] } }] }] }),
    ];
    assert.equal(trace(objects, { from, url }).response.code, 403);
  });

  test('a root-namespace policy applies mesh-wide', () => {
    assert.equal(
      trace([...bookinfo(), policy('istio-system', 'deny-all', { action: 'DENY', rules: [{}] })], {
        from,
        url,
      }).response.code,
      403,
    );
  });

  test('requestPrincipals from a bearer JWT (iss/sub), once a RequestAuthentication verifies it', () => {
    const objects = [
      ...bookinfo(),
      policy('default', 'p', {
        action: 'ALLOW',
        rules: [{ from: [{ source: { requestPrincipals: ['https://issuer/*'] } }] }],
      }),
    ];
    const headers = { Authorization: jwt({ iss: 'https://issuer', sub: 'u1' }) };
    // No RequestAuthentication: nothing verifies the token, so there is no request principal.
    assert.equal(trace(objects, { from, url, headers }).response.code, 403);
    const verified = [...objects, requestAuthn({ jwtRules: [{ issuer: 'https://issuer' }] })];
    assert.equal(trace(verified, { from, url, headers }).response.code, 200);
    assert.equal(trace(verified, { from, url }).response.code, 403);
  });

  test('CUSTOM policies are noted; the external decision is assumed to allow', () => {
    const objects = [
      ...bookinfo(),
      policy('default', 'ext', { action: 'CUSTOM', provider: { name: 'oauth2-proxy' }, rules: [{}] }),
    ];
    const r = trace(objects, { from, url });
    assert.equal(r.response.code, 200);
    assert.ok(r.hops[1]?.notes.some((n) => n.includes('CUSTOM default/ext (provider oauth2-proxy)')));
  });
});

describe('labels that depend on the Istio version', () => {
  const objects = [
    namespace('default'),
    namespace('backend'),
    pod('default', 'productpage'),
    pod('default', 'reviews', { sa: 'bookinfo-reviews' }),
    service('backend', 'reviews', {
      ports: [{ name: 'http', port: 9080, targetPort: 9080 }],
      selector: { app: 'reviews' },
    }),
  ];
  const remote = { from, url: 'http://reviews.backend:9080/' };

  test('an endpoint outside the service namespace has no endpoints there; the registry decides the namespace label', () => {
    // The selector only finds pods in the Service's own namespace, so this service has no endpoints: 503 UH.
    assert.deepEqual(trace(objects, remote).response, { code: 503, flags: 'UH' });
  });

  test('client destination_service_namespace: the peer namespace before 1.23, the cluster service namespace from 1.23', () => {
    const endpoints = {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'reviews', namespace: 'backend' },
      subsets: [
        {
          addresses: [{ ip: (objects[3]?.['status'] as { podIP: string }).podIP }],
          ports: [{ name: 'http', port: 9080 }],
        },
      ],
    };
    const withEndpoints = [...objects, endpoints];
    assert.equal(
      labelsOf(trace(withEndpoints, remote, '1.22'), 'source')['destination_service_namespace'],
      'default',
    );
    assert.equal(
      labelsOf(trace(withEndpoints, remote, '1.23'), 'source')['destination_service_namespace'],
      'backend',
    );
  });

  test('client destination_principal without mTLS: unknown before 1.25, the peer identity from 1.25', () => {
    const plaintext = [
      ...bookinfo(),
      istio('DestinationRule', 'default', 'reviews', {
        host: 'reviews',
        trafficPolicy: { tls: { mode: 'DISABLE' } },
      }),
    ];
    assert.equal(
      labelsOf(trace(plaintext, { from, url }, '1.24'), 'source')['destination_principal'],
      'unknown',
    );
    assert.equal(
      labelsOf(trace(plaintext, { from, url }, '1.25'), 'source')['destination_principal'],
      'spiffe://cluster.local/ns/default/sa/bookinfo-reviews',
    );
  });
});

describe('RequestAuthentication: the JWT step before authorization', () => {
  const issuer = 'https://issuer';
  const onlyUser = (user: string) =>
    policy('default', 'owner', {
      action: 'ALLOW',
      rules: [{ when: [{ key: 'request.headers[x-user]', values: [user] }] }],
    });

  test('a token of an issuer no rule takes is refused with 401; no token goes on without a principal', () => {
    const objects = [...bookinfo(), requestAuthn({ jwtRules: [{ issuer }] })];
    const other = trace(objects, {
      from,
      url,
      headers: { Authorization: jwt({ iss: 'https://other', sub: 'x' }) },
    });
    assert.equal(other.response.code, 401);
    assert.match(other.summary, /Jwt issuer is not configured/);
    assert.equal(
      trace(objects, { from, url, headers: { Authorization: 'Bearer not-a-jwt' } }).response.code,
      401,
    );
    assert.equal(trace(objects, { from, url }).response.code, 200);
  });

  test('audiences: a token for another audience is refused', () => {
    const objects = [...bookinfo(), requestAuthn({ jwtRules: [{ issuer, audiences: ['reviews'] }] })];
    const headers = (aud: unknown) => ({ Authorization: jwt({ iss: issuer, sub: 'u', aud }) });
    assert.equal(trace(objects, { from, url, headers: headers('other') }).response.code, 401);
    assert.equal(trace(objects, { from, url, headers: headers(['other', 'reviews']) }).response.code, 200);
  });

  test('outputClaimToHeaders overwrites what the client sent; a list claim is not written', () => {
    const objects = [
      ...bookinfo(),
      onlyUser('alice'),
      requestAuthn({ jwtRules: [{ issuer, outputClaimToHeaders: [{ header: 'x-user', claim: 'email' }] }] }),
    ];
    const as = (email: unknown) => ({
      Authorization: jwt({ iss: issuer, sub: 'u', email }),
      'x-user': 'alice',
    });
    // Another user's token and a forged header: the header is the token's.
    assert.equal(trace(objects, { from, url, headers: as('bob') }).response.code, 403);
    assert.equal(trace(objects, { from, url, headers: as('alice') }).response.code, 200);
    // A list claim is not copied, so the client's own header stays.
    assert.equal(trace(objects, { from, url, headers: as(['bob']) }).response.code, 200);
    // Without a RequestAuthentication nothing writes the header.
    const unverified = objects.filter((o) => o.kind !== 'RequestAuthentication');
    assert.equal(trace(unverified, { from, url, headers: as('bob') }).response.code, 200);
  });

  test('a verified token is removed from its header unless forwardOriginalToken', () => {
    const needsToken = policy('default', 'token', {
      action: 'ALLOW',
      rules: [{ when: [{ key: 'request.headers[authorization]', values: ['*'] }] }],
    });
    const headers = { Authorization: jwt({ iss: issuer, sub: 'u' }) };
    const objects = (forward: boolean) => [
      ...bookinfo(),
      needsToken,
      requestAuthn({ jwtRules: [{ issuer, forwardOriginalToken: forward }] }),
    ];
    assert.equal(trace(objects(false), { from, url, headers }).response.code, 403);
    assert.equal(trace(objects(true), { from, url, headers }).response.code, 200);
  });

  test('fromHeaders and fromParams say where the token is; the default places are then not read', () => {
    const objects = [
      ...bookinfo(),
      policy('default', 'p', {
        action: 'ALLOW',
        rules: [{ from: [{ source: { requestPrincipals: ['*'] } }] }],
      }),
      requestAuthn({
        jwtRules: [{ issuer, fromHeaders: [{ name: 'x-jwt-assertion' }], fromParams: ['token'] }],
      }),
    ];
    const token = jwt({ iss: issuer, sub: 'u' }).slice('Bearer '.length);
    assert.equal(trace(objects, { from, url, headers: { 'x-jwt-assertion': token } }).response.code, 200);
    assert.equal(trace(objects, { from, url: `${url}?token=${token}` }).response.code, 200);
    assert.equal(
      trace(objects, { from, url, headers: { Authorization: `Bearer ${token}` } }).response.code,
      403,
    );
  });

  test("Kubeflow's front door: another user's token with a forged kubeflow-userid is refused at the notebook", () => {
    const dex = 'http://dex.auth.svc.cluster.local:5556/dex';
    const notebook = 'http://kubeflow.example.com/notebook/kubeflow-user-example-com/my-notebook/';
    const as = (email: string) => ({
      Authorization: jwt({ iss: dex, sub: email, email }),
      'kubeflow-userid': 'user@example.com',
    });
    const objects = examplePlatform();
    const bob = trace(objects, { from: 'external', url: notebook, headers: as('bob@example.com') });
    assert.equal(bob.response.code, 403);
    assert.ok(bob.hops[0]?.notes.includes('JWT: header kubeflow-userid set from claim email'));
    assert.equal(
      trace(objects, { from: 'external', url: notebook, headers: as('user@example.com') }).response.code,
      200,
    );
  });
});

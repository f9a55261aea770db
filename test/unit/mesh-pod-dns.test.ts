/** A pod's own DNS name under a headless Service (docs/semantics.md, Sidecar outbound), traced. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { tracedOutcome } from '../../src/verify/equivalence.ts';
import { istio, namespace, pod, service, trace } from '../mesh-fixtures.ts';

/** A StatefulSet `db` (two replicas; kfmesh models its first pod) under the headless Service `db`. */
const statefulSet = (serviceName: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'db', namespace: 'apps' },
  spec: {
    serviceName,
    replicas: 2,
    selector: { matchLabels: { app: 'db' } },
    template: {
      metadata: { labels: { app: 'db' } },
      spec: { serviceAccountName: 'db', containers: [{ name: 'db' }] },
    },
  },
});
const headless = service('apps', 'db', {
  ip: 'None',
  ports: [{ name: 'http', port: 8080, targetPort: 8080 }],
});
const base = [namespace('client'), namespace('apps'), pod('client', 'client'), headless];
const from = 'client/client-0';

describe("a pod's name under a headless Service", () => {
  test('resolves to that pod; the sidecar routes it by the Service’s wildcard domain, with mTLS', () => {
    const r = trace([...base, statefulSet('db')], {
      from,
      url: 'http://db-0.db.apps.svc.cluster.local:8080/',
    });
    assert.equal(r.answeredBy, 'apps/db');
    assert.equal(r.hops[0]?.mtls, true);
    assert.match(r.hops[0]?.cluster ?? '', /^outbound\|8080\|\|db\.apps\.svc\.cluster\.local$/);
  });

  test('shorter forms complete through the search list', () => {
    for (const host of ['db-0.db.apps', 'db-0.db.apps.svc'])
      assert.equal(
        trace([...base, statefulSet('db')], { from, url: `http://${host}:8080/` }).answeredBy,
        'apps/db',
      );
  });

  test('a policy on the pod sees the caller’s identity through that name', () => {
    const deny = istio('AuthorizationPolicy', 'apps', 'deny-client', {
      selector: { matchLabels: { app: 'db' } },
      action: 'DENY',
      rules: [{ from: [{ source: { namespaces: ['client'] } }] }],
    });
    const r = trace([...base, statefulSet('db'), deny], {
      from,
      url: 'http://db-0.db.apps.svc.cluster.local:8080/',
    });
    assert.equal(r.response.code, 403);
  });

  test('no such name for the pods of a StatefulSet under another Service', () => {
    const other = trace([...base, statefulSet('other')], {
      from,
      url: 'http://db-0.db.apps.svc.cluster.local:8080/',
    });
    assert.notEqual(other.answeredBy, 'apps/db');
  });
});

describe('the equivalence check reaches a pod by its own name', () => {
  test('refused by its address (no identity through PassthroughCluster), reached by its name: reached', () => {
    // An ALLOW that names the client's identity: the pod's address from a sidecar carries none.
    const allow = istio('AuthorizationPolicy', 'apps', 'only-client', {
      selector: { matchLabels: { app: 'db' } },
      action: 'ALLOW',
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/client/sa/client'] } }] }],
    });
    const mesh = compileMesh(Snapshot.of([...base, statefulSet('db'), allow]));
    const db = mesh.workloadByName.get('apps/db');
    assert.ok(db);
    const request = { from, method: 'GET', url: `http://${db.ip}:8080/`, headers: {}, pod: 'apps/db' };
    const byAddress = tracedOutcome(mesh, { ...request, pod: undefined });
    assert.equal(byAddress.outcome.verdict, 'denied');
    const outcome = tracedOutcome(mesh, request).outcome;
    assert.equal(outcome.verdict, 'allowed');
    assert.equal(outcome.answeredBy, 'apps/db');
  });
});

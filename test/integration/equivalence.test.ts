/**
 * The equivalence check on the example platform's migration: it accepts the migration as kfmesh writes
 * it, and catches a widened policy and a dropped L7 rule slipped into it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { checkEquivalence, type EquivalenceResult } from '../../src/verify/equivalence.ts';

const before = examplePlatform();
const migrated = migrateToAmbient(Snapshot.of(before)).objects;

function check(after: readonly KubeObject[]): EquivalenceResult {
  return checkEquivalence(Snapshot.of(before), Snapshot.of(after));
}

/** The migrated platform with one object replaced (or removed when `next` is undefined). */
function edited(
  kind: string,
  namespace: string,
  name: string,
  next?: (o: KubeObject) => KubeObject,
): KubeObject[] {
  const out: KubeObject[] = [];
  let found = false;
  for (const o of migrated) {
    if (o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name) {
      found = true;
      if (next) out.push(next(o));
    } else out.push(o);
  }
  assert.ok(found, `${kind} ${namespace}/${name} is in the migrated platform`);
  return out;
}

describe('verify --equivalence on the example platform', () => {
  test('accepts the migration: nothing denied before is allowed after', () => {
    const result = check(migrated);
    assert.ok(result.requests > 1000, `${result.requests} requests`);
    assert.equal(result.errors, 0, JSON.stringify(result.groups.filter((g) => g.severity === 'error')));
    // What does change is listed: the pipelines UI is no longer reachable from outside the mesh without
    // the waypoint (ztunnel enforces its L4 rules there).
    assert.ok(result.groups.some((g) => g.severity === 'warning' && /kubeflow\/ml-pipeline/.test(g.cause)));
    assert.equal(result.unchanged + result.errors + result.warnings + result.notes, result.requests);
  });

  test('one client per class gives what tracing every client gives, with fewer traces', () => {
    const counts = (r: EquivalenceResult) => ({
      ...r,
      traces: 0,
      groups: r.groups.map((g) => `${g.severity} ${g.count} ${g.cause}`),
    });
    const classes = check(migrated);
    const exhaustive = checkEquivalence(Snapshot.of(before), Snapshot.of(migrated), { exhaustive: true });
    assert.deepEqual(counts(classes), counts(exhaustive));
    assert.ok(classes.traces < exhaustive.traces, `${classes.traces} < ${exhaustive.traces}`);
  });

  test('the same configuration twice: every request unchanged', () => {
    const result = checkEquivalence(Snapshot.of(before), Snapshot.of(before));
    assert.equal(result.unchanged, result.requests);
    assert.deepEqual(result.groups, []);
  });

  test('catches a widened policy: the pipelines API policy (on its kept sidecar) allowing everyone', () => {
    const widened = edited('AuthorizationPolicy', 'kubeflow', 'ml-pipeline', (o) => ({
      ...o,
      spec: { ...(o['spec'] as object), rules: [{}] },
    }));
    const result = check(widened);
    assert.ok(result.errors > 0);
    const error = result.groups.find((g) => g.severity === 'error');
    assert.match(
      error?.cause ?? '',
      /^denied at .*kubeflow\/ml-pipeline.* → answered by kubeflow\/ml-pipeline$/,
    );
  });

  test('catches a ztunnel ALLOW that lets callers of the pipelines UI pod skip its waypoint (finding 4)', () => {
    // Only requests to the pod's own address open: Service requests still pass the waypoint.
    const allowAll: KubeObject = {
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'allow-all', namespace: 'kubeflow' },
      spec: { selector: { matchLabels: { app: 'ml-pipeline-ui' } }, rules: [{}] },
    };
    const result = check([...migrated, allowAll]);
    assert.ok(result.errors > 0);
    const errors = result.groups.filter((g) => g.severity === 'error');
    assert.ok(
      errors.some((g) => / → answered by kubeflow\/ml-pipeline-ui \(addressed to the pod\)$/.test(g.cause)),
      errors.map((g) => g.cause).join('\n'),
    );
    const example = errors
      .flatMap((g) => g.examples)
      .find((e) => e.request.pod === 'kubeflow/ml-pipeline-ui');
    assert.ok(example, 'an example request addressed to the pod');
    assert.match(example.request.url, /^http:\/\/\d+\.\d+\.\d+\.\d+:\d+\/$/);
  });

  test('catches a dropped L7 rule: the require-JWT DENY left off the front door', () => {
    const result = check(edited('AuthorizationPolicy', 'istio-system', 'istio-ingressgateway-require-jwt'));
    assert.ok(result.errors > 0);
    const error = result.groups.find((g) => g.severity === 'error');
    assert.match(
      error?.cause ?? '',
      /^denied at gateway istio-system\/istio-ingressgateway \(istio-system\/istio-ingressgateway-require-jwt\)/,
    );
    // From outside, and from pods calling the gateway's Service: the requests without a token.
    assert.ok(error?.examples.every((e) => !('authorization' in e.request.headers)));
    assert.ok(
      result.groups.some(
        (g) => g.severity === 'error' && g.examples.some((e) => e.request.from === 'external'),
      ),
    );
  });
});

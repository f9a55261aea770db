/**
 * The controller's pure plan: owners, marking, "does the live object hold it", conditions, and what the
 * controller renders from: only the kinds the render reads, one namespace at a time (a namespace's render
 * reads only its own objects and the shared ones, so the union of the namespaces' renders is the whole
 * render).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { desiredState, type MeshMode } from '../../src/render/desired-state.ts';
import { exampleAmbientPlatform, examplePlatform } from '../../src/example/platform.ts';
import {
  desiredByOwner,
  hasCondition,
  holds,
  isPlatformConfig,
  isRenderInput,
  meshReadyConditions,
  namespaceInput,
  notManaged,
  ownerKey,
  ownerNamespace,
  ownerOf,
  renderNamespaceOf,
  unmarked,
  withCondition,
  type Condition,
} from '../../src/controller/desired.ts';
import { kubeflowBenchPlatform } from '../bench/kubeflow-platform.ts';
import { inferenceService } from '../fixtures.ts';
import { ContestTracker, lastOtherManager } from '../../src/controller/contest.ts';
import { Renders } from '../../src/controller/renders.ts';
import { cacheOf } from '../controller-fixtures.ts';

const render = (objects: readonly KubeObject[], mode: MeshMode) =>
  desiredState(Snapshot.of(objects), { mode });
const canonical = (objects: readonly KubeObject[]) => objects.map((o) => JSON.stringify(o)).sort();

describe('owners', () => {
  test('the controller ownerReference, else the owner labels, else the namespace of a Namespace', () => {
    const vs: KubeObject = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: {
        name: 'm',
        namespace: 'team',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'other', uid: '1' },
          {
            apiVersion: 'serving.kserve.io/v1beta1',
            kind: 'InferenceService',
            name: 'm',
            uid: '2',
            controller: true,
          },
        ],
      },
    };
    assert.equal(ownerOf(vs), 'InferenceService/team/m');
    const labelled: KubeObject = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: {
        name: 'waypoint',
        namespace: 'team',
        labels: { 'kfmesh.io/owner-kind': 'Profile', 'kfmesh.io/owner-name': 'team' },
      },
    };
    assert.equal(ownerOf(labelled), 'Profile//team');
    assert.equal(
      ownerOf({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } }),
      'Namespace//team',
    );
    assert.equal(
      ownerOf({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x', namespace: 'team' } }),
      undefined,
    );
  });

  test("an owner's namespace: its own, or the one a Profile or Namespace names", () => {
    assert.equal(ownerNamespace(ownerKey('InferenceService', 'team', 'm')), 'team');
    assert.equal(ownerNamespace(ownerKey('Profile', 'ignored', 'alice')), 'alice');
    assert.equal(ownerNamespace(ownerKey('Namespace', undefined, 'models')), 'models');
  });

  test("desired objects are grouped by owner and marked as kfmesh's; unmarked takes the marks off", () => {
    const isvc = inferenceService('m', { namespace: 'team' });
    const byOwner = desiredByOwner(
      render([{ ...isvc, metadata: { ...isvc.metadata, uid: 'u1' } }], 'sidecar'),
    );
    const objects = byOwner.get('InferenceService/team/m') ?? [];
    assert.ok(objects.length > 0);
    for (const o of objects) {
      assert.equal(o.metadata.labels?.['app.kubernetes.io/managed-by'], 'kfmesh');
      assert.equal(o.metadata.labels?.['kfmesh.io/owner-name'], 'm');
      const bare = unmarked(o);
      assert.equal(bare.metadata.labels?.['app.kubernetes.io/managed-by'], undefined);
      assert.equal(bare.metadata.labels?.['kfmesh.io/owner-kind'], undefined);
    }
  });
});

describe('holds', () => {
  test('every desired field with the same value; fields the live object adds are fine', () => {
    const desired = { spec: { hosts: ['a'], gateways: ['mesh'] }, metadata: { labels: { x: '1' } } };
    assert.equal(
      holds(
        { spec: { hosts: ['a'], gateways: ['mesh'], extra: 1 }, metadata: { labels: { x: '1', y: '2' } } },
        desired,
      ),
      true,
    );
    assert.equal(
      holds({ spec: { hosts: ['a'], gateways: ['mesh', 'gw'] }, metadata: { labels: { x: '1' } } }, desired),
      false,
    );
    assert.equal(
      holds({ spec: { hosts: ['b'], gateways: ['mesh'] }, metadata: { labels: { x: '1' } } }, desired),
      false,
    );
    assert.equal(holds({ spec: { hosts: ['a'] }, metadata: { labels: { x: '1' } } }, desired), false);
    assert.equal(holds(undefined, desired), false);
  });
});

describe('conditions', () => {
  const ready: Condition = {
    type: 'MeshReady',
    status: 'True',
    reason: 'Applied',
    message: '2 mesh object(s) applied',
  };

  test('the transition time stays while the status stays, and moves when it changes', () => {
    const first = withCondition([], ready, 't1');
    assert.equal(first[0]?.lastTransitionTime, 't1');
    const same = withCondition(first, { ...ready, message: 'other' }, 't2');
    assert.equal(same[0]?.lastTransitionTime, 't1');
    const flipped = withCondition(same, { ...ready, status: 'False', reason: 'InvalidSpec' }, 't3');
    assert.equal(flipped[0]?.lastTransitionTime, 't3');
    assert.equal(flipped.length, 1);
    assert.equal(hasCondition(first, ready), true);
    assert.equal(hasCondition(same, ready), false);
  });

  test('MeshReady: True with the count, False (InvalidSpec) naming the field; NotManaged names the object', () => {
    const good = inferenceService('good', { namespace: 'team' });
    const bad: KubeObject = { ...inferenceService('bad', { namespace: 'team' }), spec: {} };
    const result = render([good, bad], 'sidecar');
    const conditions = meshReadyConditions(result, [
      'InferenceService/team/good',
      'InferenceService/team/bad',
    ]);
    const ok = conditions.get('InferenceService/team/good');
    assert.equal(ok?.status, 'True');
    assert.match(ok?.message ?? '', /^\d+ mesh object\(s\) applied$/);
    const failed = conditions.get('InferenceService/team/bad');
    assert.equal(failed?.status, 'False');
    assert.equal(failed?.reason, 'InvalidSpec');
    assert.match(failed?.message ?? '', /predictor/);
    const taken = notManaged([{ object: 'VirtualService team/good' }]);
    assert.equal(taken.reason, 'NotManaged');
    assert.match(
      taken.message,
      /^VirtualService team\/good: exists without the label app\.kubernetes\.io\/managed-by=kfmesh/,
    );
    // Written by another controller (KServe's, for an InferenceService): left to it, with what to change.
    const kserve = notManaged([
      { object: 'VirtualService team/good', controlledBy: 'InferenceService team/good' },
    ]);
    assert.match(kserve.message, /written by the controller of InferenceService team\/good/);
    assert.match(kserve.message, /KServe 0\.14 and later bind their VirtualServices to mesh/);
    assert.doesNotMatch(kserve.message, /label it to hand it over/);
  });
});

describe('rendering one namespace at a time', () => {
  test('what each object is read by: its namespace, the one a Namespace or Profile names, or every one', () => {
    const cm = (name: string, namespace = 'kubeflow'): KubeObject => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace },
    });
    assert.equal(renderNamespaceOf(cm('inferenceservice-config')), undefined);
    assert.equal(renderNamespaceOf(cm('namespace-labels-data-8h2k')), undefined);
    assert.equal(renderNamespaceOf(cm('my-app-settings', 'team')), 'team');
    assert.equal(isPlatformConfig(cm('config-domain', 'knative-serving')), true);
    assert.equal(
      renderNamespaceOf({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } }),
      'team',
    );
    assert.equal(
      renderNamespaceOf({ apiVersion: 'kubeflow.org/v1', kind: 'Profile', metadata: { name: 'alice' } }),
      'alice',
    );
    assert.equal(
      renderNamespaceOf({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: 'istio' },
      }),
      undefined,
    );
  });

  const platforms: [string, KubeObject[]][] = [
    ['the example platform', examplePlatform()],
    ['the example platform after migration', exampleAmbientPlatform()],
    ['a Kubeflow platform of 6 Profiles and 15 models', kubeflowBenchPlatform(6, 15)],
    [
      'namespaces of both modes (the mode label)',
      examplePlatform().map((o) =>
        o.kind === 'Namespace' && o.metadata.name === 'ml-research'
          ? {
              ...o,
              metadata: { ...o.metadata, labels: { ...o.metadata.labels, 'kfmesh.io/mode': 'ambient' } },
            }
          : o,
      ),
    ],
  ];
  for (const [name, objects] of platforms)
    for (const mode of ['sidecar', 'ambient'] as const)
      test(`${name}, ${mode} by default: the namespaces' renders of what the render reads are the whole render`, () => {
        const whole = render(objects, mode);
        // The controller renders from the kinds the render reads, one namespace at a time.
        const input = objects.filter(isRenderInput);
        assert.ok(input.length < objects.length);
        const namespaces = [...new Set(input.flatMap((o) => renderNamespaceOf(o) ?? []))];
        const parts = namespaces.map((ns) => render(namespaceInput(input, ns), mode));
        assert.deepEqual(canonical(parts.flatMap((p) => p.objects)), canonical(whole.objects));
        assert.deepEqual(
          parts.flatMap((p) => p.problems.map((x) => x.message)).sort(),
          whole.problems.map((x) => x.message).sort(),
        );
        assert.ok(whole.objects.length > 0);
      });
});

describe('a tug of war over an object kfmesh manages', () => {
  const vs: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { x: '1' } };
  test('restores are counted per form within the window; past the limit kfmesh gives up', () => {
    const contest = new ContestTracker(3, 60_000);
    assert.deepEqual(
      [0, 1000, 2000, 3000, 4000].map((t) => contest.givenUp('a', vs, t)),
      [false, false, false, true, true],
    );
    // Holding kfmesh's form between restores does not reset the count, but ends a given-up contest.
    contest.settled('a', 5000);
    assert.equal(contest.givenUp('a', vs, 6000), false);
  });

  test('given up, it is taken up again after a pause that doubles (one restore a pause), at most 16', () => {
    const contest = new ContestTracker(3, 60_000, 60_000);
    for (const t of [0, 1000, 2000]) assert.equal(contest.givenUp('a', vs, t), false);
    assert.equal(contest.givenUp('a', vs, 3000), true);
    assert.equal(contest.resumesAt('a'), 63_000);
    assert.equal(contest.givenUp('a', vs, 62_999), true, 'still paused');
    assert.equal(contest.givenUp('a', vs, 63_000), false, 'the pause is over: one restore');
    // Changed back again: given up for twice as long.
    assert.equal(contest.givenUp('a', vs, 64_000), true);
    assert.equal(contest.resumesAt('a'), 64_000 + 120_000);
    let t = 184_000;
    for (let round = 3; round <= 7; round++) {
      assert.equal(contest.givenUp('a', vs, t), false);
      assert.equal(contest.givenUp('a', vs, t + 1), true);
      t = contest.resumesAt('a') ?? 0;
    }
    assert.equal(
      t - 184_000 - 5,
      [4, 8, 16, 16, 16].reduce((s, n) => s + n, 0) * 60_000,
      'capped at 16 minutes',
    );
  });

  test('restores spread wider than the window, or to a new form, never add up', () => {
    const contest = new ContestTracker(3, 60_000);
    assert.deepEqual(
      [0, 30_000, 61_000, 92_000, 123_000].map((t) => contest.givenUp('a', vs, t)),
      [false, false, false, false, false],
    );
    const other = new ContestTracker(3, 60_000);
    for (const t of [0, 1, 2]) other.givenUp('a', vs, t);
    assert.equal(other.givenUp('a', { ...vs, data: { x: '2' } }, 3), false);
  });

  test('who keeps changing it: the last Update by another field manager', () => {
    const live: KubeObject = {
      ...vs,
      metadata: {
        name: 'a',
        managedFields: [
          { manager: 'kfmesh', operation: 'Apply', time: '2026-01-01T00:00:03Z' },
          { manager: 'kubectl-edit', operation: 'Update', time: '2026-01-01T00:00:01Z' },
          { manager: 'manager', operation: 'Update', time: '2026-01-01T00:00:02Z' },
        ],
      },
    };
    assert.equal(lastOtherManager(live, 'kfmesh'), 'manager');
    assert.equal(lastOtherManager(vs, 'kfmesh'), undefined);
  });

  test('MeshReady False, reason Contested, naming the writer', () => {
    const condition = notManaged([{ object: 'VirtualService team/route', contestedBy: 'manager' }]);
    assert.equal(condition.reason, 'Contested');
    assert.match(condition.message, /changed back by manager each time kfmesh restored it/);
  });
});

describe("an object of the wrong type in the cache (a CRD looser than kfmesh's schema)", () => {
  test('left out of the render, its owner MeshReady False at the field, nothing of it pruned, the rest rendered', async () => {
    const wrong: KubeObject = {
      apiVersion: 'serving.kserve.io/v1beta1',
      kind: 'InferenceService',
      metadata: { name: 'wrong-typed', namespace: 'kubeflow-user-example-com' },
      spec: { predictor: { minReplicas: 'two', model: { modelFormat: { name: 'sklearn' } } } },
    };
    const objects = [...examplePlatform(), wrong];
    const renders = new Renders(cacheOf(objects), { mode: 'sidecar', newOwner: () => undefined });
    const rendered = await renders.desired('kubeflow-user-example-com');
    const owner = ownerKey('InferenceService', 'kubeflow-user-example-com', 'wrong-typed');
    const condition = rendered.conditions.get(owner);
    assert.equal(condition?.status, 'False');
    assert.equal(condition?.reason, 'InvalidSpec');
    assert.match(
      condition?.message ?? '',
      /spec\.predictor\.minReplicas: expected an integer, got string "two"/,
    );
    assert.ok(rendered.unreadable.has(owner));
    // The rest of the namespace is rendered as without it.
    const without = await new Renders(cacheOf(examplePlatform()), {
      mode: 'sidecar',
      newOwner: () => undefined,
    }).desired('kubeflow-user-example-com');
    assert.ok([...without.byOwner.values()].flat().length > 0);
    assert.deepEqual(rendered.byOwner, without.byOwner);
  });
});

/**
 * The migration plan (src/plan/): Istio's order per namespace, policies kept in both forms across the
 * switch, restarts where pods would come back otherwise, undo, and the order of the namespaces chosen by
 * tracing. Small platforms here; the example and the real platform in test/integration/plan.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { planMigration } from '../../src/plan/order.ts';
import { checkPlan } from '../../src/plan/simulate.ts';
import { planMarkdown } from '../../src/plan/plan-files.ts';
import { PlanState } from '../../src/plan/state.ts';
import { Stage, namespaceStages } from '../../src/plan/stages.ts';
import { groupsInOrder } from '../../src/plan/order.ts';
import { checkEquivalence } from '../../src/verify/equivalence.ts';
import { desiredState, MeshMode } from '../../src/render/desired-state.ts';
import { inferenceService } from '../fixtures.ts';
import { deployment } from '../mesh-fixtures.ts';

const namespace = (
  name: string,
  labels: Record<string, string> = { 'istio-injection': 'enabled' },
): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});
const service = (ns: string, app: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: app, namespace: ns },
  spec: { selector: { app }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
});
/** An L7 DENY: ztunnel cannot enforce it, so it moves to the namespace's waypoint. */
const noDelete: KubeObject = {
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name: 'no-delete', namespace: 'team' },
  spec: {
    selector: { matchLabels: { app: 'api' } },
    action: 'DENY',
    rules: [{ to: [{ operation: { methods: ['DELETE'] } }] }],
  },
};
const platform = (): KubeObject[] => [
  namespace('istio-system', {}),
  namespace('team'),
  namespace('apps'),
  deployment('team', 'api'),
  service('team', 'api'),
  deployment('apps', 'client'),
  noDelete,
];

describe('a plan keeps an L7 policy enforced in every state', () => {
  const snapshot = Snapshot.of(platform());

  test("Istio's guide order (the policy moved to targetRefs in place first) opens access until the switch", () => {
    const plan = planMigration(snapshot, { policies: 'in-place', order: ['team', 'apps'] });
    const check = checkPlan(plan);
    const opened = check.states.filter((s) => s.result.errors > 0).map((s) => plan.steps[s.step - 1]?.id);
    assert.deepEqual(opened, [
      '02-team-prepare',
      '03-team-use-waypoint',
      '04-team-ambient',
      '05-team-injection',
    ]);
    const example = check.states[1]?.result.groups.find((g) => g.severity === 'error')?.examples[0];
    assert.equal(example?.request.method, 'DELETE');
    assert.equal(example?.request.from, 'apps/client');
    assert.match(example?.before.where ?? '', /team\/no-delete/);
    assert.equal(example?.after.verdict, 'allowed');
  });

  test("kfmesh's plan adds the policy's new form beside the old one and swaps them at cleanup: no state opens access", () => {
    const plan = planMigration(snapshot);
    const check = checkPlan(plan);
    assert.equal(check.errors, 0);
    assert.deepEqual(check.windows, []);
    assert.deepEqual(check.badUndos, []);
    const prepare = plan.steps.find((s) => s.stage === Stage.Prepare && s.namespaces.includes('team'));
    const copy = prepare?.operations.find(
      (o) => o.op === 'apply' && o.object.metadata.name === 'no-delete-migrating',
    );
    assert.ok(copy, 'the targetRefs form is added under a name of its own before the switch');
    const cleanup = plan.steps.find((s) => s.stage === Stage.Cleanup && s.namespaces.includes('team'));
    assert.ok(cleanup?.operations.some((o) => o.op === 'delete' && o.ref.name === 'no-delete-migrating'));
    assert.ok(cleanup?.operations.some((o) => o.op === 'patch' && o.ref.name === 'no-delete'));
  });

  test('the order is chosen: the client namespace moves first, since its sidecars would skip the waypoint', () => {
    const plan = planMigration(snapshot);
    assert.deepEqual(plan.groups, [['apps'], ['team']]);
    const team = plan.choice.costs.find((c) => c.first === 'team' && c.then === 'apps');
    assert.ok(team && team.requests > 0, 'moving team first breaks requests from apps');
    const forced = checkPlan(planMigration(snapshot, { order: ['team', 'apps'] }));
    assert.ok(forced.windows.length > 0, 'the other order has an outage window');
    assert.ok(forced.windows.every((w) => w.examples.every((r) => r.from === 'apps/client')));
  });

  test("each namespace's steps follow Istio's order, and every state's end is the migration's", () => {
    const plan = planMigration(snapshot);
    for (const ns of ['team', 'apps']) {
      const stages = plan.steps
        .filter((s) => s.namespaces.includes(ns))
        .map((s) => namespaceStages.indexOf(s.stage));
      assert.deepEqual(
        stages,
        [...stages].sort((a, b) => a - b),
      );
      assert.ok(stages.includes(namespaceStages.indexOf(Stage.Restart)));
    }
    const end = plan.states.at(-1) as PlanState;
    const result = checkEquivalence(Snapshot.of(plan.migration.objects), end.snapshot());
    assert.equal(result.errors + result.warnings + result.notes, 0);
  });
});

describe('running pods', () => {
  test('a pod keeps its sidecar after its namespace goes ambient, until it restarts', () => {
    const start = PlanState.start(platform());
    const proxyOf = (s: PlanState) => s.mesh().workloadByName.get('team/api')?.proxy;
    const labelled = start.apply([
      {
        op: 'patch',
        ref: { group: '', kind: 'Namespace', namespace: '', name: 'team' },
        patch: [
          { op: 'remove', path: '/metadata/labels/istio-injection' },
          { op: 'add', path: '/metadata/labels/istio.io~1dataplane-mode', value: 'ambient' },
        ],
      },
    ]);
    assert.equal(proxyOf(start), 'sidecar');
    assert.equal(proxyOf(labelled), 'sidecar');
    const restarted = labelled.apply([
      { op: 'restart', workload: { kind: 'Deployment', namespace: 'team', name: 'api' } },
    ]);
    assert.equal(proxyOf(restarted), 'ambient');
  });

  test('pinning the running pods changes nothing the simulator sees', () => {
    const objects = platform();
    const result = checkEquivalence(Snapshot.of(objects), PlanState.start(objects).snapshot());
    assert.equal(result.errors + result.warnings + result.notes, 0);
    assert.ok(result.requests > 0);
  });

  test('a pod that opts out of ambient says so before its namespace is labelled (the CNI enrols running pods)', () => {
    const objects = [...platform(), deployment('team', 'batch', { 'sidecar.istio.io/inject': 'false' })];
    const plan = planMigration(Snapshot.of(objects));
    const optOut = plan.steps.find((s) =>
      s.operations.some(
        (o) =>
          o.op === 'patch' &&
          o.ref.name === 'batch' &&
          o.patch.some((p) => p.path.includes('dataplane-mode')),
      ),
    );
    assert.equal(optOut?.stage, Stage.Prepare);
  });
});

describe('the plan and the controller agree on each namespace', () => {
  test("from a namespace's ambient step on, kfmesh renders it in ambient mode, whatever the controller's default", () => {
    // A RawDeployment model in the namespace, which kfmesh renders (so it moves to ambient with it).
    const model = inferenceService('iris', {
      annotations: { 'serving.kserve.io/deploymentMode': 'RawDeployment' },
    });
    const plan = planMigration(Snapshot.of([...platform(), model]));
    const ambient = plan.steps.find((s) => s.stage === Stage.Ambient && s.namespaces.includes('team'));
    assert.ok(ambient);
    const modeAt = (step: number) =>
      desiredState((plan.states[step] as PlanState).snapshot(), {
        mode: MeshMode.Sidecar,
      }).modes.get('team');
    assert.equal(modeAt(ambient.number - 1), MeshMode.Sidecar);
    assert.equal(modeAt(ambient.number), MeshMode.Ambient);
  });
});

describe('plan.md', () => {
  test('says which of the node agents ambient mode needs the input holds', () => {
    const ztunnel: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'ztunnel', namespace: 'istio-system' },
      spec: {
        selector: { matchLabels: { app: 'ztunnel' } },
        template: {
          metadata: { labels: { app: 'ztunnel' } },
          spec: { containers: [{ name: 'istio-proxy', image: 'ztunnel' }] },
        },
      },
    };
    const plan = planMigration(Snapshot.of([...platform(), ztunnel]));
    const md = planMarkdown(plan, plan.choice, checkPlan(plan));
    assert.match(md, /- DaemonSet istio-system\/ztunnel is in the input/);
    assert.match(md, /- Not in the input: DaemonSet istio-cni-node\./);
  });
});

describe('the order of namespaces', () => {
  test('namespaces that cost each other move together; the rest in an order that costs nothing', () => {
    const edges = new Set(['a>b', 'b>a', 'c>a']);
    assert.deepEqual(
      groupsInOrder(['a', 'b', 'c'], (x, y) => edges.has(`${x}>${y}`)),
      [['a', 'b'], ['c']],
    );
    assert.deepEqual(
      groupsInOrder(['a', 'b', 'c'], () => false),
      [['a'], ['b'], ['c']],
    );
    assert.deepEqual(
      groupsInOrder(['a', 'b'], (x, y) => x === 'a' && y === 'b'),
      [['b'], ['a']],
    );
  });
});

/**
 * Namespaces alike up to renaming: the equivalence check traces one namespace of each class and takes the
 * others' outcomes from it, renamed. The report must be the one the check makes without it, and a
 * namespace that something tells apart must leave its class.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { examplePlatform } from '../../src/example/platform.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { checkEquivalence, checkEquivalencePart, mergeEquivalence } from '../../src/verify/equivalence.ts';
import { kubeflowBenchPlatform } from '../bench/kubeflow-platform.ts';
import { bothWays, stamped } from '../symmetry-fixtures.ts';

const migrated = (objects: readonly KubeObject[]) => migrateToAmbient(Snapshot.of(objects)).objects;

/** The objects with one replaced (or removed when `next` returns undefined). */
function edit(
  objects: readonly KubeObject[],
  kind: string,
  namespace: string,
  name: string,
  next: (o: KubeObject) => KubeObject | undefined,
): KubeObject[] {
  let found = false;
  const out = objects.flatMap((o) => {
    if (o.kind !== kind || o.metadata.namespace !== namespace || o.metadata.name !== name) return [o];
    found = true;
    const replaced = next(structuredClone(o));
    return replaced ? [replaced] : [];
  });
  assert.ok(found, `${kind} ${namespace}/${name} exists`);
  return out;
}

const policy = (namespace: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name, namespace },
  spec,
});

const inClass = (classes: readonly (readonly string[])[], ns: string) => classes.some((c) => c.includes(ns));

describe('verify --equivalence: namespaces alike up to renaming', () => {
  test('Profiles stamped from one template form a class; the report is the same; far fewer traces', () => {
    const before = stamped(6);
    const { classes, on, off } = bothWays(before, migrated(before));
    assert.deepEqual(classes, [['user-0', 'user-1', 'user-2', 'user-3', 'user-4', 'user-5']]);
    assert.ok(on.traces < off.traces / 2, `${on.traces} traces with, ${off.traces} without`);
    assert.ok(on.requests > 0);
  });

  test('namespaces with other objects (three models, not two) are another class', () => {
    const before = kubeflowBenchPlatform(4, 10);
    const { classes } = bothWays(before, migrated(before));
    assert.deepEqual(classes, [
      ['user-0', 'user-1'],
      ['user-2', 'user-3'],
    ]);
  });

  test('a change to one member: it leaves the class, and the report names its requests', () => {
    const before = stamped(5);
    const after = edit(migrated(before), 'AuthorizationPolicy', 'user-3', 'allow-isvc-model-3', (p) => ({
      ...p,
      spec: { action: 'ALLOW', rules: [{}] },
    }));
    const { classes, on } = bothWays(before, after);
    assert.ok(!inClass(classes, 'user-3'));
    assert.ok(inClass(classes, 'user-4'));
    const changed = on.groups.flatMap((g) => g.examples.map((e) => e.request.url));
    assert.ok(on.errors > 0, 'the widened policy opens access');
    assert.ok(
      changed.some((url) => url.includes('.user-3.')),
      `an example addresses user-3: ${changed.join(' ')}`,
    );
  });

  test('what tells a namespace apart takes it out of every class (the report stays the same)', () => {
    const base = stamped(6);
    const ip = compileMesh(Snapshot.of(base)).workloadByName.get('user-5/notebook')?.ip;
    assert.ok(ip);
    const cases: { why: string; objects: KubeObject[]; out: string[] }[] = [
      {
        why: 'its name is mentioned outside it',
        objects: [
          ...base,
          policy('kubeflow', 'from-user-2', { rules: [{ from: [{ source: { namespaces: ['user-2'] } }] }] }),
        ],
        out: ['user-2'],
      },
      {
        why: 'a pattern cuts into its name',
        objects: [
          ...base,
          policy('kubeflow', 'from-user-1x', {
            rules: [{ from: [{ source: { namespaces: ['user-1*'] } }] }],
          }),
        ],
        out: ['user-1'],
      },
      {
        why: 'a host pattern cuts into its name before a dot',
        objects: [
          ...base,
          policy('kubeflow', 'to-3', {
            rules: [{ to: [{ operation: { hosts: ['*-3.svc.cluster.local'] } }] }],
          }),
        ],
        out: ['user-3'],
      },
      {
        why: 'it claims a host of no name of its own for the mesh',
        objects: [
          ...base,
          {
            apiVersion: 'networking.istio.io/v1beta1',
            kind: 'VirtualService',
            metadata: { name: 'shared', namespace: 'user-4' },
            spec: {
              hosts: ['*.example.org'],
              http: [{ route: [{ destination: { host: 'notebook.user-4.svc.cluster.local' } }] }],
            },
          },
        ],
        out: ['user-4'],
      },
      {
        why: 'an IP block holds its pod and not the others',
        objects: [
          ...base,
          policy('kubeflow', 'from-one-pod', { rules: [{ from: [{ source: { ipBlocks: [`${ip}/32`] } }] }] }),
        ],
        out: ['user-5'],
      },
    ];
    for (const c of cases) {
      const { classes } = bothWays(c.objects, migrated(c.objects));
      for (const ns of c.out)
        assert.ok(!inClass(classes, ns), `${c.why}: ${ns} is in ${JSON.stringify(classes)}`);
      assert.ok(classes.length > 0, `${c.why}: the others still form a class`);
    }
  });

  test('a regular expression anywhere turns the symmetry off', () => {
    const base = stamped(3);
    const objects = edit(base, 'VirtualService', 'user-0', 'notebook', (vs) => {
      const spec = vs['spec'] as { http: { match: unknown[] }[] };
      (spec.http[0] as { match: unknown[] }).match = [{ uri: { regex: '/notebook/user-0/.*' } }];
      return vs;
    });
    const { classes, on, off } = bothWays(objects, migrated(objects));
    assert.deepEqual(classes, []);
    assert.equal(on.traces, off.traces);
  });

  test('slices of the matrix merge into the unsliced report, traces included', () => {
    const before = Snapshot.of(stamped(5));
    const after = Snapshot.of(migrated(before.all()));
    const whole = checkEquivalence(before, after);
    const parts = [0, 1, 2].map((index) =>
      checkEquivalencePart(before, after, { shard: { index, count: 3 } }),
    );
    assert.equal(JSON.stringify(mergeEquivalence(parts)), JSON.stringify(whole));
  });

  test('the example platform and its migration: the same report', () => {
    const before = examplePlatform();
    bothWays(before, migrated(before));
  });
});

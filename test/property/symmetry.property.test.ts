/**
 * The symmetry of the equivalence check under perturbation: in a platform of Profile namespaces stamped
 * from one template, one namespace is changed in one of many ways, before the migration, after it, or
 * both. That namespace must leave the class, and the report must be the one made without the symmetry.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { migrateToAmbient } from '../../src/ambient/migrate.ts';
import { bothWays, stamped } from '../symmetry-fixtures.ts';

const profiles = 4;

type Perturbation = (ns: string, o: KubeObject) => KubeObject | undefined;

/** Ways to change one namespace: each touches one kind of object of it. */
const perturbations: Record<string, Perturbation> = {
  'a label on its notebook': (ns, o) =>
    o.kind === 'Deployment' && o.metadata.name === 'notebook'
      ? { ...o, metadata: { ...o.metadata, labels: { extra: 'yes' } } }
      : o,
  'another Service port': (ns, o) =>
    o.kind === 'Service' && o.metadata.name === 'notebook'
      ? { ...o, spec: { ...(o['spec'] as object), ports: [{ name: 'http', port: 81, targetPort: 8888 }] } }
      : o,
  'a narrower model policy': (ns, o) =>
    o.kind === 'AuthorizationPolicy' && String(o.metadata.name).startsWith('allow-isvc-')
      ? { ...o, spec: { ...(o['spec'] as object), rules: [{ to: [{ operation: { methods: ['POST'] } }] }] } }
      : o,
  'a DENY policy in place of ALLOW': (ns, o) =>
    o.kind === 'AuthorizationPolicy' && String(o.metadata.name).startsWith('allow-isvc-')
      ? { ...o, spec: { ...(o['spec'] as object), action: 'DENY' } }
      : o,
  'no notebook route': (ns, o) =>
    o.kind === 'VirtualService' && o.metadata.name === 'notebook' ? undefined : o,
  'a namespace label': (ns, o) =>
    o.kind === 'Namespace'
      ? { ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, team: 'x' } } }
      : o,
};

function perturbed(objects: readonly KubeObject[], ns: string, how: Perturbation): KubeObject[] {
  return objects.flatMap((o) => {
    const mine = o.metadata.namespace === ns || (o.kind === 'Namespace' && o.metadata.name === ns);
    const next = mine ? how(ns, structuredClone(o)) : o;
    return next ? [next] : [];
  });
}

describe('verify --equivalence symmetry (property)', () => {
  test('a namespace changed in any way leaves its class; the report is the same without the symmetry', () => {
    const base = stamped(profiles);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: profiles - 1 }),
        fc.constantFrom(...Object.keys(perturbations)),
        fc.constantFrom('before', 'after', 'both'),
        (index, name, where) => {
          const ns = `user-${index}`;
          const how = perturbations[name] as Perturbation;
          const changed = perturbed(base, ns, how);
          const before = where === 'after' ? base : changed;
          const after = migrateToAmbient(Snapshot.of(where === 'before' ? base : changed)).objects;
          const mended = where === 'after' ? perturbed(after, ns, how) : after;
          const { classes } = bothWays(before, mended);
          const alone = !classes.some((c) => c.includes(ns));
          assert.ok(alone, `${name} (${where}) in ${ns}: still in ${JSON.stringify(classes)}`);
          assert.ok(
            classes.some((c) => c.length === profiles - 1),
            'the others stay a class',
          );
        },
      ),
      { numRuns: 14 },
    );
  });
});

/** Platforms of Profile namespaces stamped from one template, and the symmetry's check both ways. */
import assert from 'node:assert/strict';
import type { KubeObject } from '../src/model/object.ts';
import { Snapshot } from '../src/load/snapshot.ts';
import { checkEquivalence, EquivalenceMatrix, type EquivalenceResult } from '../src/verify/equivalence.ts';
import { kubeflowBenchPlatform } from './bench/kubeflow-platform.ts';

/** A platform of `profiles` Profile namespaces with two models each: one class. */
export function stamped(profiles: number): KubeObject[] {
  return kubeflowBenchPlatform(profiles, profiles * 2);
}

/** The report without its trace count (which the symmetry is there to lower). */
const report = (r: EquivalenceResult) => JSON.stringify({ ...r, traces: 0 });

/** Checks both ways, asserts the same report, and returns the classes and both trace counts. */
export function bothWays(before: readonly KubeObject[], after: readonly KubeObject[]) {
  const [b, a] = [Snapshot.of(before), Snapshot.of(after)];
  const on = checkEquivalence(b, a);
  const off = checkEquivalence(b, a, { symmetry: false });
  assert.equal(report(on), report(off), 'the same report with and without the symmetry');
  return { classes: new EquivalenceMatrix(b, a).namespaceClasses, on, off };
}

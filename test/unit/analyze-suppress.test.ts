/** istioctl's conventions in analyze: suppression (annotation, --suppress) and a chosen part of the rules. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { analyze, rules } from '../../src/analyze/analyze.ts';
import { selectRules } from '../../src/analyze/select.ts';
import { kialiAmbientValidations } from '../../src/analyze/kiali.ts';
import { globMatches, parseSuppression } from '../../src/analyze/suppress.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { InputError } from '../../src/model/errors.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { Annotation } from '../../src/model/vocabulary.ts';
import { app, ns, policy } from './analyze-fixtures.ts';

// Two policies selecting no workload (KFM601, IST0127), in two namespaces; a namespace without injection (KFM704).
const objects = (annotations: Record<string, string> = {}): KubeObject[] => [
  ns('apps', { 'istio-injection': 'enabled' }),
  ns('plain', {}),
  ns('istio-system', {}),
  ...app('apps', 'api'),
  {
    ...policy('apps', 'typo', { selector: { matchLabels: { app: 'apii' } } }),
    metadata: { name: 'typo', namespace: 'apps', annotations },
  },
  policy('apps', 'other', { selector: { matchLabels: { app: 'nope' } } }),
];
const found = (list: KubeObject[], options: Parameters<typeof analyze>[1] = {}) =>
  analyze(Snapshot.of(list), options).map((f) => `${f.code} ${f.object.namespace ?? ''}/${f.object.name}`);

describe('suppressing findings', () => {
  test('the annotation drops the codes it lists, kfmesh or istioctl ones, or all with *', () => {
    const all = found(objects());
    assert.ok(all.includes('KFM601 apps/typo') && all.includes('KFM601 apps/other'), all.join());
    for (const value of ['KFM601', 'IST0127', 'IST0101, KFM601', '*']) {
      const left = found(objects({ [Annotation.AnalyzeSuppress]: value }));
      assert.ok(!left.includes('KFM601 apps/typo'), value);
      assert.ok(left.includes('KFM601 apps/other'), value);
    }
    assert.ok(found(objects({ [Annotation.AnalyzeSuppress]: 'IST0101' })).includes('KFM601 apps/typo'));
  });

  test('--suppress names the resource as istioctl does, or as its help writes it, with * globs', () => {
    const without = (flag: string) => found(objects(), { suppress: [parseSuppression(flag)] });
    assert.ok(!without('IST0127=AuthorizationPolicy apps/typo').includes('KFM601 apps/typo'));
    assert.ok(without('IST0127=AuthorizationPolicy apps/typo').includes('KFM601 apps/other'));
    assert.ok(!without('KFM601=AuthorizationPolicy typo.apps').includes('KFM601 apps/typo'));
    assert.equal(
      without('KFM601=AuthorizationPolicy apps/*').filter((f) => f.startsWith('KFM601')).length,
      0,
    );
    assert.ok(without('KFM601=Namespace apps').includes('KFM601 apps/typo'));
    assert.ok(!without('KFM704=Namespace plain').some((f) => f.startsWith('KFM704 /plain')));
  });

  test('a malformed --suppress is an input error naming the flag', () => {
    for (const bad of ['IST0127', '=Pod a/b', 'IST0127=', 'A=B=C'])
      assert.throws(
        () => parseSuppression(bad),
        (e: unknown) => e instanceof InputError && /--suppress/.test(e.message),
      );
  });

  test('globs: * is any run of characters, everything else literal, linear in the text', () => {
    assert.ok(globMatches('Pod a/*', 'Pod a/b'));
    assert.ok(globMatches('*', ''));
    assert.ok(globMatches('*.kubeflow', 'Service x.kubeflow'.slice(8)));
    assert.ok(globMatches('a*b*c', 'abc'));
    assert.ok(!globMatches('a*b*c', 'acb'));
    assert.ok(!globMatches('Pod a.b', 'Pod aXb'));
    assert.ok(!globMatches('ab*ba', 'aba'));
    assert.ok(globMatches('[x]*', '[x]y'));
    // Many stars over a long text: a backtracking matcher would not finish.
    assert.ok(!globMatches(`${'*a'.repeat(2000)}!`, 'a'.repeat(100_000)));
  });
});

describe('choosing rules (--analyzer)', () => {
  test('by kfmesh code or name, or by the istioctl analyzer a rule answers', () => {
    const list = objects();
    assert.deepEqual(
      [...new Set(found(list, { selection: selectRules(rules, ['KFM601']) }).map((f) => f.split(' ')[0]))],
      ['KFM601'],
    );
    assert.deepEqual(
      selectRules(rules, ['policy-selects-no-workload']).rules.map((r) => r.code),
      ['KFM601'],
    );
    // istioctl's name for authz.AuthorizationPoliciesAnalyzer, and its Go type.
    for (const name of ['auth.AuthorizationPoliciesAnalyzer', 'authz.AuthorizationPoliciesAnalyzer']) {
      const chosen = found(list, { selection: selectRules(rules, [name]) });
      assert.ok(
        chosen.length > 0 && chosen.every((f) => f.startsWith('KFM601') || f.startsWith('KFM602')),
        chosen.join(),
      );
    }
  });

  test('schema validation by kind keeps only findings on objects of that kind', () => {
    const chosen = selectRules(rules, ['schema.ValidationAnalyzer.Sidecar']);
    assert.ok(chosen.rules.length > 0);
    assert.ok(
      chosen.rules.every((r) =>
        (r.istio ?? []).some((c) => c.analyzer === 'schemaValidation.CollectionValidationAnalyzer'),
      ),
    );
    assert.equal(
      chosen.keeps({
        code: 'KFM420',
        severity: 'info',
        object: { group: 'security.istio.io', kind: 'AuthorizationPolicy', namespace: 'a', name: 'b' },
        message: '',
        istio: [{ analyzer: 'schemaValidation.CollectionValidationAnalyzer', code: 'IST0133' }],
      }),
      false,
    );
  });

  test('an unknown name is an input error that says what is taken', () => {
    for (const name of ['KFM999', 'nonsense', 'telemetry.ProviderAnalyzer'])
      assert.throws(
        () => selectRules(rules, [name]),
        (e: unknown) => e instanceof InputError && e.message.includes(name),
      );
  });
});

describe("Kiali's ambient validations, mapped", () => {
  test('21 checks, each once, every rule named exists and reads what it claims', () => {
    assert.equal(kialiAmbientValidations.length, 21);
    assert.equal(new Set(kialiAmbientValidations.map((k) => k.code)).size, 21);
    const codes = new Set(rules.map((r) => r.code));
    for (const k of kialiAmbientValidations) {
      for (const r of k.rules) assert.ok(codes.has(r), `${k.code} names ${r}`);
      assert.ok(k.note.length > 0);
    }
  });
});

/**
 * Istio's analyzer test data (../shared/conformance/istio-analyzers, format in its README) through the real
 * CLI. For every case of an analyzer some kfmesh rule names as its counterpart, the findings that carry that
 * analyzer must name exactly the objects and message codes Istio's table expects (as a set: Istio reports
 * some objects once per field). Cases of analyzers kfmesh lists as not applicable are skipped with the
 * reason, those of analyzers it has no rule for yet are reported as to do. The counts are printed.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { parse, stringify } from 'yaml';
import { rules } from '../../src/analyze/analyze.ts';
import { notApplicable, notYetCovered } from '../../src/analyze/istio-analyzers.ts';
import { runKfmesh } from '../cli-process.ts';
import { partTestOptions } from '../kube-apiserver.ts';
import { projectRoot } from './cases.ts';
import { istioDefaultsFile } from '../oracle/istio-analyze.ts';

const suite = resolve(
  process.env['KFMESH_SHARED_CONFORMANCE'] ?? resolve(projectRoot, '../shared/conformance'),
  'istio-analyzers',
);
const missing = existsSync(join(suite, 'cases.yaml')) ? undefined : `is absent (${suite})`;

interface Expectation {
  code: string;
  kind: string;
  namespace: string | null;
  name: string;
}

interface IstioCase {
  name: string;
  analyzer: string;
  inputs: string[];
  meshConfig: string | null;
  expect: Expectation[];
}

const cases: IstioCase[] = missing
  ? []
  : (parse(readFileSync(join(suite, 'cases.yaml'), 'utf8')) as IstioCase[]);
const counts = { cases: cases.length, applicable: 0, matched: 0, notApplicable: 0, notYetCovered: 0 };
const key = (e: Expectation) => `${e.code} ${e.kind} ${e.namespace ?? '-'}/${e.name}`;

/**
 * What Istio's test harness adds to every case (`AddDefaultResources` of its local analyzer, unless the mesh
 * configuration turns Ingress off, which no case does): a stand-in ingress gateway, a pod labelled
 * `istio: ingressgateway` and its Service `istio-ingressgateway` in istio-system. kfmesh gets the same.
 */
const istioDefaults = istioDefaultsFile();

/** The mesh configuration as istiod reads it: the ConfigMap `istio-system/istio`, key `mesh`. */
function meshConfigMap(file: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-istio-case-'));
  const path = join(dir, 'mesh-config.yaml');
  const configMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'istio', namespace: 'istio-system' },
    data: { mesh: readFileSync(join(suite, 'testdata', file), 'utf8') },
  };
  writeFileSync(path, stringify(configMap));
  return path;
}

describe(
  'Istio analyzer test data',
  partTestOptions('../shared/conformance/istio-analyzers', missing),
  () => {
    after(() => {
      console.log(
        `istio-analyzers: ${counts.cases} cases, ${counts.applicable} applicable, ${counts.matched} matched, ` +
          `${counts.notApplicable} not applicable, ${counts.notYetCovered} not covered yet`,
      );
    });

    cases.forEach((c, i) => {
      const name = `${i + 1}. ${c.analyzer}: ${c.name}`;
      const covering = rules.filter((r) => r.istio?.some((x) => x.analyzer === c.analyzer));
      const excluded = notApplicable.find((a) => a.analyzer === c.analyzer);
      if (covering.length === 0) {
        if (excluded) {
          counts.notApplicable++;
          test(name, { skip: `not applicable: ${excluded.reason}` }, () => {});
        } else {
          counts.notYetCovered++;
          const pending = notYetCovered.find((a) => a.analyzer === c.analyzer);
          test(name, {
            todo: pending ? `no rule yet: ${pending.reason}` : 'an analyzer kfmesh does not list',
          });
        }
        return;
      }
      counts.applicable++;
      test(name, () => {
        const inputs = c.inputs.map((f) => join(suite, 'testdata', f));
        if (c.meshConfig) inputs.push(meshConfigMap(c.meshConfig));
        inputs.push(istioDefaults);
        const run = runKfmesh(['analyze', '-o', 'json', '--fail-on', 'never', ...inputs]);
        assert.equal(run.code, 0, run.stderr);
        const document = JSON.parse(run.stdout) as {
          findings: {
            object: { kind: string; namespace: string; name: string };
            istio?: { analyzer: string; code: string }[];
          }[];
        };
        // A finding may answer several analyzers (the same problem reported twice by istioctl): the code
        // that counts is the one it gives for this case's analyzer.
        const found = new Set(
          document.findings.flatMap((f) =>
            (f.istio ?? [])
              .filter((x) => x.analyzer === c.analyzer)
              .map((x) => key({ code: x.code, ...f.object, namespace: f.object.namespace || null })),
          ),
        );
        const expected = new Set(c.expect.map(key));
        const extra = [...found].filter((k) => !expected.has(k)).sort();
        const absent = [...expected].filter((k) => !found.has(k)).sort();
        assert.deepEqual({ extra, absent }, { extra: [], absent: [] }, `${c.inputs.join(', ')}`);
        counts.matched++;
      });
    });
  },
);

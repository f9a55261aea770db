/** `kfmesh analyze` through the real program: the seed misconfiguration found by tracing, exit codes, JSON. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Ajv } from 'ajv';
import AjvDraft04 from 'ajv-draft-04';
import AjvFormats from 'ajv-formats';
import fastJsonPatch from 'fast-json-patch';
import { parseAllDocuments } from 'yaml';
import type { Operation } from 'fast-json-patch';
import { rules } from '../../src/analyze/analyze.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { runKfmesh, writeManifest, writeText } from '../cli-process.ts';

// A CommonJS module whose default export is the class: under Node's ESM interop it arrives as `default`.
const Ajv04 = (AjvDraft04 as unknown as { default: typeof Ajv }).default;
const addFormats = (AjvFormats as unknown as { default: (ajv: Ajv) => Ajv }).default;

// The SARIF 2.1.0 JSON schema as published (draft-04), from the package that ships it.
const sarifSchema = JSON.parse(
  readFileSync(
    createRequire(import.meta.url).resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'),
    'utf8',
  ),
) as object;

const example = writeText(runKfmesh(['example']).stdout, 'platform.yaml');
const before = writeText(runKfmesh(['render', example, '--no-mesh-gateway']).stdout, 'before.yaml');

describe('kfmesh analyze', () => {
  test('the example platform (KServe with the mesh binding): no errors or warnings, exit 0', () => {
    const run = runKfmesh(['analyze', example]);
    assert.equal(run.code, 0, run.stderr);
    // Only what the pipelines UI's and notebook controller's `*/*` Sidecars cost (KFM501, info), three
    // Kubeflow Service ports named without a protocol (katib-ui's `ui`, metadata-envoy's `md-envoy`, dex's),
    // kubeflow-gateway sharing the ingress gateway's port 80 with istio-ingressgateway (KFM412, info), the
    // namespaces Kubeflow keeps out of the mesh (auth, oauth2-proxy: KFM704, info), Kubeflow's JWT policy on
    // the ingress gateway, whose rule would refuse TCP ports the gateway does not serve (KFM420, info), and
    // istio-system's Sidecar listing istio-system/* beside ./* (KFM417, info).
    assert.match(run.stdout, /\n11 findings: 0 errors, 0 warnings, 11 infos\n$/);
    assert.deepEqual(run.stdout.match(/ info KFM\d+/g), [
      ' info KFM704',
      ' info KFM704',
      ' info KFM412',
      ' info KFM412',
      ' info KFM420',
      ' info KFM417',
      ' info KFM701',
      ' info KFM701',
      ' info KFM701',
      ' info KFM501',
      ' info KFM501',
    ]);
    assert.equal(runKfmesh(['analyze', example, '--fail-on', 'warning']).code, 0);
  });

  test('KServe without mesh (the seed misconfiguration): KFM101 for each InferenceService, with the trace', () => {
    const run = runKfmesh(['analyze', example, before]);
    assert.equal(run.code, 0, run.stderr);
    const headers =
      run.stdout.match(/^.*before\.yaml:\d+:3: warning KFM101: VirtualService \S+ spec\.gateways$/gm) ?? [];
    assert.deepEqual(
      headers.map((h) => h.replace(/^.*KFM101: VirtualService (\S+) .*$/, '$1')),
      [
        'kubeflow-user-example-com/sklearn-iris',
        'ml-team/fraud-scorer',
        'ml-team/income',
        'ml-team/sentiment',
      ],
    );
    assert.match(
      run.stdout,
      /trace: the same at Istio 1\.20: sidecar kubeflow-user-example-com\/curl-inside-mesh \[PassthroughCluster\]/,
    );
    assert.match(run.stdout, /fix: add "mesh" to spec\.gateways/);
    assert.equal(runKfmesh(['analyze', example, before, '--fail-on', 'warning']).code, 1);
  });

  test('-o json: a summary, the rules, the findings with their locations', () => {
    const run = runKfmesh(['analyze', example, before, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as {
      summary: { findings: number; warning: number };
      rules: { code: string }[];
      findings: { code: string; location: string; evidence: string[] }[];
    };
    assert.equal(result.summary.findings, 15);
    assert.equal(result.summary.warning, 4);
    // Every rule of the registry, in its order (docs/analyzers.md lists the same).
    assert.deepEqual(
      result.rules.map((r) => r.code),
      rules.map((r) => r.code),
    );
    assert.ok(result.rules.length >= 20);
    const kfm101 = result.findings.find((f) => f.code === 'KFM101');
    assert.match(kfm101?.location ?? '', /before\.yaml:\d+:3$/);
    assert.equal(kfm101?.evidence.length, 2);
  });

  test("KFM101's patches, applied as kubectl would, bind each model's routes to mesh: no KFM101 after", () => {
    const run = runKfmesh(['analyze', example, before, '-o', 'json']);
    const { findings } = JSON.parse(run.stdout) as {
      findings: { code: string; object: { namespace: string; name: string }; patch?: Operation[] }[];
    };
    const objects = parseAllDocuments(readFileSync(before, 'utf8')).map(
      (d) => d.toJS() as { kind: string; metadata: { namespace: string; name: string } },
    );
    const fixes = findings.filter((f) => f.code === 'KFM101');
    assert.equal(fixes.length, 4);
    for (const f of fixes) {
      const i = objects.findIndex(
        (o) =>
          o.kind === 'VirtualService' &&
          o.metadata.namespace === f.object.namespace &&
          o.metadata.name === f.object.name,
      );
      assert.ok(f.patch && f.patch.length >= 2, 'spec.gateways and the local-gateway match');
      const object = objects[i];
      assert.ok(object, `${f.object.namespace}/${f.object.name} is in before.yaml`);
      objects[i] = fastJsonPatch.applyPatch(object, f.patch, true, false).newDocument;
    }
    const patched = writeManifest(objects, 'patched.yaml');
    const after = runKfmesh(['analyze', example, patched, '-o', 'json']);
    const codes = (JSON.parse(after.stdout) as { findings: { code: string }[] }).findings.map((f) => f.code);
    assert.deepEqual(
      codes.filter((c) => c === 'KFM101' || c === 'KFM102'),
      [],
    );
    // The text output gives the same patch as a kubectl command.
    assert.match(
      runKfmesh(['analyze', example, before]).stdout,
      /patch: kubectl patch -n ml-team virtualservice\.networking\.istio\.io\/income --type=json -p '\[\{"op":"add","path":"\/spec\/gateways\/-","value":"mesh"\}/,
    );
  });

  test('usage: a bad --fail-on exits 2', () => {
    const bad = runKfmesh(['analyze', example, '--fail-on', 'sometimes']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--fail-on must be one of error, warning, info, never/);
  });

  test("an object's control characters are shown escaped in text, never sent to the terminal", () => {
    const vs = writeManifest([
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'evil', namespace: 'x' },
        spec: {
          hosts: ['a'],
          http: [{ route: [{ destination: { host: 'nowhere\u001b[2K\u001b[1A\r\u202e' } }] }],
        },
      },
    ]);
    const run = runKfmesh(['analyze', vs]);
    assert.equal(run.code, 1, run.stderr);
    assert.doesNotMatch(run.stdout + run.stderr, /[\u001b\r\u202e]/);
    assert.match(run.stdout, /routes to nowhere\\x1b\[2K\\x1b\[1A\\x0d\\u202e\.x\.svc/);
    // JSON keeps the string as it is, escaped by JSON itself.
    const json = runKfmesh(['analyze', vs, '-o', 'json']);
    assert.match(json.stdout, /nowhere\\u001b\[2K/);
  });

  test("istioctl's conventions: levels in either spelling, --analyzer, -S and the suppress annotation", () => {
    // The example's 11 infos: at --fail-on Info it exits 1; --output-threshold Warning prints none of them.
    const info = runKfmesh(['analyze', example, '--fail-on', 'Info', '--output-threshold', 'Warning']);
    assert.equal(info.code, 1, info.stderr);
    assert.match(info.stdout, /^0 findings: 0 errors, 0 warnings, 0 infos\n$/);
    // KFM704 on the two namespaces kept out of the mesh, by its code, its name and istioctl's analyzer.
    for (const name of ['KFM704', 'namespace-injection', 'injection.Analyzer']) {
      const chosen = runKfmesh(['analyze', example, '--analyzer', name]);
      assert.equal(chosen.code, 0, chosen.stderr);
      assert.deepEqual(chosen.stdout.match(/ info KFM\d+ \(IST\d+\): \S+ \S+/g), [
        ' info KFM704 (IST0102): Namespace auth',
        ' info KFM704 (IST0102): Namespace oauth2-proxy',
      ]);
    }
    const left = runKfmesh(['analyze', example, '--analyzer', 'KFM704', '-S', 'IST0102=Namespace oauth*']);
    assert.match(left.stdout, /Namespace auth /);
    assert.doesNotMatch(left.stdout, /oauth2-proxy/);
    const annotated = parseAllDocuments(readFileSync(example, 'utf8'))
      .map((d) => d.toJS() as KubeObject | null)
      .filter((o): o is KubeObject => o !== null)
      .map((o) =>
        o.kind === 'Namespace' && o.metadata.name === 'auth'
          ? {
              ...o,
              metadata: { ...o.metadata, annotations: { 'galley.istio.io/analyze-suppress': 'KFM704' } },
            }
          : o,
      );
    const quiet = runKfmesh(['analyze', writeManifest(annotated), '--analyzer', 'KFM704']);
    assert.doesNotMatch(quiet.stdout, /Namespace auth /);
    assert.match(quiet.stdout, /Namespace oauth2-proxy/);
    for (const bad of [
      ['--analyzer', 'KFM000'],
      ['-S', 'IST0102'],
    ]) {
      const refused = runKfmesh(['analyze', example, ...bad]);
      assert.equal(refused.code, 2);
      assert.match(
        refused.stderr,
        new RegExp(bad[0] === '-S' ? '--suppress: expected' : '--analyzer: "KFM000"'),
      );
    }
  });

  test('-o sarif: a SARIF 2.1.0 log that passes the published schema, one result per finding', () => {
    const run = runKfmesh(['analyze', example, before, '-o', 'sarif']);
    assert.equal(run.code, 0, run.stderr);
    const log = JSON.parse(run.stdout) as {
      runs: { tool: { driver: { rules: { id: string }[] } }; results: SarifResult[] }[];
    };
    const ajv = new Ajv04({ strict: false, allErrors: true, unicodeRegExp: false });
    addFormats(ajv); // the schema's uri and date-time formats are checked, not ignored with a warning
    const validate = ajv.compile(sarifSchema);
    assert.ok(validate(log), JSON.stringify(validate.errors?.slice(0, 3)));
    const results = log.runs[0]?.results ?? [];
    assert.equal(results.length, 15);
    const first = results.find((r) => r.ruleId === 'KFM101');
    assert.equal(first?.ruleId, 'KFM101');
    assert.equal(first?.level, 'warning');
    assert.match(first?.locations[0]?.physicalLocation?.artifactLocation.uri ?? '', /before\.yaml$/);
    assert.ok((first?.locations[0]?.physicalLocation?.region?.startLine ?? 0) > 0);
    // A schema violation is caught by the same validator.
    assert.equal(validate({ version: '2.1.0', runs: [{ results: [] }] }), false);
  });
});

type SarifResult = {
  ruleId: string;
  level: string;
  locations: { physicalLocation?: { artifactLocation: { uri: string }; region?: { startLine: number } } }[];
};

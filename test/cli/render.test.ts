/** `kfmesh render` and `kfmesh example` through the real program: output, determinism, bad input. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { listItems, runKfmesh, writeManifest, writeText } from '../cli-process.ts';
import { inferenceService, inferenceServiceConfig } from '../fixtures.ts';

const ingressConfig = inferenceServiceConfig();
const readyIsvc = (name: string, namespace = 'team'): KubeObject => inferenceService(name, { namespace });

type Obj = { kind: string; metadata: { name: string; namespace?: string }; spec: Record<string, unknown> };

describe('kfmesh render', () => {
  test('renders the VirtualService bound to mesh and the ExternalName Service, sorted by group, kind, namespace, name', () => {
    const file = writeManifest([readyIsvc('b'), readyIsvc('a'), ingressConfig]);
    const run = runKfmesh(['render', file, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const objects = listItems<Obj>(run.stdout);
    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.metadata.name}`),
      ['Service/a', 'Service/b', 'VirtualService/a', 'VirtualService/b'],
    );
    const vs = objects[2] as Obj;
    assert.deepEqual(vs.spec['gateways'], [
      'knative-serving/knative-local-gateway',
      'mesh',
      'knative-serving/knative-ingress-gateway',
    ]);
  });

  test('--no-mesh-gateway renders KServe before the fix: no mesh anywhere', () => {
    const file = writeManifest([readyIsvc('a'), ingressConfig]);
    const run = runKfmesh(['render', file, '-o', 'json', '--no-mesh-gateway']);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(!run.stdout.includes('"mesh"'), run.stdout);
    const vs = listItems<Obj>(run.stdout).find((o) => o.kind === 'VirtualService') as Obj;
    assert.deepEqual(vs.spec['gateways'], [
      'knative-serving/knative-local-gateway',
      'knative-serving/knative-ingress-gateway',
    ]);
  });

  test('output is byte-identical across runs and input orders, in YAML and JSON', () => {
    const objects = [
      readyIsvc('a'),
      readyIsvc('b', 'other'),
      inferenceService('c', { components: ['explainer'] }),
      ingressConfig,
    ];
    const one = writeManifest(objects);
    const reversed = writeManifest([...objects].reverse());
    for (const format of ['yaml', 'json']) {
      const first = runKfmesh(['render', one, '-o', format]);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(runKfmesh(['render', one, '-o', format]).stdout, first.stdout);
      assert.equal(runKfmesh(['render', reversed, '-o', format]).stdout, first.stdout);
    }
  });

  test('YAML output parses back to the JSON output', () => {
    const file = writeManifest([readyIsvc('a'), ingressConfig]);
    const yaml = runKfmesh(['render', file]).stdout;
    const json = listItems<unknown>(runKfmesh(['render', file, '-o', 'json']).stdout);
    assert.deepEqual(
      parseAllDocuments(yaml).map((d) => (Array.isArray(d) ? d : d.toJS())),
      json,
    );
  });

  test('reads standard input for -', () => {
    const run = runKfmesh(['render', '-', '-o', 'json'], JSON.stringify(readyIsvc('from-stdin')));
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /from-stdin\.team\.svc\.cluster\.local/);
  });

  test('without a path it renders the built-in example', () => {
    const run = runKfmesh(['render', '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(
      listItems<Obj>(run.stdout).some(
        (o) => o.kind === 'VirtualService' && o.metadata.name === 'sklearn-iris',
      ),
    );
  });
});

describe('kfmesh render: bad input', () => {
  test('malformed YAML: exit 2, file:line:column on stderr, nothing on stdout', () => {
    const file = writeText('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [oops\n');
    const run = runKfmesh(['render', file]);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(
      run.stderr,
      new RegExp(`^kfmesh: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: invalid YAML: `),
    );
  });

  test('a wrong field in inferenceservice-config: exit 2 naming the ConfigMap, key and field; nothing on stdout', () => {
    const bad = {
      ...ingressConfig,
      data: { ingress: '{"ingressGateway": "a/b", "disableIstioVirtualHost": "no"}' },
    };
    const run = runKfmesh(['render', writeManifest([readyIsvc('a'), bad])]);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(
      run.stderr,
      /input\.yaml:\d+:\d+: ConfigMap kserve\/inferenceservice-config: data\.ingress: field "disableIstioVirtualHost": expected a boolean, got string "no"/,
    );
  });

  test('an InferenceService without predictor: exit 1, its error on stderr, the others still rendered', () => {
    const broken = { ...readyIsvc('broken'), spec: { transformer: {} } };
    const run = runKfmesh([
      'render',
      writeManifest([readyIsvc('good'), broken, ingressConfig]),
      '-o',
      'json',
    ]);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /input\.yaml:\d+:\d+: InferenceService team\/broken: spec: required|InferenceService team\/broken: spec\.predictor: required/,
    );
    const names = listItems<Obj>(run.stdout).map((o) => `${o.kind}/${o.metadata.name}`);
    assert.deepEqual(names, ['Service/good', 'VirtualService/good']);
  });

  test('a 64-character name cannot form a host: exit 1 naming metadata.name', () => {
    const long = `m${'x'.repeat(63)}`;
    const run = runKfmesh(['render', writeManifest([readyIsvc(long), ingressConfig]), '-o', 'json']);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      new RegExp(`InferenceService team/${long}: metadata\\.name: .*64 characters, at most 63`),
    );
    assert.deepEqual(listItems(run.stdout), []);
  });

  test('a name whose predictor Service would be too long is refused', () => {
    const name = `m${'x'.repeat(53)}`;
    const run = runKfmesh(['render', writeManifest([readyIsvc(name), ingressConfig]), '-o', 'json']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /predictor Service name .* \(64 characters\) is not a valid Service name/);
  });

  test('usage errors exit 2', () => {
    assert.equal(runKfmesh(['render', '--mode', 'hybrid']).code, 2);
    assert.equal(runKfmesh(['render', '-o', 'xml']).code, 2);
    assert.equal(runKfmesh(['render', '--no-such-flag']).code, 2);
    assert.equal(runKfmesh(['render', '/no/such/file.yaml']).code, 2);
    assert.equal(runKfmesh(['no-such-command']).code, 2);
  });

  test('help and version exit 0', () => {
    const help = runKfmesh(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /render/);
    assert.equal(runKfmesh(['--version']).code, 0);
  });
});

describe('kfmesh example', () => {
  test('prints the example platform as YAML that render accepts', () => {
    const run = runKfmesh(['example']);
    assert.equal(run.code, 0, run.stderr);
    const docs = parseAllDocuments(run.stdout);
    const kinds = (Array.isArray(docs) ? docs : [docs]).map((d) => (d.toJS() as { kind: string }).kind);
    assert.ok(kinds.filter((k) => k === 'InferenceService').length >= 4);
    assert.ok(kinds.includes('Namespace') && kinds.includes('ConfigMap') && kinds.includes('Gateway'));
    const rendered = runKfmesh(['render', '-', '-o', 'json'], run.stdout);
    assert.equal(rendered.code, 0, rendered.stderr);
    assert.equal(rendered.stdout, runKfmesh(['render', '-o', 'json']).stdout);
  });
});

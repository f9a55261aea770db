import assert from 'node:assert/strict';
import { GroupKind } from '../../src/model/vocabulary.ts';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { InputError } from '../../src/model/errors.ts';
import { loadPaths } from '../../src/load/files.ts';
import { parseManifests } from '../../src/load/parse.ts';
import { describeReplacement, Snapshot, type Replacement } from '../../src/load/snapshot.ts';

const parse = (text: string) => parseManifests({ name: 'in.yaml', text });

function inputError(fn: () => unknown): InputError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof InputError, `expected InputError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected an InputError');
}

describe('parseManifests', () => {
  test('reads multi-document YAML with the position of every object and field', () => {
    const objects = parse(
      'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# c\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: a\nspec:\n  type: ClusterIP\n',
    );
    assert.deepEqual(
      objects.map((o) => o.object.kind),
      ['Namespace', 'Service'],
    );
    assert.deepEqual(objects[1]?.location, { file: 'in.yaml', line: 7, column: 1 });
    assert.deepEqual(objects[1]?.locate(['spec', 'type']), { file: 'in.yaml', line: 13, column: 9 });
    assert.deepEqual(objects[1]?.locate(['spec', 'missing']), objects[1]?.location);
  });

  test('skips empty documents and unwraps kind: List, keeping item positions', () => {
    const objects = parse(
      '---\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n',
    );
    assert.deepEqual(
      objects.map((o) => o.object.metadata.name),
      ['a', 'b'],
    );
    assert.equal(objects[1]?.location.line, 9);
  });

  test('reads JSON', () => {
    const objects = parseManifests({
      name: 'x.json',
      text: '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j"},"data":{"on":"yes"}}',
    });
    assert.deepEqual(objects[0]?.object['data'], { on: 'yes' });
  });

  test('reads YAML 1.1 scalars as Kubernetes does (on, y, n are booleans)', () => {
    const objects = parse(
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  a: "on"\n  b: on\n  c: n\n',
    );
    assert.deepEqual(objects[0]?.object['data'], { a: 'on', b: true, c: false });
  });

  test('a plain `.` and a plain timestamp are strings, as go-yaml reads them; `.5` is still a number', () => {
    const text =
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, creationTimestamp: 2026-01-01T00:00:05Z}\n' +
      'spec:\n  exportTo: [., -.]\n  half: .5\n  day: 2026-01-01\n';
    for (const { object } of parse(text)) {
      assert.deepEqual(object['spec'], { exportTo: ['.', '-.'], half: 0.5, day: '2026-01-01' });
      assert.equal(object.metadata['creationTimestamp'], '2026-01-01T00:00:05Z');
    }
    // The full parser (a document with an anchor) reads it alike.
    for (const { object } of parse(`${text}  x: &a 1\n  y: *a\n`))
      assert.deepEqual((object['spec'] as Record<string, unknown>)['exportTo'], ['.', '-.']);
  });

  test('malformed YAML is an error with file, line and column', () => {
    const error = inputError(() => parse('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\n'));
    assert.equal(error.context.location?.file, 'in.yaml');
    assert.ok(error.context.location?.line !== undefined && error.context.location.line >= 4, error.message);
    assert.match(error.message, /^in\.yaml:\d+:\d+: invalid YAML: /);
  });

  test('a document that is not an object, or has no kind, is an error naming the field', () => {
    assert.match(inputError(() => parse('42\n')).message, /in\.yaml:1:1: expected a Kubernetes object/);
    // A sequence is a list of objects: each item must be one, and is refused at its own position.
    assert.match(inputError(() => parse('- a\n- b\n')).message, /in\.yaml:1:3: expected a Kubernetes object/);
    assert.match(
      inputError(() => parse('apiVersion: v1\nmetadata: {name: a}\n')).message,
      /in\.yaml:1:1: kind: expected a non-empty string/,
    );
    assert.match(
      inputError(() => parse('apiVersion: v1\nkind: X\nmetadata: {name: a, labels: {num: 3}}\n')).message,
      /metadata\.labels\.num: expected a string, got number 3/,
    );
  });

  test('an empty list item is an error at its line, a null field is absent', () => {
    const service = (ports: string) =>
      `apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec:\n  ports:\n${ports}`;
    const problems = (text: string) => new Snapshot(parse(text)).problems.map((p) => p.message);
    assert.deepEqual(problems(service('  -\n  - {name: http, port: 80}\n')), [
      'expected a list item, got an empty one (null)',
    ]);
    assert.deepEqual(problems(service('  - {name: http, port: 80, appProtocol: null}\n')), []);
  });

  test('duplicate keys are an error', () => {
    assert.match(
      inputError(() => parse('apiVersion: v1\nkind: A\nkind: B\n')).message,
      /in\.yaml:3:1: invalid YAML/,
    );
  });
});

describe('loadPaths', () => {
  test('reads folders recursively in sorted order, only manifest files, and stdin for -', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kfmesh-load-'));
    mkdirSync(join(dir, 'b'));
    const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\n`;
    writeFileSync(join(dir, 'b', 'z.yml'), cm('z'));
    writeFileSync(join(dir, 'a.yaml'), cm('a'));
    writeFileSync(
      join(dir, 'c.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }),
    );
    writeFileSync(join(dir, 'notes.txt'), 'not yaml: [');
    const objects = await loadPaths([dir, '-'], async () => cm('stdin'));
    assert.deepEqual(
      objects.map((o) => o.object.metadata.name),
      ['a', 'z', 'c', 'stdin'],
    );
    assert.equal(objects[3]?.location.file, '<stdin>');
  });

  test('a missing path is an input error', async () => {
    await assert.rejects(loadPaths(['/no/such/path']), /\/no\/such\/path: no such file or directory/);
  });
});

describe('Snapshot', () => {
  const snapshot = new Snapshot(
    parse(
      [
        'apiVersion: v1\nkind: Service\nmetadata: {name: b, namespace: x, labels: {app: b}}\n',
        'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: z, labels: {app: a}}\n',
        'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x, labels: {app: a}}\n',
        'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n',
      ].join('---\n'),
    ),
  );

  test('indexes by kind, namespace, name and labels; keeps unknown kinds', () => {
    assert.deepEqual(
      snapshot.list(GroupKind.Service).map((s) => `${s.metadata.namespace}/${s.metadata.name}`),
      ['x/a', 'x/b', 'z/a'],
    );
    assert.equal(snapshot.list(GroupKind.Service, 'z').length, 1);
    assert.equal(snapshot.get(GroupKind.Service, 'x', 'b')?.metadata.name, 'b');
    assert.equal(snapshot.withLabels(GroupKind.Service, { app: 'a' }).length, 2);
    assert.equal(snapshot.list('example.com/Widget').length, 1);
    assert.equal(snapshot.all().length, 4);
  });

  test('objects are read-only', () => {
    const service = snapshot.get(GroupKind.Service, 'x', 'a');
    assert.throws(() => {
      (service as { metadata: { name: string } }).metadata.name = 'changed';
    }, TypeError);
  });

  test('an object given again replaces the earlier one, and the replacement is reported', () => {
    const first =
      'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {type: ClusterIP}\n';
    const second =
      'apiVersion: v1\nkind: Service\nmetadata: {name: a, namespace: x}\nspec: {type: NodePort}\n';
    const twice = new Snapshot(parse(`${first}---\n${second}`));
    assert.equal((twice.get(GroupKind.Service, 'x', 'a')?.['spec'] as { type: string }).type, 'NodePort');
    assert.equal(twice.all().length, 1);
    assert.equal(
      describeReplacement(twice.replacements[0] as Replacement),
      'in.yaml:6:1: Service x/a replaces the definition at in.yaml:1:1',
    );
  });
});

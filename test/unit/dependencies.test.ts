/** Node 20 smoke test: every runtime dependency, and the schema packages tests rely on, load and work here. */
import assert from 'node:assert/strict';
import { test } from 'node:test';

test('runtime dependencies load on this Node version', async () => {
  const { Command } = await import('commander');
  const { parse, stringify } = await import('yaml');
  assert.equal(new Command('x').name(), 'x');
  assert.deepEqual(parse(stringify({ a: ['b'] })), { a: ['b'] });
});

test('the core schema package tests rely on validates on this Node version', async () => {
  const { Service } = await import('kubernetes-models/v1/Service');
  assert.throws(
    () => new Service({ metadata: { name: 'a' }, spec: { ports: 'a' as unknown as [] } }).validate(),
    /ports must be array/,
  );
  new Service({ metadata: { name: 'a' }, spec: { ports: [{ port: 80 }] } }).validate();
});

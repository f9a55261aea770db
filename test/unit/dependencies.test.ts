/** Node 20 smoke test: every runtime dependency, and the schema packages tests rely on, load and work here. */
import assert from 'node:assert/strict';
import { test } from 'node:test';

test('runtime dependencies load on this Node version', async () => {
  const { Command } = await import('commander');
  const { parse, stringify } = await import('yaml');
  assert.equal(new Command('x').name(), 'x');
  assert.deepEqual(parse(stringify({ a: ['b'] })), { a: ['b'] });
});

test('schema packages validate on this Node version (they declare node >= 22)', async () => {
  const { VirtualService } =
    await import('@kubernetes-models/istio/networking.istio.io/v1beta1/VirtualService');
  const { HTTPRoute } = await import('@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1/HTTPRoute');
  assert.throws(
    () =>
      new VirtualService({ metadata: { name: 'a' }, spec: { hosts: 'a' as unknown as string[] } }).validate(),
    /hosts must be array/,
  );
  new HTTPRoute({ metadata: { name: 'a' }, spec: { parentRefs: [{ name: 'gw' }] } }).validate();
});

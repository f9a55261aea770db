/** The trace's URL parser agrees with WHATWG URL on every URL, whichever path it takes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { TraceInputError, parseUrl } from '../../src/mesh/trace/request.ts';

const label = fc.stringMatching(/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?$/);
const host = fc.oneof(
  fc.array(label, { minLength: 1, maxLength: 5 }).map((l) => l.join('.')),
  fc.constant('10.96.0.1'),
  fc.constant('[::1]'),
);
const segment = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_~!$&'()*+,;=:@.%-]{0,6}$/),
  fc.constantFrom('.', '..', 'a b', '%41'),
);
const url = fc
  .record({
    scheme: fc.constantFrom('http', 'https'),
    host,
    port: fc.option(fc.constantFrom(80, 443, 8080, 9080, 65535), { nil: undefined }),
    path: fc.array(segment, { maxLength: 5 }).map((s) => (s.length ? `/${s.join('/')}` : '')),
    query: fc.option(fc.constantFrom('?a=1', '?a=1&b=two', '?'), { nil: undefined }),
  })
  .map((u) => `${u.scheme}://${u.host}${u.port === undefined ? '' : `:${u.port}`}${u.path}${u.query ?? ''}`);

test('parseUrl equals the WHATWG reading of the same URL, and refuses what it refuses', () => {
  fc.assert(
    fc.property(url, (text) => {
      let expected: URL;
      try {
        expected = new URL(text);
      } catch {
        assert.throws(() => parseUrl(text), TraceInputError);
        return;
      }
      const got = parseUrl(text);
      assert.equal(got.scheme, expected.protocol.slice(0, -1));
      assert.equal(got.host, expected.hostname.replace(/^\[|\]$/g, ''));
      assert.equal(got.port, expected.port ? Number(expected.port) : undefined);
      assert.equal(got.authority, expected.host);
      let path = expected.pathname;
      try {
        path = decodeURIComponent(path);
      } catch {
        // an undecodable path is kept as sent
      }
      assert.equal(got.path, path || '/');
      assert.deepEqual(got.query, Object.fromEntries(expected.searchParams.entries()));
    }),
    { numRuns: 2000 },
  );
});

/** Prometheus' query API answers as kfmesh reads them (src/load/prometheus.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/model/errors.ts';
import { durationPattern, increaseQuery, samplesFromQuery } from '../../src/load/prometheus.ts';

test('an instant vector: one sample per result, the name given back, the value read', () => {
  const samples = samplesFromQuery(
    {
      status: 'success',
      data: {
        resultType: 'vector',
        result: [
          { metric: { reporter: 'source', job: 'mesh' }, value: [1764928800, '42.5'] },
          { metric: { __name__: 'x', reporter: 'destination' }, value: [1764928800, 'NaN'] },
        ],
      },
    },
    'istio_requests_total',
    'prom',
  );
  assert.deepEqual(samples[0], {
    name: 'istio_requests_total',
    labels: { reporter: 'source', job: 'mesh' },
    value: 42.5,
    line: 1,
  });
  assert.deepEqual(samples[1]?.labels, { reporter: 'destination' });
  assert.ok(Number.isNaN(samples[1]?.value));
});

test('a refused query, a matrix, a result without a value: InputErrors naming the source', () => {
  const refuses = (answer: unknown, message: RegExp) =>
    assert.throws(
      () => samplesFromQuery(answer, 'm', '--prometheus http://p'),
      (e: unknown) =>
        e instanceof InputError && e.message.startsWith('--prometheus http://p') && message.test(e.message),
    );
  refuses(
    { status: 'error', errorType: 'bad_data', error: 'parse error' },
    /refused the query: bad_data: parse error/,
  );
  refuses({ status: 'success', data: { resultType: 'matrix', result: [] } }, /not an instant vector/);
  refuses(
    { status: 'success', data: { resultType: 'vector', result: [{ metric: {} }] } },
    /result 1 has no metric and value/,
  );
  refuses(
    { status: 'success', data: { resultType: 'vector', result: [{ metric: {}, value: [1, 'many'] }] } },
    /no numeric value/,
  );
  refuses([], /not a JSON object/);
});

test('the query and the durations it takes', () => {
  assert.equal(increaseQuery('istio_requests_total', '1h'), 'increase(istio_requests_total[1h])');
  for (const ok of ['1h', '30m', '1h30m', '7d', '500ms']) assert.ok(durationPattern.test(ok), ok);
  for (const bad of ['1', 'h', '1 h', '-1h', '1h;drop']) assert.ok(!durationPattern.test(bad), bad);
});

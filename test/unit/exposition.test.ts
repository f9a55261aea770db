/** Prometheus' text exposition format as kfmesh reads it (src/load/exposition.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { InputError } from '../../src/model/errors.ts';
import { parseExposition, seriesText } from '../../src/load/exposition.ts';

const read = (text: string) => parseExposition({ name: 'metrics.prom', text });

describe('parseExposition', () => {
  test("a sidecar's istio_requests_total to PassthroughCluster, as Envoy serves it", () => {
    const { samples, types } = read(
      [
        '# HELP istio_requests_total Total requests.',
        '# TYPE istio_requests_total counter',
        'istio_requests_total{reporter="source",source_workload="notebook",destination_service_name="PassthroughCluster",response_code="200",response_flags="-"} 42',
        '',
        'istio_requests_total{reporter="source",source_workload="notebook",destination_service_name="iris",response_code="503",response_flags="UC"} 3 1764928800000',
      ].join('\n'),
    );
    assert.equal(types.get('istio_requests_total'), 'counter');
    assert.equal(samples.length, 2);
    assert.equal(samples[0]?.labels['destination_service_name'], 'PassthroughCluster');
    assert.equal(samples[0]?.value, 42);
    assert.equal(samples[0]?.line, 3);
    assert.equal(samples[1]?.timestamp, 1764928800000);
  });

  test('escapes, special values, a trailing comma, CRLF line ends, no labels, # EOF', () => {
    const { samples } = read(
      'a{path="/v1/\\"x\\"\\\\y\\n",} NaN\r\nb +Inf\r\nc{} -1.5e3\n# EOF\nnot read at all {\n',
    );
    assert.equal(samples[0]?.labels['path'], '/v1/"x"\\y\n');
    assert.ok(Number.isNaN(samples[0]?.value));
    assert.equal(samples[1]?.value, Number.POSITIVE_INFINITY);
    assert.equal(samples[2]?.value, -1500);
    assert.equal(seriesText(samples[0] ?? { name: '', labels: {} }), 'a{path="/v1/\\"x\\"\\\\y\\n"}');
  });

  const refused: [string, string, RegExp][] = [
    ['a{x="1" 4', 'metrics.prom:1:9', /expected , or } after a label/],
    ['ok 1\na{x="1} 4', 'metrics.prom:2:', /not closed/],
    ['a{x="1"} notanumber', 'metrics.prom:1:', /"notanumber" is not a number/],
    ['a{x="1",x="2"} 1', 'metrics.prom:1:', /label x appears twice/],
    ['a{x="1"} 1\na{x="1"} 2', 'metrics.prom:2:1', /series a\{x="1"\} appears twice/],
    ['# TYPE a countr', 'metrics.prom:1:1', /metric type "countr"/],
    ['{x="1"} 1', 'metrics.prom:1:1', /expected a metric name/],
    ['a{x="\\t"} 1', 'metrics.prom:1:', /unknown escape \\t/],
    ['a 1 2 3', 'metrics.prom:1:', /at most a timestamp/],
    ['a 1 soon', 'metrics.prom:1:', /timestamp "soon"/],
  ];
  for (const [text, where, message] of refused)
    test(`refused with its line: ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => read(text),
        (error: unknown) =>
          error instanceof InputError && error.message.startsWith(where) && message.test(error.message),
      );
    });
});

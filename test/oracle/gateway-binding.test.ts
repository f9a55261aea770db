/**
 * A VirtualService bound by name to a Gateway API Gateway, judged by the pinned Istio's own configuration:
 * istiod serves the Gateway's listeners as gateways of its own naming, so the VirtualService binds to
 * nothing and the request finds no virtual host (404 NR); kfmesh's trace says the same. (The analyzer
 * follows Istio's published analyzer data, of a later Istio, which counts such a binding: docs/semantics.md,
 * Gateway hosts.)
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import type { TraceResult } from '../../src/model/trace-result.ts';
import { deployment, istio, namespace, service } from '../mesh-fixtures.ts';
import { differential } from './differential.ts';
import { oracleTestOptions } from './istio-oracle.ts';

describe('a VirtualService bound to a Gateway API Gateway', oracleTestOptions(), () => {
  test('serves nothing there, as the pinned istiod configures the gateway', async () => {
    const objects: KubeObject[] = [
      namespace('web'),
      namespace('istio-system', {}),
      deployment('web', 'app'),
      service('web', 'app'),
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: 'gw', namespace: 'web' },
        spec: {
          gatewayClassName: 'istio',
          listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: 'models.example.com' }],
        },
      },
      istio('VirtualService', 'web', 'vs', {
        hosts: ['models.example.com'],
        gateways: ['web/gw'],
        http: [{ route: [{ destination: { host: 'app' } }] }],
      }),
    ];
    const report = await differential(objects, [
      {
        label: 'via',
        args: ['--from', 'external', '--url', 'http://models.example.com/x', '--via', 'web/gw'],
      },
    ]);
    assert.deepEqual(report.disagreements, []);
    assert.equal(report.compared, 1);
    const trace = JSON.parse(report.runs.get('via')?.stdout ?? '{}') as TraceResult;
    assert.deepEqual(trace.response, { code: 404, flags: 'NR' });
  });
});

/** KFM706 and KFM707 (Istio annotations) and the injector's value checks they rest on. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { annotationValueProblem } from '../../src/mesh/annotations.ts';
import { only, patched } from './analyze-fixtures.ts';

describe("annotationValueProblem: the sidecar injector's checks", () => {
  const cases: [string, string, boolean][] = [
    ['traffic.sidecar.istio.io/excludeOutboundPorts', '15020, 8080', true],
    ['traffic.sidecar.istio.io/excludeOutboundPorts', '15020,http', false],
    ['traffic.sidecar.istio.io/excludeOutboundPorts', '', true],
    ['traffic.sidecar.istio.io/includeInboundPorts', '*', true],
    ['traffic.sidecar.istio.io/excludeInboundPorts', '70000', false],
    ['traffic.sidecar.istio.io/includeOutboundIPRanges', '*', true],
    ['traffic.sidecar.istio.io/includeOutboundIPRanges', '10.0.0.0/8,fd00::/8', true],
    ['traffic.sidecar.istio.io/excludeOutboundIPRanges', '10.0.0.0', false],
    ['traffic.sidecar.istio.io/excludeOutboundIPRanges', '10.0.0.256/8', false],
    ['traffic.sidecar.istio.io/excludeOutboundIPRanges', '::ffff:10.0.0.1/128', true],
    ['traffic.sidecar.istio.io/excludeOutboundIPRanges', '1:2:3:4:5:6:7:8:9/64', false],
    ['readiness.status.sidecar.istio.io/initialDelaySeconds', '10', true],
    ['readiness.status.sidecar.istio.io/initialDelaySeconds', '-1', false],
    ['sidecar.istio.io/interceptionMode', 'TPROXY', true],
    ['sidecar.istio.io/interceptionMode', 'redirect', false],
    ['sidecar.istio.io/proxyMemory', '128Mi', true],
    ['sidecar.istio.io/proxyCPU', '100 m', false],
    ['prometheus.istio.io/merge-metrics', 'False', true],
    ['prometheus.istio.io/merge-metrics', 'no', false],
    ['traffic.sidecar.istio.io/excludeInterfaces', 'eth1,veth-abcdefghijklmno', false],
    ['sidecar.istio.io/logLevel', 'anything', true],
  ];
  for (const [name, value, accepted] of cases)
    test(`${name}: ${JSON.stringify(value)}`, () =>
      assert.equal(annotationValueProblem(name, value) === undefined, accepted));
});

/** KServe's controller as Kubeflow's manifests ship it: the sidecar turned off by annotation on the template. */
const kserveController = (
  templateAnnotations: Record<string, string>,
  labels: Record<string, string> = {},
): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'kserve-controller-manager', namespace: 'kubeflow' },
  spec: {
    selector: { matchLabels: { 'control-plane': 'kserve-controller-manager' } },
    template: {
      metadata: {
        annotations: templateAnnotations,
        labels: { 'control-plane': 'kserve-controller-manager', ...labels },
      },
      spec: { containers: [{ name: 'manager' }] },
    },
  },
});

const summary = (objects: KubeObject[], code: string) =>
  only(objects, code).map((f) => `${f.severity} ${f.istio?.[0]?.code ?? '-'} ${f.field}`);

describe('KFM706: Istio annotations that do nothing or not what was meant', () => {
  test("the real KServe controller's deprecated inject annotation: info, and none once the label is set too", () => {
    assert.deepEqual(summary([kserveController({ 'sidecar.istio.io/inject': 'false' })], 'KFM706'), [
      // A template: istioctl reports the pods made from it, so no IST code here.
      'info - spec.template.metadata.annotations.sidecar.istio.io/inject',
    ]);
    assert.deepEqual(
      summary(
        [kserveController({ 'sidecar.istio.io/inject': 'false' }, { 'sidecar.istio.io/inject': 'false' })],
        'KFM706',
      ),
      [],
    );
  });

  test("the patch sets the label to the annotation's value, which clears the finding", () => {
    const objects = [kserveController({ 'sidecar.istio.io/inject': 'false' })];
    const found = only(objects, 'KFM706');
    assert.deepEqual(found[0]?.patch, [
      { op: 'add', path: '/spec/template/metadata/labels/sidecar.istio.io~1inject', value: 'false' },
    ]);
    assert.deepEqual(only(patched(objects, found[0]), 'KFM706'), []);
    const bare: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'kubeflow', annotations: { 'sidecar.istio.io/inject': 'false' } },
      spec: { containers: [{ name: 'c' }] },
    };
    const onPod = only([bare], 'KFM706');
    assert.deepEqual(onPod[0]?.patch, [
      { op: 'add', path: '/metadata/labels', value: { 'sidecar.istio.io/inject': 'false' } },
    ]);
    assert.deepEqual(only(patched([bare], onPod[0]), 'KFM706'), []);
  });

  test('a typo, a pod annotation on the Deployment, a refused value', () => {
    const deployment = kserveController({
      'sidecar.istio.io/injet': 'false',
      'traffic.sidecar.istio.io/excludeOutboundPorts': '443,webhook',
    });
    deployment.metadata.annotations = { 'sidecar.istio.io/proxyCPU': '100m' };
    const found = only([deployment], 'KFM706');
    assert.deepEqual(
      found.map((f) => `${f.severity} ${f.istio?.[0]?.code ?? '-'} ${f.field}`),
      [
        'warning IST0107 metadata.annotations.sidecar.istio.io/proxyCPU',
        'warning - spec.template.metadata.annotations.sidecar.istio.io/injet',
        'warning - spec.template.metadata.annotations.traffic.sidecar.istio.io/excludeOutboundPorts',
      ],
    );
    assert.match(found[0]?.fix ?? '', /spec\.template\.metadata\.annotations/);
    assert.match(found[2]?.message ?? '', /"webhook" is not a port/);
  });

  test('keys outside Istio and those Istio writes itself are left alone', () => {
    const pod: KubeObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'p',
        namespace: 'kubeflow',
        annotations: { 'helm.sh/hook': 'x', 'sidecar.istio.io/status': '{}', 'istio.io/rev': 'default' },
      },
      spec: { containers: [{ name: 'c' }] },
    };
    assert.deepEqual(summary([pod], 'KFM706'), []);
  });
});

describe('KFM707: alpha Istio annotations', () => {
  const pod = (initContainers: string[]): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'ml-pipeline',
      namespace: 'kubeflow',
      annotations: { 'sidecar.istio.io/interceptionMode': 'REDIRECT', 'sidecar.istio.io/logLevel': 'debug' },
    },
    spec: { containers: [{ name: 'c' }], initContainers: initContainers.map((name) => ({ name })) },
  });
  test('with istio-init, every alpha annotation; with the CNI plugin, not those istiod sets itself', () => {
    assert.deepEqual(summary([pod(['istio-init'])], 'KFM707'), [
      'info IST0136 metadata.annotations.sidecar.istio.io/interceptionMode',
      'info IST0136 metadata.annotations.sidecar.istio.io/logLevel',
    ]);
    assert.deepEqual(summary([pod([])], 'KFM707'), [
      'info IST0136 metadata.annotations.sidecar.istio.io/logLevel',
    ]);
  });
});

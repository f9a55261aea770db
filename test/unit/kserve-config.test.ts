import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseManifests } from '../../src/load/parse.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { kserveConfigFrom, shippedIngressConfig } from '../../src/kserve/config.ts';

function snapshotWith(data: Record<string, string>, extra = ''): Snapshot {
  const lines = Object.entries(data).map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`);
  const text = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inferenceservice-config\n  namespace: kserve\ndata:\n${lines.join('\n')}\n${extra}`;
  return new Snapshot(parseManifests({ name: 'cm.yaml', text }));
}

describe('kserveConfigFrom', () => {
  test('without the ConfigMap, KServe shipped defaults apply', () => {
    const config = kserveConfigFrom(new Snapshot([]));
    assert.deepEqual(config.ingress, shippedIngressConfig);
    assert.equal(config.defaultDeploymentMode, 'Serverless');
    assert.ok(
      config.serviceAnnotationDisallowedList.includes('kubectl.kubernetes.io/last-applied-configuration'),
    );
    assert.deepEqual(config.serviceLabelDisallowedList, ['networking.knative.dev/visibility']);
  });

  test('reads data.ingress with KServe defaults for empty fields', () => {
    const config = kserveConfigFrom(
      snapshotWith({
        ingress: '{"ingressGateway": "a/b", "localGatewayService": "lg.svc", "ingressDomain": ""}',
      }),
    );
    assert.equal(config.ingress.ingressGateway, 'a/b');
    assert.equal(
      config.ingress.knativeLocalGatewayService,
      'lg.svc',
      'knativeLocalGatewayService defaults to localGatewayService',
    );
    assert.equal(config.ingress.ingressDomain, 'example.com');
    assert.equal(config.ingress.domainTemplate, '{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}');
    assert.equal(config.ingress.enableGatewayApi, false);
  });

  test('disallow lists are filled only when data.inferenceService is present, user entries appended', () => {
    assert.deepEqual(
      kserveConfigFrom(snapshotWith({ ingress: '{"ingressGateway": "a/b"}' }))
        .serviceAnnotationDisallowedList,
      [],
    );
    const config = kserveConfigFrom(
      snapshotWith({
        ingress: '{"ingressGateway": "a/b"}',
        inferenceService: '{"serviceLabelDisallowedList": ["x"]}',
      }),
    );
    assert.deepEqual(config.serviceLabelDisallowedList, ['networking.knative.dev/visibility', 'x']);
  });

  test('a wrong field type names the ConfigMap, the key, the field and the line', () => {
    assert.throws(
      () =>
        kserveConfigFrom(snapshotWith({ ingress: '{"ingressGateway": "a/b", "enableGatewayApi": "yes"}' })),
      (error: Error) => {
        assert.equal(
          error.message,
          'cm.yaml:7:12: ConfigMap kserve/inferenceservice-config: data.ingress: field "enableGatewayApi": expected a boolean, got string "yes"',
        );
        return true;
      },
    );
    assert.throws(
      () =>
        kserveConfigFrom(
          snapshotWith({ ingress: '{"ingressGateway": "a/b", "additionalIngressDomains": "x.com"}' }),
        ),
      /field "additionalIngressDomains": expected a list of strings, got string "x\.com"/,
    );
  });

  test('invalid JSON names the key', () => {
    assert.throws(
      () => kserveConfigFrom(snapshotWith({ ingress: '{"ingressGateway": ' })),
      /ConfigMap kserve\/inferenceservice-config: data\.ingress: invalid JSON/,
    );
  });

  test('KServe checks: ingressGateway required, kserveIngressGateway format, pathTemplate needs a domain', () => {
    assert.throws(
      () => kserveConfigFrom(snapshotWith({ ingress: '{}' })),
      /field "ingressGateway": required/,
    );
    assert.throws(
      () =>
        kserveConfigFrom(
          snapshotWith({
            ingress: '{"ingressGateway": "a/b", "enableGatewayApi": true, "kserveIngressGateway": "gw"}',
          }),
        ),
      /should be in the format <namespace>\/<name>/,
    );
    assert.throws(
      () =>
        kserveConfigFrom(
          snapshotWith({ deploy: '{"defaultDeploymentMode": "Fast"}', ingress: '{"ingressGateway": "a/b"}' }),
        ),
      /data\.deploy: field "defaultDeploymentMode": expected one of/,
    );
  });

  test('Knative domains come from config-domain, without _example, longest first', () => {
    const domains =
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-domain, namespace: knative-serving}\ndata: {_example: "x", example.com: "", models.example.com: ""}\n';
    const config = kserveConfigFrom(
      snapshotWith({ ingress: '{"ingressGateway": "a/b"}' }, `---\n${domains}`),
    );
    assert.deepEqual(config.domainList, ['models.example.com', 'example.com']);
  });
});

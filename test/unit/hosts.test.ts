import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  additionalHosts,
  generateDomainName,
  generateUrlPath,
  hostRegExp,
  HostError,
  quoteMeta,
} from '../../src/kserve/hosts.ts';

describe('host regexes', () => {
  test('quoteMeta escapes what Go escapes and leaves - alone', () => {
    assert.equal(
      quoteMeta('a-b.c+d*e?f(g)h|i[j]k{l}m^n$o\\p'),
      'a-b\\.c\\+d\\*e\\?f\\(g\\)h\\|i\\[j\\]k\\{l\\}m\\^n\\$o\\\\p',
    );
  });

  test('hostRegExp is the exact host with an optional port (KServe since v0.14)', () => {
    assert.equal(
      hostRegExp('my-model.test.svc.cluster.local'),
      '^my-model\\.test\\.svc\\.cluster\\.local(?::\\d{1,5})?$',
    );
    const re = new RegExp(hostRegExp('my-model.test.svc.cluster.local'));
    assert.ok(re.test('my-model.test.svc.cluster.local'));
    assert.ok(re.test('my-model.test.svc.cluster.local:80'));
    assert.ok(!re.test('my-model.test'));
    assert.ok(!re.test('my-modelXtest.svc.cluster.local'));
  });
});

describe('templates', () => {
  const values = {
    Name: 'model',
    Namespace: 'test',
    IngressDomain: 'example.com',
    Annotations: { annotation: 'annotation-value' },
    Labels: { label: 'label-value' },
  };

  test("KServe's domain_test cases", () => {
    assert.equal(
      generateDomainName('{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}', values),
      'model-test.example.com',
    );
    assert.equal(
      generateDomainName('{{ .Name }}.{{ .Namespace }}.{{ .IngressDomain }}', values),
      'model.test.example.com',
    );
    assert.equal(
      generateDomainName(
        '{{ .Name }}.{{ .Namespace }}.{{ .Annotations.annotation }}.{{ .IngressDomain }}',
        values,
      ),
      'model.test.annotation-value.example.com',
    );
    assert.equal(
      generateDomainName('{{ .Name }}.{{ .Namespace }}.{{ .Labels.label }}.{{ .IngressDomain }}', values),
      'model.test.label-value.example.com',
    );
    assert.throws(() => generateDomainName('{{ .ModelName }}.{{ .IngressDomain }}', values), HostError);
    assert.throws(
      () => generateDomainName('{{ .Name }}_{{ .Namespace }}_{{ .IngressDomain }}', values),
      /not a valid host name/,
    );
    assert.throws(() => generateDomainName('', values), HostError);
    assert.throws(() => generateDomainName('{{ .Labels.missing }}.com', values), /does not have/);
  });

  test('path templates', () => {
    assert.equal(generateUrlPath('/serving/{{ .Namespace }}/{{ .Name }}', 'm', 'ns'), '/serving/ns/m');
    assert.equal(generateUrlPath('/serving/{{ .Namespace }}/{{ .Name }}/', 'm', 'ns'), '/serving/ns/m');
    assert.throws(() => generateUrlPath('http://host/{{ .Name }}', 'm', 'ns'), /not a URL path/);
  });

  test('additional hosts keep the subdomain, drop duplicates and invalid hosts', () => {
    assert.deepEqual(
      additionalHosts(['my-domain-1.com', 'example.com'], 'my-model.test.example.com', [
        'example.com',
        'a.com',
        'b.com',
        'a.com',
        'bad_domain.com',
      ]),
      ['my-model.test.example.com', 'my-model.test.a.com', 'my-model.test.b.com'],
    );
    assert.deepEqual(additionalHosts(['other.org'], 'my-model.test.example.com', ['a.com']), []);
  });
});

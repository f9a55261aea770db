/** The Istio version an input runs, read from its images (docs/semantics.md, Behaviour by Istio version). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { installedIstioVersion, observedIstioVersion } from '../../src/mesh/installed-version.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import { formatIstioVersion, parseIstioVersion } from '../../src/mesh/istio-version.ts';

const deployment = (ns: string, name: string, image: string, container = 'discovery'): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: ns },
  spec: { template: { spec: { containers: [{ name: container, image }] } } },
});

const read = (objects: KubeObject[]) => {
  const found = installedIstioVersion(Snapshot.of(objects));
  return found ? { version: formatIstioVersion(found.version), source: found.source } : undefined;
};

describe("the input's Istio version", () => {
  test("istiod's image, the default revision's when there are several", () => {
    assert.deepEqual(read([deployment('istio-system', 'istiod', 'gcr.io/istio-release/pilot:1.28.0')]), {
      version: '1.28',
      source: "istiod's image gcr.io/istio-release/pilot:1.28.0",
    });
    const canary = [
      deployment('istio-system', 'istiod-canary', 'docker.io/istio/pilot:1.29.1'),
      deployment('istio-system', 'istiod', 'docker.io/istio/pilot:1.26.2-distroless'),
    ];
    assert.equal(read(canary)?.version, '1.26');
  });

  test("else the proxies' (the oldest), else none", () => {
    const proxies = [
      deployment('istio-system', 'istio-ingressgateway', 'docker.io/istio/proxyv2:1.27.3', 'istio-proxy'),
      deployment('apps', 'gw', 'docker.io/istio/proxyv2:1.25.0', 'istio-proxy'),
    ];
    assert.deepEqual(read(proxies), {
      version: '1.25',
      source: "the proxies' image docker.io/istio/proxyv2:1.25.0",
    });
    assert.equal(read([deployment('apps', 'app', 'nginx:1.27.0', 'nginx')]), undefined);
  });

  test('outside the modelled range: the nearest modelled version, and the source says so', () => {
    const old = read([deployment('istio-system', 'istiod', 'docker.io/istio/pilot:1.18.2')]);
    assert.equal(old?.version, '1.20');
    assert.match(old?.source ?? '', /1\.18 is older than the oldest modelled, 1\.20/);
  });

  test('every command simulates it unless told another', () => {
    const objects = [deployment('istio-system', 'istiod', 'docker.io/istio/pilot:1.22.0')];
    const mesh = compileMesh(Snapshot.of(objects));
    assert.equal(formatIstioVersion(mesh.version), '1.22');
    const given = parseIstioVersion('1.30');
    assert.ok(given);
    assert.equal(
      formatIstioVersion(compileMesh(Snapshot.of(objects), { istioVersion: given }).version),
      '1.30',
    );
    // A behaviour that differs by version (V1: waypoints report as `destination` before 1.22) follows it.
    assert.equal(compileMesh(Snapshot.of(objects)).behaviour.waypointReporter, 'waypoint');
    const older = [deployment('istio-system', 'istiod', 'docker.io/istio/pilot:1.21.0')];
    assert.equal(compileMesh(Snapshot.of(older)).behaviour.waypointReporter, 'destination');
  });

  test("metrics' istio_build: istiod's tag, else a proxy's, as the nearest modelled version", () => {
    const build = (component: string, tag: string) => ({ name: 'istio_build', labels: { component, tag } });
    const pilot = observedIstioVersion([build('proxy', '1.27.1'), build('pilot', '1.28.0')]);
    assert.equal(pilot && formatIstioVersion(pilot.version), '1.28');
    assert.equal(pilot?.source, "the metrics' istio_build (pilot 1.28.0)");
    const proxy = observedIstioVersion([build('proxy', '1.33.0')]);
    assert.equal(proxy && formatIstioVersion(proxy.version), '1.31');
    assert.match(proxy?.source ?? '', /proxy 1\.33\.0, simulated as 1\.31/);
    assert.equal(observedIstioVersion([{ name: 'istio_requests_total', labels: {} }]), undefined);
  });
});

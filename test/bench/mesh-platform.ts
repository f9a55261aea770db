/**
 * A generated sidecar mesh for the trace benchmark: `services` Services across `namespaces` namespaces, each
 * with a pod behind it and a VirtualService (header match, then a catch-all), plus a client in every namespace.
 */
import type { KubeObject } from '../../src/model/object.ts';

/** The objects of the mesh. */
export function benchMesh(services: number, namespaces: number): KubeObject[] {
  const objects: KubeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: 'istio-system' },
      data: {
        mesh: 'rootNamespace: istio-system\ntrustDomain: cluster.local\noutboundTrafficPolicy:\n  mode: ALLOW_ANY\n',
      },
    },
  ];
  for (let n = 0; n < namespaces; n++) {
    const ns = `ns-${n}`;
    objects.push({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, labels: { 'istio-injection': 'enabled' } },
    });
    objects.push(deployment(ns, 'client', 10_000 + n, namespaces));
  }
  for (let i = 0; i < services; i++) {
    const ns = `ns-${i % namespaces}`;
    const name = `svc-${i}`;
    objects.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: {
        clusterIP: ip(10, i),
        selector: { app: name },
        ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      },
    });
    objects.push(deployment(ns, name, i, namespaces));
    objects.push({
      apiVersion: 'networking.istio.io/v1beta1',
      kind: 'VirtualService',
      metadata: { name, namespace: ns },
      spec: {
        hosts: [name],
        http: [
          {
            match: [{ headers: { 'x-canary': { exact: 'true' } } }],
            route: [{ destination: { host: name, port: { number: 80 } } }],
            timeout: '5s',
          },
          { route: [{ destination: { host: name, port: { number: 80 } } }] },
        ],
      },
    });
  }
  return objects;
}

function deployment(ns: string, app: string, index: number, namespaces: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${app}-0`,
      namespace: ns,
      labels: { app, 'security.istio.io/tlsMode': 'istio' },
      annotations: { 'sidecar.istio.io/status': '{}' },
    },
    spec: {
      serviceAccountName: app,
      containers: [{ name: 'app' }, { name: 'istio-proxy', args: ['proxy', 'sidecar'] }],
    },
    status: { podIP: ip(20 + (index >= 10_000 ? 1 : 0), index % Math.max(namespaces, 10_000)) },
  };
}

function ip(first: number, i: number): string {
  return `${first}.${Math.floor(i / 65536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}`;
}

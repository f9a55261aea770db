/**
 * A generated mesh for the trace benchmark: `services` Services across `namespaces` namespaces, each with a pod
 * behind it and its routing (header match, then a catch-all: a VirtualService for sidecars, an HTTPRoute bound to
 * the Service in ambient mode), plus a client and an AuthorizationPolicy admitting POSTs in every namespace.
 */
import type { KubeObject } from '../../src/model/object.ts';
import { waypointGateway } from '../mesh-fixtures.ts';

/** The objects of the mesh; in ambient mode every namespace is enrolled and served by a waypoint of its own. */
export function benchMesh(
  services: number,
  namespaces: number,
  mode: 'sidecar' | 'ambient' = 'sidecar',
): KubeObject[] {
  const ambient = mode === 'ambient';
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
    const labels: Record<string, string> = ambient
      ? { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' }
      : { 'istio-injection': 'enabled' };
    objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } });
    objects.push(deployment(ns, 'client', 10_000 + n, namespaces, ambient));
    // Every namespace admits POSTs only: on the sidecars, or at the waypoint.
    objects.push({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'post-only', namespace: ns },
      spec: {
        ...(ambient
          ? { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'waypoint' }] }
          : {}),
        action: 'ALLOW',
        rules: [{ to: [{ operation: { methods: ['POST'] } }] }],
      },
    });
    if (ambient) {
      objects.push(waypointGateway(ns));
    }
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
    objects.push(deployment(ns, name, i, namespaces, ambient));
    objects.push(ambient ? httpRoute(ns, name) : virtualService(ns, name));
  }
  return objects;
}

/** The sidecar's routing: a header match with a timeout, then a catch-all. */
function virtualService(ns: string, name: string): KubeObject {
  return {
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
  };
}

/** The same routing for the waypoint: an HTTPRoute whose parent is the Service. */
function httpRoute(ns: string, name: string): KubeObject {
  const backendRefs = [{ name, port: 80 }];
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: ns },
    spec: {
      parentRefs: [{ group: '', kind: 'Service', name, port: 80 }],
      rules: [
        {
          matches: [{ headers: [{ name: 'x-canary', value: 'true' }] }],
          backendRefs,
          timeouts: { request: '5s' },
        },
        { backendRefs },
      ],
    },
  };
}

/** A running pod: with a sidecar, or enrolled in ambient mode. */
function deployment(
  ns: string,
  app: string,
  index: number,
  namespaces: number,
  ambient: boolean,
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: ambient
      ? {
          name: `${app}-0`,
          namespace: ns,
          labels: { app },
          annotations: { 'ambient.istio.io/redirection': 'enabled' },
        }
      : {
          name: `${app}-0`,
          namespace: ns,
          labels: { app, 'security.istio.io/tlsMode': 'istio' },
          annotations: { 'sidecar.istio.io/status': '{}' },
        },
    spec: {
      serviceAccountName: app,
      containers: ambient
        ? [{ name: 'app' }]
        : [{ name: 'app' }, { name: 'istio-proxy', args: ['proxy', 'sidecar'] }],
    },
    status: { podIP: ip(20 + (index >= 10_000 ? 1 : 0), index % Math.max(namespaces, 10_000)) },
  };
}

function ip(first: number, i: number): string {
  return `${first}.${Math.floor(i / 65536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}`;
}

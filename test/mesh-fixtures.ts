/** Builders for small meshes in simulator tests: namespaces, pods with or without sidecars, Services, Istio config. */
import type { KubeObject } from '../src/model/object.ts';
import { Snapshot } from '../src/load/snapshot.ts';
import { compileMesh } from '../src/mesh/mesh.ts';
import { parseIstioVersion } from '../src/mesh/istio-version.ts';
import { traceRequest } from '../src/mesh/trace.ts';
import type { TraceResult } from '../src/model/trace-result.ts';
import type { TraceInput } from '../src/mesh/trace/request.ts';

let nextIp = 10;

/** A namespace with sidecar injection on (or off). */
export function namespace(
  name: string,
  labels: Record<string, string> = { 'istio-injection': 'enabled' },
): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

/** A running pod named `<app>-0` (workload name = pod name); `sidecar: false` runs it without a proxy. */
export function pod(
  ns: string,
  app: string,
  options: {
    sidecar?: boolean;
    sa?: string;
    labels?: Record<string, string>;
    ip?: string;
    gateway?: boolean;
    /** Enrolled in ambient mode (no sidecar; the CNI's redirection annotation). */
    ambient?: boolean;
  } = {},
): KubeObject {
  const sidecar = options.ambient ? false : (options.sidecar ?? true);
  const labels: Record<string, string> = { app, ...(options.labels ?? {}) };
  if (sidecar && !options.gateway) labels['security.istio.io/tlsMode'] = 'istio';
  const containers: Record<string, unknown>[] = [{ name: 'app' }];
  if (sidecar || options.gateway)
    containers.push({ name: 'istio-proxy', args: ['proxy', options.gateway ? 'router' : 'sidecar'] });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${app}-0`,
      namespace: ns,
      labels,
      annotations: options.ambient
        ? { 'ambient.istio.io/redirection': 'enabled' }
        : sidecar && !options.gateway
          ? { 'sidecar.istio.io/status': '{}' }
          : {},
    },
    spec: { serviceAccountName: options.sa ?? app, containers },
    status: { podIP: options.ip ?? `10.1.0.${nextIp++}` },
  };
}

/**
 * A Deployment of `app` (no running pod: its pods are its template's), listening on 8080; `labels` go on
 * the pod template.
 */
export function deployment(ns: string, app: string, labels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: app, namespace: ns },
    spec: {
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app, ...labels } },
        spec: {
          serviceAccountName: app,
          containers: [{ name: app, image: 'example/app', ports: [{ containerPort: 8080 }] }],
        },
      },
    },
  };
}

/** A ClusterIP Service selecting `app`, with `http` port 80 → 8080 unless ports are given. */
export function service(
  ns: string,
  name: string,
  options: {
    ports?: Record<string, unknown>[];
    ip?: string;
    selector?: Record<string, string>;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  } = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns, annotations: options.annotations ?? {}, labels: options.labels ?? {} },
    spec: {
      clusterIP: options.ip ?? `10.96.0.${nextIp++}`,
      selector: options.selector ?? { app: name },
      ports: options.ports ?? [{ name: 'http', port: 80, targetPort: 8080 }],
    },
  };
}

/** An Istio object of `kind` (VirtualService, DestinationRule, Gateway, PeerAuthentication, ...). */
export function istio(
  kind: string,
  ns: string,
  name: string,
  spec: Record<string, unknown>,
  created?: string,
): KubeObject {
  const group = ['PeerAuthentication', 'AuthorizationPolicy', 'RequestAuthentication'].includes(kind)
    ? 'security.istio.io'
    : 'networking.istio.io';
  return {
    apiVersion: `${group}/v1`,
    kind,
    metadata: { name, namespace: ns, ...(created ? { creationTimestamp: created } : {}) },
    spec,
  };
}

/** The mesh config with the outbound traffic policy. */
export function meshConfig(mode: 'ALLOW_ANY' | 'REGISTRY_ONLY'): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'istio', namespace: 'istio-system' },
    data: { mesh: `outboundTrafficPolicy:\n  mode: ${mode}\n` },
  };
}

/** Traces one request through a mesh made of `objects`. */
export function trace(objects: KubeObject[], input: TraceInput, version?: string): TraceResult {
  const istioVersion = version ? parseIstioVersion(version) : undefined;
  return traceRequest(compileMesh(Snapshot.of(objects), istioVersion ? { istioVersion } : {}), input);
}

/** The labels of the first record from `proxy` with `reporter`. */
export function labelsOf(result: TraceResult, reporter: string, proxy?: string): Record<string, string> {
  const record = result.telemetry.find(
    (r) => r.reporter === reporter && (proxy === undefined || r.proxy === proxy),
  );
  if (!record)
    throw new Error(
      `no ${reporter} record${proxy ? ` from ${proxy}` : ''}: ${JSON.stringify(result.telemetry.map((r) => `${r.reporter}@${r.proxy}`))}`,
    );
  return record.labels;
}

/** The Bookinfo-like base: productpage calling reviews in `default`, both with sidecars. */
export function bookinfo(): KubeObject[] {
  return [
    namespace('default'),
    namespace('istio-system', {}),
    pod('default', 'productpage'),
    pod('default', 'reviews', { sa: 'bookinfo-reviews' }),
    service('default', 'reviews', { ports: [{ name: 'http', port: 9080, targetPort: 9080 }] }),
  ];
}

/** A waypoint Gateway (class istio-waypoint, HBONE listener); its pod is synthesized as `<name>`. */
export function waypoint(
  ns: string,
  name = 'waypoint',
  labels: Record<string, string> = {},
  allowAll = false,
): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: ns, labels },
    spec: {
      gatewayClassName: 'istio-waypoint',
      listeners: [
        {
          name: 'mesh',
          port: 15008,
          protocol: 'HBONE',
          ...(allowAll ? { allowedRoutes: { namespaces: { from: 'All' } } } : {}),
        },
      ],
    },
  };
}

/** A namespace's waypoint: a Gateway of class istio-waypoint listening for HBONE on 15008. */
export function waypointGateway(ns: string, name = 'waypoint'): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, namespace: ns },
    spec: {
      gatewayClassName: 'istio-waypoint',
      listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }],
    },
  };
}

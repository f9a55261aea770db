/**
 * A Kubeflow Notebook's route: in sidecar mode the VirtualService the notebook controller writes
 * (`notebook-<ns>-<name>`, prefix `/notebook/<ns>/<name>/` on `kubeflow/kubeflow-gateway`, rewrite and
 * request headers from the notebook's annotations, destination `<name>.<ns>.svc:80`); in ambient mode the
 * HTTPRoute on the Gateway API ingress that replaces it. And the server the notebook controller runs for
 * it: a StatefulSet and a Service on port 80.
 */
import type { KubeObject } from '../model/object.ts';
import { ownerReferenceTo } from '../model/ownership.ts';
import type { KubeflowConfig } from './config.ts';
import { Annotation, Group } from '../model/vocabulary.ts';

/** The request headers a notebook asks for (its annotation; JSON that does not parse gives none, as the controller does). */
function requestHeaders(notebook: KubeObject): Record<string, string> {
  const raw = notebook.metadata.annotations?.[Annotation.NotebookHeadersRequestSet];
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    return Object.fromEntries(
      Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
  } catch {
    return {};
  }
}

/**
 * A notebook's routes in a mode: none when the notebook controller does not use Istio (`USE_ISTIO` other
 * than `"true"`: it writes no VirtualService, so there is nothing to route or convert), else its route.
 */
export function notebookRoutesFor(
  notebook: KubeObject,
  config: KubeflowConfig,
  mode: 'sidecar' | 'ambient',
  clusterDomain: string,
): KubeObject[] {
  return config.notebookRoutes ? [notebookRouteFor(notebook, config, mode, clusterDomain)] : [];
}

/** The route object of a notebook in a mode. */
function notebookRouteFor(
  notebook: KubeObject,
  config: KubeflowConfig,
  mode: 'sidecar' | 'ambient',
  clusterDomain: string,
): KubeObject {
  const name = notebook.metadata.name ?? '';
  const namespace = notebook.metadata.namespace ?? 'default';
  const prefix = `/notebook/${namespace}/${name}/`;
  const rewrite = notebook.metadata.annotations?.[Annotation.NotebookRewriteUri] || prefix;
  const headers = requestHeaders(notebook);
  const metadata: KubeObject['metadata'] = { name: `notebook-${namespace}-${name}`, namespace };
  const owners = ownerReferenceTo(notebook, namespace);
  if (owners) metadata.ownerReferences = owners;
  if (mode === 'sidecar') {
    return {
      apiVersion: 'networking.istio.io/v1alpha3',
      kind: 'VirtualService',
      metadata,
      spec: {
        hosts: ['*'],
        gateways: [config.istioGateway],
        http: [
          {
            headers: { request: { set: headers } },
            match: [{ uri: { prefix } }],
            rewrite: { uri: rewrite },
            route: [
              { destination: { host: `${name}.${namespace}.svc.${clusterDomain}`, port: { number: 80 } } },
            ],
          },
        ],
      },
    };
  }
  const filters: Record<string, unknown>[] = [];
  const entries = Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length > 0)
    filters.push({
      type: 'RequestHeaderModifier',
      requestHeaderModifier: { set: entries.map(([n, value]) => ({ name: n, value })) },
    });
  if (rewrite !== prefix)
    filters.push({
      type: 'URLRewrite',
      urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: rewrite } },
    });
  const rule: Record<string, unknown> = {
    matches: [{ path: { type: 'PathPrefix', value: prefix } }],
    backendRefs: [{ name, port: 80 }],
  };
  if (filters.length > 0) rule['filters'] = filters;
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata,
    spec: {
      parentRefs: [
        {
          group: Group.GatewayApi,
          kind: 'Gateway',
          namespace: config.gatewayApiIngress.namespace,
          name: config.gatewayApiIngress.name,
        },
      ],
      rules: [rule],
    },
  };
}

/** What the notebook controller runs for a notebook: a StatefulSet and a Service on port 80. */
export function notebookServerObjects(ns: string, name: string): KubeObject[] {
  const labels = { statefulset: name, 'notebook-name': name };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, namespace: ns },
      spec: {
        selector: { matchLabels: { statefulset: name } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'default-editor',
            containers: [
              {
                name,
                image: 'ghcr.io/kubeflow/kubeflow/notebook-servers/jupyter-scipy:v1.10.0',
                ports: [{ name: 'notebook-port', containerPort: 8888 }],
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns },
      spec: {
        selector: { statefulset: name },
        ports: [{ name: `http-${name}`, port: 80, targetPort: 8888, protocol: 'TCP' }],
      },
    },
  ];
}

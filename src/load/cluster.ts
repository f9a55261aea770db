/**
 * A live cluster as input: every object of the kinds kfmesh reads, listed through a kubeconfig, as a
 * snapshot's entries. Kinds the server doesn't serve (no KServe, no Gateway API CRDs) are simply absent.
 * Secrets are never read.
 */
import { Group } from '../model/vocabulary.ts';
import type { KubeObject } from '../model/object.ts';
import type { KubeClient, Resource } from '../kube/client.ts';
import type { LoadedObject } from './parse.ts';

/** The kinds kfmesh reads, by API group. */
export const clusterKinds: Readonly<Record<string, readonly string[]>> = {
  '': ['Namespace', 'Service', 'Endpoints', 'Pod', 'ConfigMap'],
  'discovery.k8s.io': ['EndpointSlice'],
  apps: ['Deployment', 'StatefulSet', 'DaemonSet'],
  'networking.k8s.io': ['Ingress', 'IngressClass', 'NetworkPolicy'],
  [Group.IstioNetworking]: [
    'Gateway',
    'VirtualService',
    'DestinationRule',
    'ServiceEntry',
    'Sidecar',
    'EnvoyFilter',
  ],
  [Group.IstioSecurity]: ['AuthorizationPolicy', 'PeerAuthentication', 'RequestAuthentication'],
  [Group.GatewayApi]: ['GatewayClass', 'Gateway', 'HTTPRoute'],
  'serving.kserve.io': ['InferenceService'],
  'serving.knative.dev': ['Service'],
  'kubeflow.org': ['Profile', 'Notebook'],
};

/** The kinds kfmesh reads that this server serves (at their preferred versions). */
export async function servedKinds(client: KubeClient): Promise<Resource[]> {
  const served = await client.resources();
  return Object.entries(clusterKinds).flatMap(([group, kinds]) =>
    kinds.flatMap((kind) => served.get(`${group}/${kind}`) ?? []),
  );
}

/** What was read, for a progress line. */
export interface ClusterRead {
  source: string;
  entries: LoadedObject[];
  kinds: number;
}

/** Lists every object of the kinds kfmesh reads (optionally in some namespaces only). */
export async function readCluster(
  client: KubeClient,
  namespaces: readonly string[] = [],
): Promise<ClusterRead> {
  const source = `<cluster ${client.contextName}>`;
  const wanted = await servedKinds(client);
  const lists = await Promise.all(
    wanted.map(async (resource) => {
      if (namespaces.length === 0 || !resource.namespaced) {
        const all = await client.list(resource);
        return resource.kind === 'Namespace' && resource.group === '' && namespaces.length > 0
          ? all.filter((o) => namespaces.includes(o.metadata.name ?? ''))
          : all;
      }
      return (await Promise.all(namespaces.map((ns) => client.list(resource, ns)))).flat();
    }),
  );
  const entries = lists.flat().map((object): LoadedObject => {
    const clean = withoutManagedFields(object);
    const location = { file: source };
    return { object: clean, location, locate: () => location };
  });
  return { source, entries, kinds: wanted.length };
}

/** The object without `metadata.managedFields` (bookkeeping of the server, large, never read). */
function withoutManagedFields(object: KubeObject): KubeObject {
  if (!('managedFields' in object.metadata)) return object;
  const { managedFields: _dropped, ...metadata } = object.metadata as KubeObject['metadata'] & {
    managedFields?: unknown;
  };
  return { ...object, metadata };
}

/**
 * Flows: the requests a Kubeflow platform lives on, taken from the objects of a configuration
 * (docs/semantics.md, Flows). The equivalence check traces them on both sides of a change and reports a
 * flow that worked before and not after first, as an error (verify/flows.ts); the migration keeps the
 * sidecar of a workload whose flows from clients that keep theirs would otherwise meet no waypoint.
 *
 * The flows, as far as the input holds what they need:
 * - every route of the front door (the ingress gateways), one request per host and path a VirtualService
 *   bound to a gateway routes by prefix or exact path, or an Ingress names: login (`/dex`, `/oauth2`), the
 *   dashboard, the pipelines UI, each notebook, each model's host; sent as a Profile's owner (a token and
 *   the user header);
 * - another user refused by each notebook through the front door;
 * - from each Profile namespace: its notebook (else another pod of it) calling the pipelines API with a
 *   token, and each of its models at their in-cluster address;
 * - the API server calling each admission webhook (plaintext, no identity).
 *
 * Not flows here: controllers to their databases (TCP: kfmesh traces HTTP), what controllers create next
 * (the probes), and requests of pods the input does not hold.
 */
import { at } from '../model/checked.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { bearerToken } from '../mesh/request-variants.ts';
import { ApiServerClient } from '../mesh/trace/request.ts';
import { ProxyKind } from '../mesh/workloads.ts';
import { kubeflowConfigFrom } from '../kubeflow/config.ts';
import type { KubeObject } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { isInferenceService } from '../kserve/render.ts';
import { specOf, webhooksOf } from '../model/specs.ts';
import { isProfileNamespace } from '../kubeflow/profile.ts';
import { GroupKind, Label } from '../model/vocabulary.ts';

/** The host an external client uses where the ingress routes every host (`*`). */
export const AnyIngressHost = 'ingress.example.com';

/** A request of a flow (as the equivalence check's matrix writes one). */
export interface FlowRequest {
  /** `namespace/workload`, `external`, or the API server. */
  from: string;
  url: string;
  method: string;
  headers: Record<string, string>;
  portForward?: boolean;
}

/** One flow: a request and what the platform is meant to do with it. */
export interface Flow {
  /** What it is, in words. */
  name: string;
  /** Answered (by `target`, else by what answered it before) or refused by `target`. */
  intent: 'answered' | 'refused';
  target?: string;
  request: FlowRequest;
}

/** The host an in-cluster client uses for the pipelines API. */
const PipelinesApiService = 'ml-pipeline';
const PipelinesApiPort = 8888;
/** The issuer of Kubernetes service-account tokens (what a notebook sends to the pipelines API). */
const ServiceAccountIssuer = 'https://kubernetes.default.svc.cluster.local';

/** The flows of a configuration, from its objects. */
export function platformFlows(mesh: Mesh): Flow[] {
  const snapshot = mesh.snapshot;
  const kubeflow = kubeflowConfigFrom(snapshot);
  const issuer = snapshot
    .list(GroupKind.RequestAuthentication)
    .flatMap((ra) => specOf(ra, 'security.istio.io/RequestAuthentication').jwtRules ?? [])
    .map((r) => r.issuer)
    .filter((i): i is string => typeof i === 'string')
    .sort()[0];
  const asUser = (who: string): Record<string, string> => ({
    ...(issuer ? { authorization: bearerToken(issuer, { email: who }) } : {}),
    [kubeflow.userIdHeader]: `${kubeflow.userIdPrefix}${who}`,
  });
  const profiles = profileNamespaces(mesh);
  return [
    ...frontDoorFlows(mesh, profiles, asUser),
    ...profileFlows(mesh, profiles),
    ...webhookCalls(snapshot).map((call): Flow => ({
      name: `the API server calls webhook ${call.webhook}`,
      intent: 'answered',
      request: { from: ApiServerClient, url: call.url, method: 'POST', headers: {} },
    })),
  ];
}

const get = (from: string, url: string, headers: Record<string, string> = {}): FlowRequest => ({
  from,
  url,
  method: 'GET',
  headers,
});

/** The front door: each host and path a gateway-bound VirtualService routes, and each notebook's other user. */
function frontDoorFlows(
  mesh: Mesh,
  profiles: readonly { name: string; owner: string }[],
  asUser: (who: string) => Record<string, string>,
): Flow[] {
  const flows: Flow[] = [];
  const seen = new Set<string>();
  const owner = profiles[0]?.owner ?? 'user@example.com';
  for (const vs of mesh.virtualServices) {
    if (vs.gateways.every((g) => g === 'mesh')) continue;
    const profile = profiles.find((p) => p.name === vs.namespace);
    for (const path of vs.http.flatMap(routedPaths))
      for (const h of vs.hosts) {
        if (!isOutsideHost(mesh, h)) continue;
        const key = `${h === '*' ? AnyIngressHost : h}${path}`;
        if (seen.has(key)) continue;
        seen.add(key);
        flows.push({
          name: `the front door serves ${key} (VirtualService ${vs.namespace}/${vs.name})`,
          intent: 'answered',
          request: get('external', `http://${key}`, asUser(profile?.owner ?? owner)),
        });
        const notebook = notebookOf(mesh, vs.namespace, path);
        if (profile && notebook)
          flows.push({
            name: `another user is refused by notebook ${notebook} through the front door`,
            intent: 'refused',
            target: notebook,
            request: get('external', `http://${key}`, asUser(`other-${profile.owner}`)),
          });
      }
  }
  // Kubernetes Ingresses (KServe writes one per Standard model): their hosts and paths, served or not.
  for (const ingress of mesh.snapshot.list(GroupKind.Ingress)) {
    const profile = profiles.find((p) => p.name === ingress.metadata.namespace);
    for (const rule of specOf(ingress, 'networking.k8s.io/Ingress').rules ?? [])
      for (const entry of rule.http?.paths ?? []) {
        const path = entry.path ?? '/';
        if (!rule.host || !isOutsideHost(mesh, rule.host) || !path.startsWith('/')) continue;
        const key = `${rule.host}${path}`;
        if (seen.has(key)) continue;
        seen.add(key);
        // The workload its backend Service sends to is the one meant to answer (not a catch-all route).
        const target = backendWorkload(
          mesh,
          ingress.metadata.namespace ?? 'default',
          entry.backend?.service?.name,
        );
        flows.push({
          name: `the front door serves ${key} (Ingress ${ingress.metadata.namespace ?? 'default'}/${ingress.metadata.name ?? ''})`,
          intent: 'answered',
          ...(target ? { target } : {}),
          request: get('external', `http://${key}`, asUser(profile?.owner ?? owner)),
        });
      }
  }
  return flows;
}

/** The workload (`ns/name`) a Service of this namespace sends to, when it selects one. */
function backendWorkload(mesh: Mesh, namespace: string, service: string | undefined): string | undefined {
  const found = mesh.services.find((s) => s.namespace === namespace && s.name === service);
  const workload = found?.endpoints.find((e) => e.workload !== undefined)?.workload;
  return workload ? `${workload.namespace}/${workload.name}` : undefined;
}

/** From each Profile namespace: the pipelines API with a token, and its models at their addresses. */
function profileFlows(mesh: Mesh, profiles: readonly { name: string; owner: string }[]): Flow[] {
  const flows: Flow[] = [];
  const pipelines = mesh.services.find((s) => s.name === PipelinesApiService && s.namespace === 'kubeflow');
  for (const p of profiles) {
    const client = clientOf(mesh, p.name);
    if (!client) continue;
    if (pipelines)
      flows.push({
        name: `a notebook of Profile ${p.name} calls the pipelines API with its token`,
        intent: 'answered',
        request: get(
          client,
          `http://${pipelines.name}.${pipelines.namespace}.svc.${mesh.clusterDomain}:${PipelinesApiPort}/apis/v2beta1/healthz`,
          { authorization: bearerToken(ServiceAccountIssuer) },
        ),
      });
    for (const isvc of mesh.snapshot.list(GroupKind.InferenceService, p.name)) {
      const url = addressOf(isvc);
      if (url)
        flows.push({
          name: `a pod of Profile ${p.name} calls model ${isvc.metadata.name} at ${new URL(url).host}`,
          intent: 'answered',
          request: get(client, url),
        });
    }
  }
  return flows;
}

/** A call the API server makes to an admission webhook's Service. */
export interface WebhookCall {
  /** `<configuration>/<webhook>`. */
  webhook: string;
  namespace: string;
  service: string;
  url: string;
}

/** The API server's calls to the admission webhooks of a configuration (those served by a Service). */
export function webhookCalls(snapshot: Snapshot): WebhookCall[] {
  const kinds = [GroupKind.ValidatingWebhookConfiguration, GroupKind.MutatingWebhookConfiguration];
  return kinds.flatMap((kind) =>
    snapshot.list(kind).flatMap((configuration) =>
      webhooksOf(configuration).flatMap((hook) => {
        const service = hook.clientConfig?.service;
        if (!service?.namespace || !service.name) return [];
        return [
          {
            webhook: `${configuration.metadata.name ?? ''}/${hook.name ?? ''}`,
            namespace: service.namespace,
            service: service.name,
            url: `https://${service.name}.${service.namespace}.svc:${service.port ?? 443}${service.path ?? '/'}`,
          },
        ];
      }),
    ),
  );
}

/**
 * The paths a route takes by prefix or exact match, when it matches nothing else but the host (which the
 * flow's request names).
 */
function routedPaths(rule: Mesh['virtualServices'][number]['http'][number]): string[] {
  const matches = rule.match ?? [];
  if (matches.length === 0) return ['/'];
  return matches.flatMap((m) => {
    const keys = Object.entries(m)
      .filter(
        ([k, v]) => v !== undefined && !['uri', 'gateways', 'name', 'ignoreUriCase', 'authority'].includes(k),
      )
      .map(([k]) => k);
    if (keys.length > 0) return [];
    const uri = m.uri;
    if (!uri) return ['/'];
    const path = uri.prefix ?? uri.exact;
    return typeof path === 'string' && path.startsWith('/') ? [path] : [];
  });
}

/**
 * A host a client outside the cluster uses: `*`, or a name that is not a wildcard nor a cluster-local
 * name (`svc`, `svc.<cluster domain>`, `<name>.<namespace>`, a single label), as Knative lists beside
 * its external host.
 */
function isOutsideHost(mesh: Mesh, host: string): boolean {
  if (host === '*') return true;
  if (host.includes('*') || !host.includes('.')) return false;
  if (host.endsWith('.svc') || host.endsWith(`.svc.${mesh.clusterDomain}`)) return false;
  const labels = host.split('.');
  return !(labels.length === 2 && mesh.snapshot.get(GroupKind.Namespace, '', labels[1] ?? '') !== undefined);
}

/** Profile namespaces (a Profile of the name, or the profile controller's label) and their owners. */
function profileNamespaces(mesh: Mesh): { name: string; owner: string }[] {
  const out: { name: string; owner: string }[] = [];
  for (const ns of mesh.snapshot.list(GroupKind.Namespace)) {
    const name = ns.metadata.name ?? '';
    if (!isProfileNamespace(mesh.snapshot, ns)) continue;
    const profile = mesh.snapshot.get(GroupKind.Profile, '', name);
    const owner =
      (profile ? specOf(profile, 'kubeflow.org/Profile').owner?.name : undefined) ??
      ns.metadata.annotations?.['owner'];
    if (owner) out.push({ name, owner });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The notebook (`ns/name`) a notebook route's path names (`/notebook/<ns>/<name>/`), if it runs. */
function notebookOf(mesh: Mesh, namespace: string, path: string): string | undefined {
  const match = /^\/notebook\/([^/]+)\/([^/]+)\/?$/.exec(path);
  if (!match || match[1] !== namespace) return undefined;
  const name = at(match, 2);
  return mesh.workloads.some((w) => w.namespace === namespace && w.name === name)
    ? `${namespace}/${name}`
    : undefined;
}

/** The client of a Profile namespace: its first notebook, else its first other pod in the mesh. */
function clientOf(mesh: Mesh, namespace: string): string | undefined {
  const pods = mesh.workloads.filter(
    (w) =>
      w.namespace === namespace &&
      (w.proxy === ProxyKind.Sidecar || w.proxy === ProxyKind.Ambient) &&
      w.labels[Label.InferenceService] === undefined,
  );
  const notebooks = new Set(mesh.snapshot.list(GroupKind.Notebook, namespace).map((n) => n.metadata.name));
  const chosen = pods.find((w) => notebooks.has(w.name)) ?? pods[0];
  return chosen ? `${chosen.namespace}/${chosen.name}` : undefined;
}

/** A model's in-cluster address, as KServe reports it. */
function addressOf(isvc: KubeObject): string | undefined {
  if (!isInferenceService(isvc)) return undefined;
  const url = isvc.status?.address?.url ?? isvc.status?.components?.predictor?.address?.url;
  return typeof url === 'string' && /^https?:\/\//.test(url) ? url : undefined;
}

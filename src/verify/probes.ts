/**
 * Probes: what the platform's controllers create next, on both sides of a change (docs/semantics.md,
 * Probes). A change can leave every object there today working and still break what the controllers build
 * tomorrow from their configuration: a route bound to a gateway that is gone, an owner policy naming an
 * identity no gateway has. For each controller whose configuration is in either input, each side gets what
 * that controller would write, rendered by kfmesh's own renderers from that side's configuration:
 *
 * - the profile controller: a new Profile's namespace and owner policy, and an existing Profile's where
 *   the input does not hold them (a rendered manifest holds the Profile, not what the controller made of it);
 * - the notebook controller: a notebook server and its route in an existing and in the new Profile;
 * - KServe (with Knative Serving for Serverless): a model in the default deployment mode and one in
 *   RawDeployment, with the objects KServe and Knative write once they are ready, and the policy that
 *   admits its callers, which a Kubeflow user writes for a model (Kubeflow denies by default).
 *
 * Each probe namespace also runs a client pod (a pipeline step, say). The probe requests (the owner through
 * the ingress, another user, the in-namespace client, the pipelines UI, an in-mesh client of each model) are
 * traced on both sides; a probe fails when its outcome changes as a matrix request's would be an error or
 * a warning. What kfmesh's own controller would write is not among the probes.
 */
import type { IstioVersion } from '../mesh/istio-version.ts';
import { at } from '../model/checked.ts';
import { outsideEntry } from '../mesh/trace/gateway.ts';
import type { KubeObject } from '../model/object.ts';
import { Snapshot } from '../load/snapshot.ts';
import type { InferenceService } from '../model/inference-service.ts';
import { Annotation, Label, GroupKind } from '../model/vocabulary.ts';
import { KubeflowConfigMaps, kubeflowConfigFrom, type KubeflowConfig } from '../kubeflow/config.ts';
import { configMapOf, type ConfigMapInput } from '../model/inputs.ts';
import { OwnerPolicyName, profileObjects } from '../kubeflow/profile.ts';
import { notebookRoutesFor, notebookServerObjects } from '../kubeflow/notebook.ts';
import {
  isKnativeMode,
  KServeConfigMap,
  kserveConfigFrom,
  parseDeploymentMode,
  type KServeConfig,
} from '../kserve/config.ts';
import { renderInferenceService } from '../kserve/render.ts';
import { ingressStatusFor } from '../kserve/status.ts';
import { knativeComponentObjects, knativeGatewaysFrom } from '../kserve/knative.ts';
import { bearerToken } from '../mesh/request-variants.ts';
import { compileMesh } from '../mesh/mesh.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { ingressServed } from '../mesh/kube-ingress.ts';
import { specOf } from '../model/specs.ts';
import { checkFlows, type FlowReport } from './flows.ts';
import { outcomesByEntry, type MatrixRequest, type RequestOutcome } from './equivalence.ts';

/** One probe request, and what the platform is meant to do with it. */
export interface Probe {
  /** What it checks, in words. */
  name: string;
  /** Whether `target` is to answer it (through some ingress gateway, for a request from outside). */
  intent: 'answered' | 'refused';
  /** The workload the request is for (`ns/name`, as a trace names what answered). */
  target: string;
  request: MatrixRequest;
}

/** The probes of a pair of configurations, and the objects each side's controllers would write for them. */
export interface ProbeSet {
  probes: Probe[];
  objects: readonly [KubeObject[], KubeObject[]];
  /** The controllers whose configuration the inputs hold. */
  controllers: string[];
}

const probeName = 'kfmesh-probe';
const probeOwner = 'kfmesh-probe-owner@example.com';
const otherUser = 'kfmesh-probe-other@example.com';
const notebookName = 'kfmesh-probe-notebook';
const clientName = 'kfmesh-probe-client';
/** The host an external client uses (the notebook routes take any host). */
const ingressHost = 'ingress.example.com';

/** What the probes are made of, the same for both sides. */
interface ProbePlan {
  /** Profiles to probe: an existing one (first by name) and the new one. */
  profiles: { name: string; owner: string; existing: boolean }[];
  notebooks: boolean;
  /** The namespace the probe models run in, and their names by deployment mode. */
  models?: { namespace: string; names: { name: string; mode?: string }[] };
  pipelinesUi?: string;
  token?: string;
}

/** A probe traced on both sides. */
export interface ProbeResult extends Probe {
  before: RequestOutcome;
  after: RequestOutcome;
  /** As the platform means it before, and not after. */
  failed: boolean;
  /** The outcome is what the platform means, on each side. */
  asIntended: { before: boolean; after: boolean };
  /** Why a side is not as meant, where kfmesh can tell (an Ingress istiod ignores). */
  why?: { before?: string; after?: string };
}

/** The probes of a change. */
export interface ProbeReport {
  /** The controllers whose configuration the inputs hold (what the probes stand for). */
  controllers: string[];
  probes: number;
  failed: number;
  /** Failed probes that were refused before and reach their target after: access the change opens. */
  opened: number;
  results: ProbeResult[];
  /** The platform's flows over the objects it has now (flows.ts). */
  flows: FlowReport;
}

/**
 * Traces the probes on both sides: each side with what its controllers would write for them. A request
 * from outside is traced through each ingress gateway that serves it: the target answers it if it does
 * through one of them. A probe fails when it was as the platform means it before and is not after; one
 * that was not as meant before is reported, not failed.
 */
export function checkProbes(
  before: Snapshot,
  after: Snapshot,
  options: { clusterDomain?: string; istioVersion?: IstioVersion } = {},
): ProbeReport {
  const clusterDomain = options.clusterDomain ?? 'cluster.local';
  const set = probeSet(before, after, clusterDomain);
  const meshes = [before, after].map((s, i) =>
    compileMesh(snapshotWith(s, set.objects[i] ?? []), {
      clusterDomain,
      ...(options.istioVersion ? { istioVersion: options.istioVersion } : {}),
    }),
  );
  // Outside clients come in as the configuration before admits them, and keep coming in that way.
  const portForward = outsideEntry(at(meshes, 0)).portForward;
  const results = set.probes.map((probe): ProbeResult => {
    const request =
      portForward && probe.request.from === 'external' ? { ...probe.request, portForward } : probe.request;
    const [was, now] = meshes.map((m) => {
      // A host split between front doors fails whatever one door does (docs/semantics.md, One front door).
      const { outcomes, outcome } = outcomesByEntry(m, request);
      return outcome.split === true ? outcome : probeOutcome(probe, outcomes);
    });
    const intended = (o: RequestOutcome) =>
      (o.verdict === 'allowed' && o.answeredBy === probe.target) === (probe.intent === 'answered');
    const asIntended = { before: intended(was as RequestOutcome), after: intended(now as RequestOutcome) };
    const [whyBefore, whyAfter] = meshes.map((m, i) =>
      (i === 0 ? asIntended.before : asIntended.after) ? undefined : ignoredIngress(m, probe),
    );
    const why = { ...(whyBefore ? { before: whyBefore } : {}), ...(whyAfter ? { after: whyAfter } : {}) };
    return {
      ...probe,
      before: was as RequestOutcome,
      after: now as RequestOutcome,
      failed: asIntended.before && !asIntended.after,
      asIntended,
      ...(whyBefore || whyAfter ? { why } : {}),
    };
  });
  const compiled = (s: Snapshot) =>
    compileMesh(s, {
      clusterDomain,
      ...(options.istioVersion ? { istioVersion: options.istioVersion } : {}),
    });
  const flows = checkFlows(compiled(before), compiled(after), { portForward });
  return {
    flows,
    controllers: set.controllers,
    probes: results.length,
    failed: results.filter((r) => r.failed).length,
    opened: results.filter((r) => r.failed && r.intent === 'refused').length,
    results,
  };
}

/** An Ingress for the probe's host (from outside) that istiod does not serve, with the reason. */
function ignoredIngress(mesh: Mesh, probe: Probe): string | undefined {
  if (probe.request.from !== 'external') return undefined;
  const host = new URL(probe.request.url).hostname;
  for (const ingress of mesh.snapshot.list(GroupKind.Ingress)) {
    const hosts = (specOf(ingress, 'networking.k8s.io/Ingress').rules ?? []).map((r) => r.host);
    if (!hosts.includes(host)) continue;
    const { served, why } = ingressServed(mesh.snapshot, mesh.config, ingress);
    if (!served)
      return `istiod does not serve the Ingress ${ingress.metadata.namespace ?? ''}/${ingress.metadata.name ?? ''} that routes ${host}: ${why} (KFM404)`;
  }
  return undefined;
}

/**
 * Of a request's outcomes (one per ingress gateway): the target answering it, else a refusal, else another
 * workload answering, else the first.
 */
function probeOutcome(probe: Probe, outcomes: readonly RequestOutcome[]): RequestOutcome {
  return (
    outcomes.find((o) => o.verdict === 'allowed' && o.answeredBy === probe.target) ??
    outcomes.find((o) => o.verdict === 'denied') ??
    // Answered by another workload says more than a gateway that has no route for the host.
    outcomes.find((o) => o.verdict === 'allowed') ??
    at(outcomes, 0)
  );
}

/** The probes of two configurations. */
export function probeSet(before: Snapshot, after: Snapshot, clusterDomain: string): ProbeSet {
  const plan = planProbes(before, after);
  const controllers = [
    ...(plan.profiles.length > 0 ? ['profile controller'] : []),
    ...(plan.notebooks ? ['notebook controller'] : []),
    ...(plan.models ? ['KServe'] : []),
  ];
  const sides = [before, after].map((s) => sideObjects(s, plan, clusterDomain));
  const first = at(sides, 0);
  return {
    probes: probeRequests(plan, kubeflowConfigFrom(before), first.modelUrls, clusterDomain),
    objects: [first.objects, at(sides, 1).objects],
    controllers,
  };
}

function planProbes(before: Snapshot, after: Snapshot): ProbePlan {
  const both = [before, after];
  const configMap = (input: ConfigMapInput) =>
    both.some((s) => configMapOf(input, s.list(GroupKind.ConfigMap)) !== undefined);
  // Profiles are the profile controller's: where there are some, it runs (on its defaults without a ConfigMap).
  const profileController =
    configMap(KubeflowConfigMaps.profiles) || both.some((s) => s.list(GroupKind.Profile).length > 0);
  const existing = before
    .list(GroupKind.Profile)
    .find((p) => after.get(GroupKind.Profile, '', p.metadata.name ?? '') !== undefined);
  const taken = (name: string) => both.some((s) => s.get(GroupKind.Namespace, '', name) !== undefined);
  let fresh = probeName;
  for (let i = 2; taken(fresh); i++) fresh = `${probeName}-${i}`;
  const profiles: ProbePlan['profiles'] = [];
  if (profileController) {
    const owner = existing ? specOf(existing, 'kubeflow.org/Profile').owner?.name : undefined;
    if (existing?.metadata.name && owner)
      profiles.push({ name: existing.metadata.name, owner, existing: true });
    if (profileController) profiles.push({ name: fresh, owner: probeOwner, existing: false });
  }
  const kserve = configMap(KServeConfigMap);
  const modelNamespace = profiles[0]?.name;
  const ui = both.every((s) => s.get(GroupKind.Deployment, 'kubeflow', 'ml-pipeline-ui') !== undefined);
  const issuer = both
    .flatMap((s) => s.list(GroupKind.RequestAuthentication))
    .flatMap((ra) => specOf(ra, 'security.istio.io/RequestAuthentication').jwtRules ?? [])
    .map((r) => r.issuer)
    .filter((i): i is string => typeof i === 'string')
    .sort()[0];
  return {
    profiles,
    notebooks:
      configMap(KubeflowConfigMaps.notebooks) || both.some((s) => s.list(GroupKind.Notebook).length > 0),
    ...(kserve && modelNamespace
      ? {
          models: {
            namespace: modelNamespace,
            names: [{ name: `${probeName}-default` }, { name: `${probeName}-raw`, mode: 'RawDeployment' }],
          },
        }
      : {}),
    ...(ui ? { pipelinesUi: 'kubeflow/ml-pipeline-ui' } : {}),
    ...(issuer ? { token: bearerToken(issuer) } : {}),
  };
}

/** A probe model as KServe reports it on a side, and the workload that serves it. */
interface ModelStatus {
  url?: string;
  addressUrl?: string;
  target: string;
}

interface SideObjects {
  objects: KubeObject[];
  /** Each probe model's `status.url` and `status.address.url`, as KServe reports them on this side. */
  modelUrls: Map<string, ModelStatus>;
}

/** What one side's controllers would write for the plan. */
function sideObjects(snapshot: Snapshot, plan: ProbePlan, clusterDomain: string): SideObjects {
  const kubeflow = kubeflowConfigFrom(snapshot);
  const objects: KubeObject[] = [];
  for (const p of plan.profiles) {
    const profile: KubeObject = {
      apiVersion: 'kubeflow.org/v1',
      kind: 'Profile',
      metadata: { name: p.name },
      spec: { owner: { kind: 'User', name: p.owner } },
    };
    const [namespace, policy] = profileObjects(profile, kubeflow, 'sidecar');
    if (!p.existing) objects.push(profile);
    if (namespace && !snapshot.get(GroupKind.Namespace, '', p.name)) objects.push(namespace);
    if (policy && !snapshot.get(GroupKind.AuthorizationPolicy, p.name, OwnerPolicyName)) objects.push(policy);
    objects.push(...clientObjects(p.name));
    if (plan.notebooks) objects.push(...notebookObjects(p.name, kubeflow, clusterDomain));
  }
  const modelUrls = new Map<string, ModelStatus>();
  if (plan.models) {
    const kserve = kserveConfigFrom(snapshot, clusterDomain);
    const withProbes = snapshotWith(snapshot, objects);
    for (const m of plan.models.names) {
      const made = modelObjects(plan.models.namespace, m, kserve, withProbes);
      objects.push(...made.objects);
      modelUrls.set(m.name, made.status);
    }
  }
  return { objects, modelUrls };
}

/** A stand-in for the pods that call in a namespace (a pipeline step, say): a Deployment of the editor account. */
function clientObjects(namespace: string): KubeObject[] {
  const labels = { app: clientName };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: clientName, namespace, labels },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: { serviceAccountName: 'default-editor', containers: [{ name: 'main' }] },
        },
      },
    },
  ];
}

function notebookObjects(namespace: string, config: KubeflowConfig, clusterDomain: string): KubeObject[] {
  const notebook: KubeObject = {
    apiVersion: 'kubeflow.org/v1',
    kind: 'Notebook',
    metadata: { name: notebookName, namespace },
    spec: { template: { spec: { containers: [{ name: notebookName }] } } },
  };
  return [
    notebook,
    ...notebookServerObjects(namespace, notebookName),
    ...notebookRoutesFor(notebook, config, 'sidecar', clusterDomain),
  ];
}

/**
 * A ready probe model and what KServe (and, Serverless, Knative) writes for it on this side: KServe's
 * objects from this side's configuration, the predictor's pods and Service, and its reported status.
 */
function modelObjects(
  namespace: string,
  model: { name: string; mode?: string },
  kserve: KServeConfig,
  snapshot: Snapshot,
): { objects: KubeObject[]; status: ModelStatus } {
  const mode = parseDeploymentMode(model.mode) ?? kserve.defaultDeploymentMode;
  const predictor = `${model.name}-predictor`;
  const knative = isKnativeMode(mode);
  const domain = knative ? kserve.domainList[0] : undefined;
  const componentHost = knative
    ? `${predictor}.${namespace}.${domain ?? `svc.${kserve.clusterDomain}`}`
    : `${predictor}-${namespace}.${kserve.ingress.ingressDomain}`;
  const isvc: InferenceService = {
    apiVersion: 'serving.kserve.io/v1beta1',
    kind: 'InferenceService',
    metadata: {
      name: model.name,
      namespace,
      ...(model.mode ? { annotations: { [Annotation.DeploymentMode]: model.mode } } : {}),
    },
    spec: { predictor: { model: { modelFormat: { name: 'sklearn' } } } },
    status: {
      conditions: [
        { type: 'PredictorReady', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      components: {
        predictor: {
          url: `http://${componentHost}`,
          address: { url: `http://${predictor}.${namespace}.svc.${kserve.clusterDomain}` },
        },
      },
    },
  };
  const rendered = renderInferenceService(isvc, kserve, snapshot, { meshGateway: true });
  const running = knative
    ? knativeComponentObjects(
        {
          namespace,
          service: predictor,
          inferenceService: model.name,
          component: 'predictor',
          ...(domain ? { domain } : {}),
          clusterDomain: kserve.clusterDomain,
        },
        knativeGatewaysFrom(snapshot),
      )
    : rawPredictorObjects(namespace, model.name);
  const status = ingressStatusFor(isvc, mode, kserve, snapshot);
  // Kubeflow denies every request by default; a user admits a model's callers with a policy of their own.
  const admit: KubeObject = {
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: `allow-${model.name}`, namespace },
    spec: { selector: { matchLabels: { [Label.InferenceService]: model.name } }, rules: [{}] },
  };
  return {
    objects: [isvc, admit, ...rendered.objects, ...running],
    status: {
      target: `${namespace}/${knative ? `${predictor}-00001-deployment` : predictor}`,
      ...(status.url ? { url: status.url } : {}),
      ...(status.addressUrl ? { addressUrl: status.addressUrl } : {}),
    },
  };
}

/** A RawDeployment predictor as KServe runs it: a Deployment and a Service on port 80. */
function rawPredictorObjects(namespace: string, isvc: string): KubeObject[] {
  const name = `${isvc}-predictor`;
  const labels = { app: `isvc.${name}`, [Label.InferenceService]: isvc, component: 'predictor' };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace, labels },
      spec: {
        selector: { matchLabels: { app: `isvc.${name}` } },
        template: {
          metadata: { labels },
          spec: { containers: [{ name: 'kserve-container', ports: [{ containerPort: 8080 }] }] },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace, labels },
      spec: {
        selector: { app: `isvc.${name}` },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      },
    },
  ];
}

/** The probe requests of the plan (the same on both sides). */
function probeRequests(
  plan: ProbePlan,
  kubeflow: KubeflowConfig,
  modelUrls: ReadonlyMap<string, ModelStatus>,
  clusterDomain: string,
): Probe[] {
  const user = (who: string): Record<string, string> => ({
    ...(plan.token ? { authorization: plan.token } : {}),
    [kubeflow.userIdHeader]: `${kubeflow.userIdPrefix}${who}`,
  });
  const get = (from: string, url: string, headers: Record<string, string> = {}): MatrixRequest => ({
    from,
    url,
    method: 'GET',
    headers,
  });
  const probes: Probe[] = [];
  for (const p of plan.profiles) {
    const profile = `${p.existing ? 'existing' : 'new'} Profile ${p.name}`;
    const client = `${p.name}/${clientName}`;
    if (plan.notebooks) {
      const notebook = `${p.name}/${notebookName}`;
      const path = `/notebook/${p.name}/${notebookName}/`;
      const service = `http://${notebookName}.${p.name}.svc.${clusterDomain}${path}`;
      probes.push(
        {
          name: `the owner reaches a new notebook in the ${profile} through the ingress`,
          intent: 'answered',
          target: notebook,
          request: get('external', `http://${ingressHost}${path}`, user(p.owner)),
        },
        {
          name: `another user is refused by a new notebook in the ${profile}`,
          intent: 'refused',
          target: notebook,
          request: get('external', `http://${ingressHost}${path}`, user(otherUser)),
        },
        {
          name: `a pod of the ${profile} reaches a new notebook there`,
          intent: 'answered',
          target: notebook,
          request: get(client, service),
        },
      );
      if (plan.pipelinesUi)
        probes.push({
          name: `the pipelines UI reaches a new notebook in the ${profile} for its owner`,
          intent: 'answered',
          target: notebook,
          request: get(plan.pipelinesUi, service, { [kubeflow.userIdHeader]: p.owner }),
        });
    }
  }
  for (const m of plan.models?.names ?? []) {
    const namespace = plan.models?.namespace ?? '';
    const urls = modelUrls.get(m.name);
    if (!urls) continue;
    const mode = m.mode ?? 'the default deployment mode';
    const client = `${namespace}/${clientName}`;
    if (urls.addressUrl)
      probes.push({
        name: `a pod of ${namespace} reaches a new model in ${mode} (${m.name})`,
        intent: 'answered',
        target: urls.target,
        request: get(client, urls.addressUrl),
      });
    const owner = plan.profiles.find((p) => p.name === namespace)?.owner;
    // Another user is not probed: the policy users write for a model admits every caller.
    if (urls.url && owner && !new URL(urls.url).hostname.endsWith(`.svc.${clusterDomain}`))
      probes.push({
        name: `the owner of ${namespace} reaches a new model in ${mode} through the ingress (${m.name})`,
        intent: 'answered',
        target: urls.target,
        request: get('external', urls.url, user(owner)),
      });
  }
  return probes;
}

/** A snapshot of `snapshot`'s objects and `more` (which replace objects of the same name). */
function snapshotWith(snapshot: Snapshot, more: readonly KubeObject[]): Snapshot {
  return Snapshot.of([...snapshot.all(), ...more]);
}

/**
 * Everything KServe's ingress reconcilers generate for one InferenceService, chosen by deployment mode as
 * KServe's `CreateIngressReconciler` does, with the object's problems reported as values.
 */
import type { ObjectProblem } from '../model/errors.ts';
import { componentsOf, InferenceServiceKind, type InferenceService } from '../model/inference-service.ts';
import { isPlainObject, refOf, type KubeObject } from '../model/object.ts';
import type { FieldPath } from '../load/parse.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { isKnativeMode, parseDeploymentMode, type DeploymentMode, type KServeConfig } from './config.ts';
import { HostError, isDns1035Label, isDns1123Label } from './hosts.ts';
import { componentHTTPRouteFor, topLevelHTTPRouteFor } from './http-route.ts';
import { kubeIngressFor } from './ingress.ts';
import { ClusterLocalVisibility, componentServiceName, isStopped } from './names.ts';
import { ingressStatusFor, type IngressStatus } from './status.ts';
import { externalNameServiceFor, virtualServiceFor, type VirtualServiceOptions } from './virtual-service.ts';
import { Annotation, Label } from '../model/vocabulary.ts';

/** Options of KServe rendering. */
export type KServeRenderOptions = VirtualServiceOptions;

/** What rendering one InferenceService gives: its objects and status, or the problem that stopped it. */
export interface InferenceServiceRender {
  objects: KubeObject[];
  mode?: DeploymentMode;
  status?: IngressStatus;
  problem?: ObjectProblem;
}

/** Renders the networking objects of one InferenceService. */
export function renderInferenceService(
  isvc: InferenceService,
  config: KServeConfig,
  snapshot: Snapshot,
  options: KServeRenderOptions,
): InferenceServiceRender {
  const fail = (path: FieldPath, message: string): InferenceServiceRender => ({
    objects: [],
    problem: {
      context: {
        location: snapshot.locate(isvc, path),
        object: refOf(isvc),
        field: path.join('.') || undefined,
      },
      message,
    },
  });
  const invalid = validateInferenceService(isvc);
  if (invalid) return fail(invalid.path, invalid.message);
  const annotated = isvc.metadata.annotations?.[Annotation.DeploymentMode];
  const mode = annotated === undefined ? config.defaultDeploymentMode : parseDeploymentMode(annotated);
  if (!mode)
    return fail(
      ['metadata', 'annotations', Annotation.DeploymentMode],
      `unknown deployment mode ${JSON.stringify(annotated)}`,
    );
  try {
    const objects = isStopped(isvc)
      ? []
      : isKnativeMode(mode)
        ? knativeObjects(isvc, config, options)
        : rawObjects(isvc, config, snapshot);
    return { objects, mode, status: ingressStatusFor(isvc, mode, config, snapshot) };
  } catch (error) {
    if (error instanceof HostError) return fail(['metadata', 'name'], error.message);
    throw error;
  }
}

function knativeObjects(
  isvc: InferenceService,
  config: KServeConfig,
  options: KServeRenderOptions,
): KubeObject[] {
  if (config.ingress.disableIstioVirtualHost) return [];
  const result = virtualServiceFor(isvc, config, options);
  const objects = [externalNameServiceFor(isvc, config)];
  if ('virtualService' in result) objects.push(result.virtualService);
  return objects;
}

function rawObjects(isvc: InferenceService, config: KServeConfig, snapshot: Snapshot): KubeObject[] {
  const { ingress, clusterDomain } = config;
  const internal =
    isvc.metadata.labels?.[Label.KServeVisibility] === ClusterLocalVisibility ||
    ingress.ingressDomain === `svc.${clusterDomain}`;
  if (internal || ingress.disableIngressCreation) return [];
  if (!ingress.enableGatewayApi) {
    const kubeIngress = kubeIngressFor(isvc, config);
    return kubeIngress ? [kubeIngress] : [];
  }
  const routes = componentsOf(isvc).map((c) => componentHTTPRouteFor(isvc, c, config, snapshot));
  routes.push(topLevelHTTPRouteFor(isvc, config, snapshot));
  return routes.filter((r): r is KubeObject => r !== undefined);
}

/** The first reason this InferenceService can't be rendered, with the field it is about. */
function validateInferenceService(isvc: InferenceService): { path: FieldPath; message: string } | undefined {
  const name = isvc.metadata.name ?? '';
  const namespace = isvc.metadata.namespace ?? '';
  if (!name) return { path: ['metadata', 'name'], message: 'required' };
  if (!isDns1035Label(name)) {
    const why =
      name.length > 63
        ? `${name.length} characters, at most 63`
        : 'lower-case letters, digits and "-", starting with a letter';
    return {
      path: ['metadata', 'name'],
      message: `${JSON.stringify(name)} can't form a valid host name (${why})`,
    };
  }
  if (!isDns1123Label(namespace))
    return {
      path: ['metadata', 'namespace'],
      message: `${JSON.stringify(namespace)} is not a valid namespace name`,
    };
  if (!isPlainObject(isvc.spec))
    return { path: ['spec'], message: 'required: a mapping with at least a predictor' };
  if (!isPlainObject(isvc.spec.predictor))
    return { path: ['spec', 'predictor'], message: 'required: every InferenceService needs a predictor' };
  for (const component of ['transformer', 'explainer'] as const) {
    const spec = isvc.spec[component];
    if (spec !== undefined && !isPlainObject(spec))
      return { path: ['spec', component], message: 'expected a mapping' };
  }
  for (const component of componentsOf(isvc)) {
    const timeout = isvc.spec[component]?.timeout;
    if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0)) {
      return { path: ['spec', component, 'timeout'], message: 'expected a whole number of seconds' };
    }
    const service = componentServiceName(isvc, component);
    if (!isDns1035Label(service)) {
      return {
        path: ['metadata', 'name'],
        message: `the ${component} Service name ${JSON.stringify(service)} (${service.length} characters) is not a valid Service name (at most 63)`,
      };
    }
  }
  return undefined;
}

/** True when the object is an InferenceService. */
export function isInferenceService(object: KubeObject): object is InferenceService {
  return (
    object.kind === InferenceServiceKind.kind &&
    object.apiVersion.startsWith(`${InferenceServiceKind.group}/`)
  );
}

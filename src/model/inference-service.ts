/**
 * The part of KServe's `serving.kserve.io/v1beta1` InferenceService that networking depends on.
 * No npm package publishes these types, so they are written here from the CRD in shared/crds.
 */
import type { KubeObject } from './object.ts';

/** The group and kind of an InferenceService. */
export const InferenceServiceKind = { group: 'serving.kserve.io', kind: 'InferenceService' } as const;

/** The three components of an InferenceService, as KServe names them. */
export const Component = {
  Predictor: 'predictor',
  Transformer: 'transformer',
  Explainer: 'explainer',
} as const;
export type Component = (typeof Component)[keyof typeof Component];

/** A component spec: only the fields networking reads. */
export interface ComponentSpec {
  name?: string;
  timeout?: number;
  [key: string]: unknown;
}

/** A Knative-style condition. */
export interface KnativeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown' | string;
  reason?: string;
  message?: string;
}

/** The status of one component, as KServe reports it. */
export interface ComponentStatus {
  url?: string;
  address?: { url?: string };
  [key: string]: unknown;
}

/** An InferenceService. */
export interface InferenceService extends KubeObject {
  spec: {
    predictor?: ComponentSpec;
    transformer?: ComponentSpec;
    explainer?: ComponentSpec;
    [key: string]: unknown;
  };
  status?: {
    conditions?: KnativeCondition[];
    components?: Partial<Record<Component, ComponentStatus>>;
    url?: string;
    address?: { url?: string };
    [key: string]: unknown;
  };
}

/** The condition types KServe sets per component. */
export const ReadyCondition: Record<Component, string> = {
  predictor: 'PredictorReady',
  transformer: 'TransformerReady',
  explainer: 'ExplainerReady',
};

/** The status of a condition: 'True', 'False' or 'Unknown' (absent counts as Unknown, as in Knative). */
export function conditionStatus(isvc: InferenceService, type: string): 'True' | 'False' | 'Unknown' {
  const found = isvc.status?.conditions?.find((c) => c.type === type);
  if (!found) return 'Unknown';
  return found.status === 'True' ? 'True' : found.status === 'False' ? 'False' : 'Unknown';
}

/** True when the component's ready condition is True. */
export function isComponentReady(isvc: InferenceService, component: Component): boolean {
  return conditionStatus(isvc, ReadyCondition[component]) === 'True';
}

/** The components present in the spec, in KServe's order. */
export function componentsOf(isvc: InferenceService): Component[] {
  const present: Component[] = [Component.Predictor];
  if (isvc.spec.transformer) present.push(Component.Transformer);
  if (isvc.spec.explainer) present.push(Component.Explainer);
  return present;
}

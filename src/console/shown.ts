/**
 * What the console shows of an input object (`/api/object`): the fields that matter to the mesh, never a
 * tenant's data. The console may read a cluster with the platform team's rights and answer anyone who can
 * reach it, so it leaves out what kfmesh does not need to show (docs/reliability.md, What the console
 * shows):
 *
 * - the data of a ConfigMap that is not one of the platform's settings kfmesh reads (KServe's, Knative's,
 *   Kubeflow's controllers', the mesh config, kfmesh's own): its keys are listed, not its values;
 * - binaryData everywhere;
 * - the values of containers' environment variables (`value`; a `valueFrom` names its source only);
 * - annotations other than those of Istio, KServe, Knative, Kubeflow and kfmesh (such as
 *   `kubectl.kubernetes.io/last-applied-configuration`, which holds the whole object), and managedFields.
 *
 * Each object shown says what was left out of it.
 */
import { isConfigMapOfAny } from '../model/inputs.ts';
import { groupOf, isPlainObject, type KubeObject } from '../model/object.ts';
import { dataOf } from '../model/specs.ts';
import { platformSettingInputs } from '../render/desired-state.ts';

/** Annotation keys shown: those of the systems kfmesh models (by domain, subdomains included). */
const shownAnnotationDomains = ['istio.io', 'kserve.io', 'knative.dev', 'kubeflow.org', 'kfmesh.io'];

function annotationShown(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return shownAnnotationDomains.some((d) => domain === d || domain.endsWith(`.${d}`));
}

/** The object as the console shows it, and what was left out (one line each). */
export function shownObject(object: KubeObject): { object: KubeObject; hidden: string[] } {
  const hidden: string[] = [];
  const shown: KubeObject = structuredClone(object);
  const metadata: Record<string, unknown> = shown.metadata;
  if (metadata['managedFields'] !== undefined) {
    delete metadata['managedFields'];
    hidden.push('metadata.managedFields');
  }
  const annotations = metadata['annotations'];
  if (isPlainObject(annotations)) {
    const left = Object.keys(annotations).filter((k) => !annotationShown(k));
    metadata['annotations'] = Object.fromEntries(
      Object.entries(annotations).filter(([k]) => annotationShown(k)),
    );
    if (left.length > 0)
      hidden.push(`annotations outside Istio, KServe, Knative and Kubeflow: ${left.join(', ')}`);
  }
  if (object.kind === 'ConfigMap' && groupOf(object.apiVersion) === '') {
    if (shown['binaryData'] !== undefined) {
      delete shown['binaryData'];
      hidden.push('binaryData');
    }
    const keys = Object.keys(dataOf(object));
    if (keys.length > 0 && !isConfigMapOfAny(platformSettingInputs, object)) {
      Object.assign(shown, { data: Object.fromEntries(keys.map((k) => [k, '(hidden)'])) });
      hidden.push('data values: not a ConfigMap of platform settings kfmesh reads');
    }
  }
  const envValues = hideEnvValues(shown);
  if (envValues > 0) hidden.push(`the values of ${envValues} environment variable(s)`);
  return { object: shown, hidden };
}

/** Replaces every container's (and init container's) env values, wherever a pod template is; returns how many. */
function hideEnvValues(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + hideEnvValues(v), 0);
  if (!isPlainObject(value)) return 0;
  let count = 0;
  for (const [key, field] of Object.entries(value)) {
    if (key === 'env' && Array.isArray(field)) {
      for (const variable of field)
        if (isPlainObject(variable) && variable['value'] !== undefined) {
          variable['value'] = '(hidden)';
          count++;
        }
    } else count += hideEnvValues(field);
  }
  return count;
}

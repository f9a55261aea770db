/**
 * KFM706: Istio annotations that do nothing or not what was meant (docs/semantics.md, Istio annotations):
 * a key in Istio's namespace that Istio does not know (a typo such as `sidecar.istio.io/injet`), one on a
 * kind it does not belong on (a pod annotation on the Deployment instead of its template), a value the
 * sidecar injector refuses, and a deprecated one. Kubeflow's manifests set sidecar annotations on pod
 * templates, so templates are read too, as pods.
 */
import { Severity } from '../../model/finding.ts';
import { pointerOf, type Finding, type IstioCounterpart, type PatchOperation } from '../../model/finding.ts';
import { Label } from '../../model/vocabulary.ts';
import {
  annotationValueProblem,
  isIstioAnnotationKey,
  istioAnnotation,
  writtenByIstio,
} from '../../mesh/annotations.ts';
import { annotatedKinds, annotatedMetadata, type AnnotatedMetadata } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'annotations.K8sAnalyzer';
const misplaced: IstioCounterpart = { analyzer, code: 'IST0107' };
const unknown: IstioCounterpart = { analyzer, code: 'IST0108' };
const invalid: IstioCounterpart = { analyzer, code: 'IST0125' };
const deprecated: IstioCounterpart = { analyzer, code: 'IST0135' };

export const istioAnnotations: Rule = {
  code: 'KFM706',
  name: 'istio-annotations',
  severity: Severity.Warning,
  description:
    'an Istio annotation Istio does not know, on a kind it does not apply to, with a value the injector refuses, or deprecated',
  reads: annotatedKinds,
  istio: [misplaced, unknown, invalid, deprecated],
  check(context: AnalyzeContext): Finding[] {
    return annotatedMetadata(context.snapshot).flatMap((meta) =>
      Object.keys(meta.annotations)
        .sort()
        .flatMap((key) => problems(context, meta, key)),
    );
  },
};

function problems(context: AnalyzeContext, meta: AnnotatedMetadata, key: string): Finding[] {
  if (!isIstioAnnotationKey(key) || writtenByIstio(key)) return [];
  const where = meta.template ? 'the pod template' : `this ${meta.kind}`;
  const finding = (
    message: string,
    fix: string,
    istio: IstioCounterpart,
    severity: Severity = Severity.Warning,
  ): Finding => ({
    ...findingOf(istioAnnotations, context, meta.object, [...meta.path, key], message, {
      fix,
      // istioctl reads running pods, not templates: it reports the pods made from them, not this object.
      ...(meta.template ? { istio: [] } : { istio }),
    }),
    severity,
  });
  const known = istioAnnotation(key);
  if (!known)
    return [
      finding(
        `${key} is not an annotation Istio knows: it does nothing`,
        "correct the name (see Istio's annotation reference), or remove it",
        unknown,
      ),
    ];
  const out: Finding[] = [];
  if (known.deprecated && !(key === Label.SidecarInject && meta.labels[Label.SidecarInject] !== undefined)) {
    const inject = key === Label.SidecarInject;
    const found = finding(
      `${key} is deprecated${inject ? ', in favor of the sidecar.istio.io/inject label' : ''}`,
      inject
        ? 'set the sidecar.istio.io/inject label to the same value'
        : 'remove it, or use what replaces it',
      deprecated,
      Severity.Info,
    );
    out.push(inject ? { ...found, patch: [labelPatch(meta, key, meta.annotations[key] ?? '')] } : found);
  }
  if (known.resources.includes('Any')) return out;
  if (!known.resources.includes(meta.kind)) {
    const belongs = known.resources.join(', ');
    const hint =
      meta.kind === 'Deployment' && known.resources.includes('Pod')
        ? ' (on the pod template, spec.template.metadata.annotations)'
        : '';
    out.push(
      finding(
        `${key} applies to ${belongs}, not to a ${meta.kind}: here it does nothing`,
        `move it to the ${belongs}${hint}`,
        misplaced,
      ),
    );
    return out;
  }
  const value = meta.annotations[key] ?? '';
  const problem = annotationValueProblem(key, value);
  if (problem !== undefined)
    out.push(
      finding(
        `${key}: ${JSON.stringify(value)} is ${problem}; the sidecar injector refuses ${where}`,
        'correct the value',
        invalid,
      ),
    );
  return out;
}

/** Adds a label beside the annotations (the whole labels map when the object has none). */
function labelPatch(meta: AnnotatedMetadata, key: string, value: string): PatchOperation {
  const labels = [...meta.path.slice(0, -1), 'labels'];
  return Object.keys(meta.labels).length > 0
    ? { op: 'add', path: pointerOf([...labels, key]), value }
    : { op: 'add', path: pointerOf(labels), value: { [key]: value } };
}

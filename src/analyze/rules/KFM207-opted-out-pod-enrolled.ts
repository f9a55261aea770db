/**
 * KFM207: a pod that opted out of sidecar injection (`sidecar.istio.io/inject: "false"`) in a namespace
 * that is ambient, without opting out of ambient too (`istio.io/dataplane-mode: none`) (docs/semantics.md,
 * Ambient enrollment and waypoints). The injection opt-out kept it out of the sidecar mesh; in ambient the
 * CNI enrolls it, ztunnel takes its traffic, and the mesh's policies apply to its callers. Such pods are
 * mostly webhooks and controllers that the API server calls from outside the mesh: where a trace shows the
 * API server's call refused (a mesh-wide deny, STRICT mTLS), the finding is an error, with the trace.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { pointerOf } from '../../model/finding.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import { ApiServerClient } from '../../mesh/trace/request.ts';
import { webhookCalls } from '../../flows/flows.ts';
import { traceRequest } from '../../mesh/trace.ts';
import { ProxyKind, type Workload } from '../../mesh/workloads.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import { definingObject, traceLine } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const optedOutPodEnrolled: Rule = {
  code: 'KFM207',
  name: 'opted-out-pod-enrolled',
  severity: Severity.Error,
  description:
    'a pod that opted out of sidecar injection is enrolled in ambient by its namespace: webhooks the API server calls are refused by mesh policy',
  reads: [GroupKind.Namespace],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const mesh = context.mesh();
    const webhooks = webhookCalls(snapshot);
    const seen = new Set<string>();
    return mesh.workloads.flatMap((w) => {
      const says = w.labels[Label.SidecarInject] ?? w.annotations[Label.SidecarInject];
      if (w.proxy !== ProxyKind.Ambient || says !== 'false' || w.labels[Label.DataplaneMode] === 'ambient')
        return [];
      if (seen.has(`${w.namespace}/${w.name}`)) return [];
      seen.add(`${w.namespace}/${w.name}`);
      const refused = webhooks
        .filter((call) => servesService(mesh, w, call.namespace, call.service))
        .map((call) => ({
          call,
          result: traceRequest(mesh, { from: ApiServerClient, url: call.url, method: 'POST' }),
        }))
        .find(({ result }) => result.response.code === 0 || result.response.code >= 400);
      const { object, podMetadata } = definingObject(snapshot, w);
      const finding = findingOf(
        optedOutPodEnrolled,
        context,
        object,
        [...podMetadata, 'labels'],
        refused
          ? `opted out of sidecar injection, but namespace ${w.namespace} is ambient and enrolls it: the API server's call to webhook ${refused.call.webhook} is refused (${refused.result.summary})`
          : `opted out of sidecar injection, but namespace ${w.namespace} is ambient and enrolls it: ztunnel takes its traffic and the mesh's policies apply to its callers`,
        {
          fix: `label its pods ${Label.DataplaneMode}: none to keep them out of the mesh as before (or admit their callers with a policy)`,
          patch: [
            { op: 'add', path: pointerOf([...podMetadata, 'labels', Label.DataplaneMode]), value: 'none' },
          ],
          ...(refused
            ? { evidence: [traceLine(`POST ${refused.call.url} from ${ApiServerClient}`, refused.result)] }
            : {}),
        },
      );
      return [refused ? finding : { ...finding, severity: Severity.Warning }];
    });
  },
};

function servesService(mesh: Mesh, workload: Workload, namespace: string, name: string): boolean {
  const service = mesh.services.find((s) => s.namespace === namespace && s.name === name);
  return service?.endpoints.some((e) => e.workload === workload) ?? false;
}

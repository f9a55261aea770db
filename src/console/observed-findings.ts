/**
 * Observed traffic as findings, beside the analyzer's: an edge over which the mesh reported series that
 * this configuration does not produce (drift, KFM801, a warning), and an edge whose observed requests mostly
 * fail (KFM802: a warning from half of them, an error when every one does), each with what explains it:
 * the labels on which the nearest trace differs, or the trace that produces the failures and the analyzer
 * finding they are put down to. Each is about the workload that
 * sent the traffic (or, from outside the mesh, the one that answered), and names its edge so that the page
 * can show it.
 */
import type { Finding } from '../model/finding.ts';
import { refOf, type ObjectRef } from '../model/object.ts';
import type { Workload } from '../mesh/workloads.ts';
import { GroupKind } from '../model/vocabulary.ts';
import type { Mesh } from '../mesh/compiled.ts';
import { errorRatio, shortNumber } from './collapse.ts';
import type { ObservedEdge, ObservedGraph } from './wire.ts';

/** The least share of failed requests over an edge that is a finding. */
const failing = 0.5;

/** The findings of the traffic observed on a platform (sorted as the analyzer sorts: by code, then edge). */
export function observedFindings(mesh: Mesh, observed: ObservedGraph): Finding[] {
  const objects = new Map(mesh.workloads.map((w) => [`${w.namespace}/${w.name}`, workloadRef(mesh, w)]));
  const findings: Finding[] = [];
  for (const edge of observed.edges) {
    const object = objects.get(edge.source) ?? objects.get(edge.target) ?? namespaceRef(edge);
    if (!object) continue;
    const traffic = { source: edge.source, target: edge.target };
    const between = `${edge.source} → ${edge.target}`;
    const drift = edge.series.filter((s) => s.status === 'drift');
    const first = drift[0];
    if (first)
      findings.push({
        code: 'KFM801',
        severity: 'warning',
        object,
        traffic,
        message: `${between}: ${drift.length} series (${shortNumber(drift.reduce((n, s) => n + s.value, 0))} requests or connections) that this configuration does not produce; the nearest trace differs in ${(first.differences ?? []).join('; ')}`,
        fix: 'the cluster runs something these files do not say: compare them with the live objects (kfmesh serve --kubeconfig), or bring them up to date',
        evidence: drift.flatMap((s) => (s.summary ? [`nearest: ${s.summary} (${s.at})`] : [`${s.at}`])),
      });
    const ratio = errorRatio(edge);
    if (edge.requests > 0 && ratio >= failing) findings.push(failures(edge, { object, traffic }, ratio));
  }
  return findings.sort(
    (a, b) =>
      a.code.localeCompare(b.code) ||
      (a.traffic?.source ?? '').localeCompare(b.traffic?.source ?? '') ||
      (a.traffic?.target ?? '').localeCompare(b.traffic?.target ?? ''),
  );
}

/** KFM802: the share that failed, by response class, and what explains the failures. */
function failures(edge: ObservedEdge, about: Pick<Finding, 'object' | 'traffic'>, ratio: number): Finding {
  const failed = Object.entries(edge.codes)
    .filter(([code]) => code !== '2xx' && code !== '3xx')
    .map(([code, n]) => `${shortNumber(n)} ${code === 'other' ? 'without a response' : code}`)
    .join(', ');
  const cause = edge.series.find(
    (s) => s.status === 'explained' && !/^[23]/.test(s.labels['response_code'] ?? ''),
  );
  const finding = cause?.finding;
  return {
    code: 'KFM802',
    severity: ratio === 1 ? 'error' : 'warning',
    ...about,
    message: `${edge.source} → ${edge.target}: ${Math.round(ratio * 100)}% of ${shortNumber(edge.requests)} observed requests failed (${failed})${cause?.summary ? `; the configuration answers them so: ${cause.summary}` : ''}${finding ? `; put down to ${finding.code} on ${finding.object}` : ''}`,
    fix:
      finding?.fix ??
      'if these requests should succeed, trace one (the Tracer, or kfmesh trace) to see which proxy or policy refuses it',
    evidence: edge.series.flatMap((s) => (s.summary ? [`${s.summary} (${s.at})`] : [])),
  };
}

/** A workload's object as the files hold it: its Deployment, StatefulSet, DaemonSet or Job, else its Pod. */
function workloadRef(mesh: Mesh, workload: Workload): ObjectRef {
  const { namespace, name } = workload;
  for (const kind of [GroupKind.Deployment, GroupKind.StatefulSet, GroupKind.DaemonSet, GroupKind.Job]) {
    const owner = mesh.snapshot.get(kind, namespace, name);
    if (owner) return refOf(owner);
  }
  return refOf(workload.object);
}

/** The namespace of an edge's end inside the mesh, when no workload of the configuration is at either end. */
function namespaceRef(edge: ObservedEdge): ObjectRef | undefined {
  const namespace = [edge.source, edge.target].find((id) => id.includes('/'))?.split('/')[0];
  return namespace ? { group: '', kind: 'Namespace', namespace: '', name: namespace } : undefined;
}

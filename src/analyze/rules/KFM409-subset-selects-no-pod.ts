/**
 * KFM409: a DestinationRule subset whose labels no pod of its host carries (docs/semantics.md, Route
 * destinations). A route to that subset finds no endpoint: 503 UH (no healthy upstream). Pods are the
 * host's Service endpoints (or, for a ServiceEntry with a workload selector, the workloads it selects),
 * with the topology labels of the node they run on, as Istio adds them (region, zone, subzone, hostname).
 * A Service without a selector has the endpoints written for it, labelled only where they name a pod, so a
 * subset of it that selects by labels finds none unless they do. External hosts (a ServiceEntry without a
 * workload selector, an ExternalName Service) are left alone.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind, Label } from '../../model/vocabulary.ts';
import type { Snapshot } from '../../load/snapshot.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { resolveShortName } from '../../mesh/virtual-services.ts';
import type { Workload } from '../../mesh/workloads.ts';
import { selectorText } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

/** The node labels Istio copies onto a pod's endpoint labels. */
const topologyLabels = [Label.TopologyRegion, Label.TopologyZone, Label.TopologySubzone, Label.Hostname];

export const subsetSelectsNoPod: Rule = {
  code: 'KFM409',
  name: 'subset-selects-no-pod',
  severity: Severity.Warning,
  description: "a DestinationRule subset whose labels none of its host's pods carries: routes to it get 503",
  reads: [GroupKind.DestinationRule],
  istio: [{ analyzer: 'destinationrule.PodNotSelectedAnalyzer', code: 'IST0173' }],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    return context.snapshot.list(GroupKind.DestinationRule).flatMap((rule) => {
      const spec = specOf(rule, 'networking.istio.io/DestinationRule');
      if (!spec.host || !spec.subsets?.length) return [];
      const host = resolveShortName(spec.host, rule.metadata.namespace ?? 'default', mesh.clusterDomain);
      const service = mesh.serviceByHostname.get(host);
      if (!service || service.type === 'ExternalName') return [];
      // Without a selector a Service's endpoints are the Endpoints written for it, which carry labels only
      // where they name a pod; a ServiceEntry without one has no pods.
      const selectorless = !service.selector || Object.keys(service.selector).length === 0;
      if (selectorless && service.type === 'ServiceEntry') return [];
      const pods = service.endpoints.flatMap((e) =>
        e.workload ? [endpointLabels(context.snapshot, e.workload)] : [],
      );
      return spec.subsets.flatMap((subset, i) => {
        const labels = subset.labels ?? {};
        if (pods.some((p) => labelsMatch(p, labels))) return [];
        return [
          findingOf(
            subsetSelectsNoPod,
            context,
            rule,
            ['spec', 'subsets', i, 'labels'],
            `subset ${subset.name ?? i} selects ${
              selectorText(labels) || 'every pod'
            }, which no pod of ${host} carries${
              pods.length > 0
                ? ''
                : selectorless
                  ? ' (it has no selector, and no endpoint of it is a pod)'
                  : ' (it has none)'
            }: routes to it get 503 UH`,
            { fix: "correct the subset's labels to those of the pods it is meant for, or deploy them" },
          ),
        ];
      });
    });
  },
};

/** A pod's labels with its node's topology labels added. */
function endpointLabels(snapshot: Snapshot, workload: Workload): Readonly<Record<string, string>> {
  const nodeName = workload.object.kind === 'Pod' ? specOf(workload.object, '/Pod').nodeName : undefined;
  const node = nodeName ? snapshot.get(GroupKind.Node, '', nodeName) : undefined;
  const nodeLabels = node?.metadata.labels ?? {};
  const added = Object.fromEntries(
    topologyLabels.flatMap((k) => (nodeLabels[k] ? [[k, nodeLabels[k]]] : [])),
  );
  return { ...added, ...workload.labels };
}

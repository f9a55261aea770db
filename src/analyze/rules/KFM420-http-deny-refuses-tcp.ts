/**
 * KFM420: a DENY AuthorizationPolicy rule whose conditions are all HTTP attributes (`to` operations
 * without ports, or `from` sources that name only request principals) also refuses every TCP connection
 * under its scope (docs/semantics.md, Authorization on TCP ports). A proxy enforces policies on a port it
 * does not serve as HTTP with Envoy's network RBAC filter, which cannot see methods, paths, hosts, headers
 * or tokens: istiod leaves those conditions out there, and a DENY rule without its conditions denies
 * everything. Istio's validation warns of the same rule (istioctl: IST0133). The finding names the ports
 * refused today (a warning), or says none is (an info: Kubeflow's own JWT policy on its ingress gateway,
 * whose servers are all HTTP).
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { l4OperationFields, l4SourceFields } from '../../mesh/ambient.ts';
import { policySpec } from '../../mesh/authorization.ts';
import type { Mesh } from '../../mesh/compiled.ts';
import { servesHttp } from '../../mesh/gateways.ts';
import { Protocol, servicePortsOf } from '../../mesh/services.ts';
import { ProxyKind, type Workload } from '../../mesh/workloads.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const httpDenyRefusesTcp: Rule = {
  code: 'KFM420',
  name: 'http-deny-refuses-tcp',
  severity: Severity.Warning,
  description:
    'a DENY rule whose conditions are all HTTP attributes: on ports not served as HTTP those conditions are dropped, and the rule refuses every TCP connection (info where no such port is in its scope yet)',
  reads: [GroupKind.AuthorizationPolicy],
  istio: [{ analyzer: 'schemaValidation.CollectionValidationAnalyzer', code: 'IST0133' }],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const findings: Finding[] = [];
    for (const policy of context.snapshot.list(GroupKind.AuthorizationPolicy)) {
      const spec = policySpec(policy);
      if (spec.action !== 'DENY') continue;
      const index = (spec.rules ?? []).findIndex((rule) => rule !== null && onlyHttpConditions(rule));
      if (index < 0) continue;
      const ns = policy.metadata.namespace ?? 'default';
      const selector = spec.selector?.matchLabels ?? {};
      const scoped = spec.targetRefs === undefined && spec.targetRef === undefined;
      const tcpPorts = scoped
        ? [
            ...new Set(
              mesh.workloads
                .filter(
                  (w) =>
                    (ns === mesh.config.rootNamespace || w.namespace === ns) &&
                    labelsMatch(w.labels, selector),
                )
                .flatMap((w) => tcpPortsOf(mesh, w)),
            ),
          ].sort()
        : [];
      const today =
        tcpPorts.length > 0
          ? `these ports under its scope are refused whole: ${tcpPorts.slice(0, 5).join(', ')}${tcpPorts.length > 5 ? `, and ${tcpPorts.length - 5} more` : ''}`
          : 'no port under its scope is served as TCP today; one added later is refused whole';
      const finding = findingOf(
        httpDenyRefusesTcp,
        context,
        policy,
        ['spec', 'rules', index],
        `rule ${index} of this DENY policy has only HTTP conditions, which a proxy cannot check on a TCP connection, so there it denies every connection: ${today}`,
        {
          fix: 'limit the rule to the HTTP ports it is meant for (to.operation.ports), or give it a TCP-level condition (principals, namespaces, ipBlocks)',
        },
      );
      // Where no port is refused today, it is a note for later.
      findings.push(tcpPorts.length > 0 ? finding : { ...finding, severity: Severity.Info });
    }
    return findings;
  },
};

/** Inbound protocols a sidecar serves with the network filter, whole: TCP, and TLS it passes through. */
const tcpProtocols: ReadonlySet<string> = new Set([Protocol.TCP, Protocol.TLS, Protocol.HTTPS]);

/**
 * The ports of a workload whose connections its proxy authorizes with the network filter: a sidecar's
 * Service ports of a TCP protocol (a sniffed port serves HTTP requests with the HTTP filter), a gateway's
 * servers that do not serve HTTP. Ambient pods and waypoints have other rules (KFM201).
 */
function tcpPortsOf(mesh: Mesh, w: Workload): string[] {
  if (w.proxy === ProxyKind.Sidecar)
    return servicePortsOf(mesh, w)
      .filter((p) => tcpProtocols.has(p.port.protocol))
      .map((p) => `${p.service.namespace}/${p.service.name}:${p.port.port} (${p.port.protocol})`);
  return (mesh.gateways.get(w)?.servers ?? [])
    .filter((s) => !servesHttp(s))
    .map((s) => `gateway ${s.gateway} port ${s.port} (${s.protocol})`);
}
type PolicyRule = NonNullable<ReturnType<typeof policySpec>['rules']>[number];

/**
 * What Envoy's network filter can check of a source: the L4 fields of ztunnel's table, and the remote IP
 * blocks (the PROXY protocol's address), which the filter reads and ztunnel does not.
 */
const tcpSourceFields: ReadonlySet<string> = new Set([
  ...l4SourceFields,
  'remoteIpBlocks',
  'notRemoteIpBlocks',
]);

/**
 * Istio's condition: the rule has sources and no operations, and no source names a TCP-level attribute;
 * or it has operations, and none names ports.
 */
function onlyHttpConditions(rule: PolicyRule): boolean {
  const sources = (rule.from ?? []).flatMap((f) => (f?.source ? [f.source] : []));
  const operations = (rule.to ?? []).flatMap((t) => (t?.operation ? [t.operation] : []));
  const tcpInFrom = sources.some((s) => Object.keys(s).some((k) => tcpSourceFields.has(k)));
  const tcpInTo = operations.some((o) => Object.keys(o).some((k) => l4OperationFields.has(k)));
  return (sources.length > 0 && operations.length === 0 && !tcpInFrom) || (operations.length > 0 && !tcpInTo);
}

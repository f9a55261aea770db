/**
 * KFM703: the Services of a workload with a sidecar that disagree about its ports (docs/semantics.md,
 * Sidecar outbound): one port number with two protocols (TCP and UDP) across its Services, or one target
 * port reached through Service ports of different protocols. The sidecar builds one inbound listener per
 * target port, with one protocol: one of the Services' traffic is handled as the other's.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding, IstioCounterpart } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { addTo } from '../../model/multimap.ts';
import { ProxyKind } from '../../mesh/workloads.ts';
import { protocolOf } from '../../mesh/services.ts';
import { definingObject } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'deployment.ServiceAssociationAnalyzer';
const twoProtocols: IstioCounterpart = { analyzer, code: 'IST0116' };
const twoPorts: IstioCounterpart = { analyzer, code: 'IST0137' };

export const servicePortsConflict: Rule = {
  code: 'KFM703',
  name: 'service-ports-conflict',
  severity: Severity.Warning,
  description:
    "a workload's Services give one port two protocols, or reach one target port through two Service ports: its sidecar handles one as the other",
  reads: [GroupKind.Deployment],
  istio: [twoProtocols, twoPorts],
  check(context: AnalyzeContext): Finding[] {
    const mesh = context.mesh();
    const seen = new Set<KubeObject>();
    const findings: Finding[] = [];
    for (const w of mesh.workloads) {
      if (w.proxy !== ProxyKind.Sidecar) continue;
      const { object } = definingObject(context.snapshot, w);
      if (object.kind !== 'Deployment' || seen.has(object)) continue;
      seen.add(object);
      const protocols = new Map<number, Set<string>>();
      const users = new Map<number, string[]>();
      // By target port: the Service ports that reach it, with their Service and Istio protocol.
      const targets = new Map<string, Map<number, { service: string; protocol: string }>>();
      for (const service of mesh.services) {
        if (
          service.namespace !== w.namespace ||
          !service.selector ||
          Object.keys(service.selector).length === 0
        )
          continue;
        if (!labelsMatch(w.labels, service.selector)) continue;
        for (const port of specOf(service.object, '/Service').ports ?? []) {
          const number = port.port ?? 0;
          const set = protocols.get(number) ?? new Set<string>();
          protocols.set(number, set.add(port.protocol ?? 'TCP'));
          addTo(users, number, service.name);
          const target =
            port.targetPort === undefined || port.targetPort === 0 ? String(number) : String(port.targetPort);
          const ports = targets.get(target) ?? new Map<number, { service: string; protocol: string }>();
          ports.set(number, { service: service.name, protocol: protocolOf(port) });
          targets.set(target, ports);
        }
      }
      for (const [port, set] of protocols)
        if (set.size > 1)
          findings.push(
            findingOf(
              servicePortsConflict,
              context,
              object,
              ['metadata', 'name'],
              `Services ${[...new Set(users.get(port) ?? [])].sort().join(', ')} give port ${port} of its pods different protocols (${[...set].sort().join(', ')})`,
              {
                fix: 'give the port one protocol in every Service that selects these pods',
                istio: twoProtocols,
              },
            ),
          );
      for (const [target, ports] of targets) {
        // Ports of one protocol share the inbound listener without harm (an S3 port and its alias).
        if (ports.size < 2 || new Set([...ports.values()].map((p) => p.protocol)).size < 2) continue;
        const services = [...new Set([...ports.values()].map((p) => p.service))].sort().join(', ');
        const through = [...ports]
          .sort(([a], [b]) => a - b)
          .map(([n, p]) => `${n} (${p.protocol})`)
          .join(', ');
        findings.push(
          findingOf(
            servicePortsConflict,
            context,
            object,
            ['metadata', 'name'],
            `Services ${services} reach target port ${target} of its pods through ports ${through}: its sidecar has one inbound listener, of one protocol, for it`,
            {
              fix: 'reach each target port through Service ports of one protocol',
              istio: twoPorts,
            },
          ),
        );
      }
    }
    return findings;
  },
};

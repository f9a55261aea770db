/**
 * KFM412: two Istio Gateways on one gateway pod (the same selector, or a pod both select) with servers on
 * the same port that list the same host and bind address (docs/semantics.md, Gateways). For servers with
 * TLS settings istiod keeps one and skips the other (its hosts are not served with its certificate); for
 * plain servers the VirtualServices bound to either Gateway share that port's routes for the host, which
 * neither Gateway's owner sees from their own object (reported as info: Istio merges them by design, and
 * Kubeflow's own kubeflow-gateway shares the ingress gateway's port 80 with istio-ingressgateway this way).
 * Each Gateway of such a pair is reported.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { specOf, type IstioServer } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { labelsMatch } from '../../load/snapshot.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const conflictingGateways: Rule = {
  code: 'KFM412',
  name: 'conflicting-gateways',
  severity: Severity.Warning,
  description:
    'two Gateways on one gateway pod claim a host on one port: a TLS server of one is skipped, or their routes for the host merge unseen',
  reads: [GroupKind.IstioGateway],
  istio: [{ analyzer: 'gateway.ConflictingGatewayAnalyzer', code: 'IST0145' }],
  check(context: AnalyzeContext): Finding[] {
    const workloads = context.mesh().workloads;
    const gateways = context.snapshot.list(GroupKind.IstioGateway).map((object) => {
      const spec = specOf(object, 'networking.istio.io/Gateway');
      const selector = spec.selector ?? {};
      return { object, selector, servers: spec.servers ?? [], key: selectorKey(selector) };
    });
    const sharePod = (a: (typeof gateways)[number], b: (typeof gateways)[number]) =>
      a.key === b.key ||
      workloads.some((w) => labelsMatch(w.labels, a.selector) && labelsMatch(w.labels, b.selector));
    const findings: Finding[] = [];
    for (const a of gateways) {
      const others = new Map<number, { names: Set<string>; hosts: Set<string>; tls: boolean }>();
      for (const b of gateways) {
        if (a === b || !sharePod(a, b)) continue;
        a.servers.forEach((server, i) => {
          const hosts = (server.hosts ?? []).filter((h) => b.servers.some((s) => claims(s, server, h)));
          if (hosts.length === 0) return;
          const entry = others.get(i) ?? {
            names: new Set(),
            hosts: new Set(),
            tls: server.tls !== undefined,
          };
          entry.names.add(nameOf(b.object));
          for (const h of hosts) entry.hosts.add(h);
          others.set(i, entry);
        });
      }
      for (const [i, { names, hosts, tls }] of others) {
        const finding = findingOf(
          conflictingGateways,
          context,
          a.object,
          ['spec', 'servers', i],
          `port ${a.servers[i]?.port?.number ?? '?'} for ${[...hosts].join(', ')} is also claimed on the same gateway pods by Gateway ${[...names].sort().join(', ')}: ${tls ? 'istiod serves one of the TLS servers and skips the other' : 'the VirtualServices bound to either share the routes for it'}`,
          {
            fix: 'keep one Gateway per host and port on a gateway, or give the servers different hosts or bind addresses',
          },
        );
        // A skipped TLS server is lost; plain servers merge by design, which is worth knowing, not fixing.
        findings.push(tls ? finding : { ...finding, severity: Severity.Info });
      }
    }
    return findings;
  },
};

/** Does `other` claim `host` on the port and bind address of `server`? */
function claims(other: IstioServer, server: IstioServer, host: string): boolean {
  return (
    other.port?.number !== undefined &&
    other.port.number === server.port?.number &&
    (other.bind ?? '') === (server.bind ?? '') &&
    (other.hosts ?? []).includes(host)
  );
}

function selectorKey(selector: Readonly<Record<string, string>>): string {
  return Object.entries(selector)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

function nameOf(object: KubeObject): string {
  return `${object.metadata.namespace ?? 'default'}/${object.metadata.name ?? ''}`;
}

/**
 * KFM401: a VirtualService route or mirror to a host no Service or ServiceEntry gives to the namespaces the
 * VirtualService applies in, to a port that host lacks, or without a port where the host has several
 * (docs/semantics.md, Route destinations). Requests on that route get 503 NC (no cluster). So do requests
 * on a route to a subset that no DestinationRule of the host defines: istiod makes no cluster for it.
 */
import { specOf } from '../../model/specs.ts';
import { Severity } from '../../model/finding.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { Finding, IstioCounterpart } from '../../model/finding.ts';
import { pointerOf } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import type { FieldPath } from '../../load/parse.ts';
import { resolveShortName } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';
import { destinationTargets, type Target } from '../targets.ts';

const analyzer = 'virtualservice.DestinationHostAnalyzer';
const notFound: IstioCounterpart = { analyzer, code: 'IST0101' };
const portRequired: IstioCounterpart = { analyzer, code: 'IST0112' };
const subsetNotFound: IstioCounterpart = {
  analyzer: 'virtualservice.DestinationRuleAnalyzer',
  code: 'IST0101',
};

export const routeToMissingTarget: Rule = {
  code: 'KFM401',
  name: 'route-to-missing-target',
  severity: Severity.Error,
  description:
    'a route or mirror to a host or port that no Service or ServiceEntry visible to the VirtualService has, or to a subset no DestinationRule defines',
  reads: [GroupKind.VirtualService],
  istio: [notFound, portRequired, subsetNotFound],
  check(context: AnalyzeContext): Finding[] {
    const targets = destinationTargets(context);
    const subsets = subsetsOf(context);
    return context.snapshot.list(GroupKind.VirtualService).flatMap((vs) => {
      const namespace = vs.metadata.namespace ?? 'default';
      const exportTo = specOf(vs, 'networking.istio.io/VirtualService').exportTo ?? [];
      return destinationsOf(vs).flatMap((d) => {
        const host = resolveShortName(d.host, namespace, context.mesh().clusterDomain);
        const target = targets.find(namespace, exportTo, host);
        const found = target ? portFindings(context, vs, d, host, target) : [missing(context, vs, d, host)];
        if (d.subset !== undefined && !subsets.has(`${host} ${d.subset}`))
          found.push(missingSubset(context, vs, d, host, d.subset));
        return found;
      });
    });
  },
};

/** `host subset` for every subset a DestinationRule defines, the host as a full name. */
function subsetsOf(context: AnalyzeContext): Set<string> {
  const out = new Set<string>();
  for (const dr of context.snapshot.list(GroupKind.DestinationRule)) {
    const spec = specOf(dr, 'networking.istio.io/DestinationRule');
    if (typeof spec.host !== 'string') continue;
    const host = resolveShortName(
      spec.host,
      dr.metadata.namespace ?? 'default',
      context.mesh().clusterDomain,
    );
    for (const s of spec.subsets ?? []) if (typeof s?.name === 'string') out.add(`${host} ${s.name}`);
  }
  return out;
}

function missingSubset(
  context: AnalyzeContext,
  vs: KubeObject,
  d: Destination,
  host: string,
  subset: string,
): Finding {
  return findingOf(
    routeToMissingTarget,
    context,
    vs,
    [...d.field, 'subset'],
    `${d.mirror ? 'mirrors' : 'routes'} to subset ${subset} of ${host}, which no DestinationRule defines: istiod makes no cluster for it, and ${d.mirror ? 'the mirrored copies go nowhere' : 'requests on this route get 503 NC'}`,
    {
      fix: `define subset ${subset} in a DestinationRule for ${host}, or route without the subset`,
      istio: subsetNotFound,
    },
  );
}

/** A destination of a route or mirror, where it is written. */
interface Destination {
  host: string;
  port: number | undefined;
  subset: string | undefined;
  field: FieldPath;
  mirror: boolean;
}

function destinationsOf(vs: KubeObject): Destination[] {
  const spec = specOf(vs, 'networking.istio.io/VirtualService');
  const out: Destination[] = [];
  const add = (
    d: { host?: string; port?: { number?: number }; subset?: string } | undefined,
    field: FieldPath,
    mirror = false,
  ) => {
    if (typeof d?.host === 'string')
      out.push({ host: d.host, port: d.port?.number, subset: d.subset || undefined, field, mirror });
  };
  for (const kind of ['http', 'tcp', 'tls'] as const)
    (spec[kind] ?? []).forEach((rule, r) =>
      (rule.route ?? []).forEach((route, i) =>
        add(route.destination, ['spec', kind, r, 'route', i, 'destination']),
      ),
    );
  (spec.http ?? []).forEach((rule, r) => {
    add(rule.mirror, ['spec', 'http', r, 'mirror'], true);
    (rule.mirrors ?? []).forEach((m, i) =>
      add(m.destination, ['spec', 'http', r, 'mirrors', i, 'destination'], true),
    );
  });
  return out;
}

function missing(context: AnalyzeContext, vs: KubeObject, d: Destination, host: string): Finding {
  const what = d.mirror ? 'mirrors to' : 'routes to';
  return findingOf(
    routeToMissingTarget,
    context,
    vs,
    [...d.field, 'host'],
    `${what} ${host}, which no Service or ServiceEntry gives to the namespaces this VirtualService applies in: ${d.mirror ? 'the mirrored copies go nowhere' : 'requests on this route get 503 NC'}`,
    {
      fix: "create the Service (or a ServiceEntry), export it to this VirtualService's namespaces, or correct the host (short names are taken from the VirtualService's namespace)",
      istio: notFound,
    },
  );
}

function portFindings(
  context: AnalyzeContext,
  vs: KubeObject,
  d: Destination,
  host: string,
  target: Target,
): Finding[] {
  const ports = target.ports;
  if (ports === undefined) return [];
  if (d.port === undefined) {
    if (ports.length <= 1) return [];
    return [
      findingOf(
        routeToMissingTarget,
        context,
        vs,
        [...d.field, 'host'],
        `${d.mirror ? 'mirrors' : 'routes'} to ${host} without a port, and it has ports ${ports.join(', ')}: a gateway cannot tell which to send to`,
        { fix: `name the port (destination.port.number, one of ${ports.join(', ')})`, istio: portRequired },
      ),
    ];
  }
  if (ports.includes(d.port)) return [];
  const only = ports.length === 1 ? ports[0] : undefined;
  return [
    findingOf(
      routeToMissingTarget,
      context,
      vs,
      [...d.field, 'port', 'number'],
      `${d.mirror ? 'mirrors' : 'routes'} to port ${d.port} of ${host}, which has ports ${ports.join(', ') || 'none'}: requests on this route get 503 NC`,
      {
        fix: `use one of its ports (${ports.join(', ')})`,
        istio: notFound,
        ...(only !== undefined
          ? {
              patch: [
                { op: 'replace' as const, path: pointerOf([...d.field, 'port', 'number']), value: only },
              ],
            }
          : {}),
      },
    ),
  ];
}

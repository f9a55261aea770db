/**
 * KFM401: a VirtualService route to a destination that doesn't exist (no Service or ServiceEntry host, or a
 * port the Service doesn't have), or bound to a gateway that doesn't exist. Requests on that route get
 * 503 NC (no cluster) or are never routed at all.
 */
import { specOf } from '../../model/specs.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { pointerOf } from '../../model/finding.ts';
import { isPlainObject, type KubeObject } from '../../model/object.ts';
import { resolveGatewayName, resolveShortName } from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

export const routeToMissingTarget: Rule = {
  code: 'KFM401',
  name: 'route-to-missing-target',
  severity: Severity.Error,
  description: 'a route to a Service, port or gateway that does not exist',
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const entryHosts = new Set(
      snapshot
        .list('networking.istio.io', 'ServiceEntry')
        .flatMap((e) => specOf(e, 'networking.istio.io/ServiceEntry').hosts ?? []),
    );
    const gateways = new Set(
      snapshot
        .list('networking.istio.io', 'Gateway')
        .map((g) => `${g.metadata.namespace ?? 'default'}/${g.metadata.name}`),
    );
    return snapshot.list('networking.istio.io', 'VirtualService').flatMap((vs) => {
      const spec = specOf(vs, 'networking.istio.io/VirtualService');
      const destinations = (spec.http ?? []).flatMap((route, r) =>
        isPlainObject(route) && Array.isArray(route['route'])
          ? (route['route'] as unknown[]).map((d, i) => ({
              d,
              field: ['spec', 'http', r, 'route', i, 'destination'],
            }))
          : [],
      );
      return [
        ...missingGateways(context, vs, spec.gateways ?? [], gateways),
        ...destinations.flatMap(({ d, field }) => {
          const destination =
            isPlainObject(d) && isPlainObject(d['destination']) ? d['destination'] : undefined;
          return destination ? missingDestination(context, vs, destination, field, entryHosts) : [];
        }),
      ];
    });
  },
};

/** The gateways a VirtualService is bound to that don't exist. */
function missingGateways(
  context: AnalyzeContext,
  vs: KubeObject,
  bound: readonly string[],
  gateways: ReadonlySet<string>,
): Finding[] {
  const ns = vs.metadata.namespace ?? 'default';
  return bound.flatMap((g, i) => {
    const resolved = resolveGatewayName(g, ns);
    if (resolved === 'mesh' || gateways.has(resolved)) return [];
    return [
      findingOf(
        routeToMissingTarget,
        context,
        vs,
        ['spec', 'gateways', i],
        `bound to gateway ${resolved}, which does not exist: nothing serves these routes there`,
        {
          fix: `create Gateway ${resolved} or correct the name (short names are taken from the VirtualService's namespace)`,
        },
      ),
    ];
  });
}

/** A route destination (at `field`) whose host no Service has, or whose port its Service lacks. */
function missingDestination(
  context: AnalyzeContext,
  vs: KubeObject,
  destination: Record<string, unknown>,
  field: (string | number)[],
  entryHosts: ReadonlySet<string>,
): Finding[] {
  if (typeof destination['host'] !== 'string') return [];
  const mesh = context.mesh();
  const ns = vs.metadata.namespace ?? 'default';
  const host = destination['host'].includes('*')
    ? destination['host']
    : resolveShortName(destination['host'], ns, mesh.clusterDomain);
  const service = mesh.serviceByHostname.get(host);
  if (!service) {
    if (entryHosts.has(host) || host.includes('*') || !host.endsWith(`.svc.${mesh.clusterDomain}`)) return [];
    return [
      findingOf(
        routeToMissingTarget,
        context,
        vs,
        [...field, 'host'],
        `routes to ${host}, which no Service has: requests on this route get 503 NC`,
        {
          fix: "create the Service, or correct the host (short names are taken from the VirtualService's namespace)",
        },
      ),
    ];
  }
  const port = isPlainObject(destination['port']) ? destination['port']['number'] : undefined;
  if (
    typeof port !== 'number' ||
    service.type === 'ExternalName' ||
    service.ports.some((p) => p.port === port)
  )
    return [];
  const ports = service.ports.map((p) => p.port);
  const only = ports.length === 1 ? ports[0] : undefined;
  return [
    findingOf(
      routeToMissingTarget,
      context,
      vs,
      [...field, 'port', 'number'],
      `routes to port ${port} of ${host}, which has ports ${ports.join(', ') || 'none'}: requests on this route get 503 NC`,
      {
        fix: `use one of the Service's ports (${ports.join(', ')})`,
        ...(only !== undefined
          ? {
              patch: [{ op: 'replace' as const, path: pointerOf([...field, 'port', 'number']), value: only }],
            }
          : {}),
      },
    ),
  ];
}

/**
 * Istio `Gateway` → Gateway API `Gateway` of class `istio` (same namespace and name): one listener per
 * server and host, protocols mapped as ingress2gateway maps them, TLS termination by credential name.
 * Istio deploys each such Gateway itself (Deployment and Service `<name>-istio`, service account
 * `<name>-istio`), which is the identity policies must name afterwards.
 */
import { specOf, type IstioServer } from '../model/specs.ts';
import type { JsonRecord } from '../model/object.ts';
import { type KubeObject } from '../model/object.ts';
import { action, changed, dropped, type Note } from './migration-report.ts';
import { gatewayServiceAccount, principalOf } from '../model/identity.ts';

/** The identity of the pods Istio deploys for a Gateway API gateway. */
export function gatewayApiPrincipal(trustDomain: string, namespace: string, name: string): string {
  return principalOf({ namespace, serviceAccount: gatewayServiceAccount(name) }, trustDomain);
}

/** Converts one Istio Gateway; notes say what could not be carried over. */
export function convertGateway(gateway: KubeObject, notes: Note[]): KubeObject {
  const servers = specOf(gateway, 'networking.istio.io/Gateway').servers ?? [];
  const listeners: JsonRecord[] = [];
  const names = new Set<string>();
  servers.forEach((server, index) => {
    const field = `spec.servers[${index}]`;
    const port = server.port ?? {};
    const number = port.number;
    if (typeof number !== 'number') {
      notes.push(dropped(`${field}.port`, 'the server has no port number; it is left out'));
      return;
    }
    const protocol = listenerProtocol((port.protocol ?? 'HTTP').toUpperCase(), server.tls, field, notes);
    if (!protocol) return;
    if (server.bind !== undefined)
      notes.push(dropped(`${field}.bind`, 'Gateway API listeners have no bind address'));
    const hosts = server.hosts ?? ['*'];
    const hostnames = new Set<string | undefined>();
    for (const entry of hosts) {
      const [nsPart, hostPart] = entry.includes('/') ? entry.split('/', 2) : ['*', entry];
      if (nsPart !== '*' && nsPart !== undefined)
        notes.push(
          changed(
            `${field}.hosts`,
            `"${entry}": routes from every namespace may attach (Gateway API restricts by namespace per listener, not per host)`,
          ),
        );
      hostnames.add(hostPart === '*' || hostPart === undefined ? undefined : hostPart);
    }
    // A wildcard host serves everything: one listener without a hostname covers the other hosts too.
    const list = hostnames.has(undefined) ? [undefined] : [...hostnames];
    for (const hostname of list) {
      const base = `${protocol.protocol.toLowerCase()}-${number}${hostname ? `-${labelOf(hostname)}` : ''}`;
      let name = base;
      for (let i = 2; names.has(name); i++) name = `${base}-${i}`;
      names.add(name);
      const listener: JsonRecord = { name, port: number, protocol: protocol.protocol };
      if (hostname) listener['hostname'] = hostname;
      if (protocol.tls) listener['tls'] = protocol.tls;
      listener['allowedRoutes'] = { namespaces: { from: 'All' } };
      listeners.push(listener);
    }
  });
  const labels = gateway.metadata.labels;
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: {
      name: gateway.metadata.name ?? '',
      namespace: gateway.metadata.namespace ?? 'default',
      ...(labels && Object.keys(labels).length > 0 ? { labels: { ...labels } } : {}),
    },
    spec: { gatewayClassName: 'istio', listeners },
  };
}

function listenerProtocol(
  protocol: string,
  tls: IstioServer['tls'],
  field: string,
  notes: Note[],
): { protocol: string; tls?: JsonRecord } | undefined {
  const mode = (tls?.mode ?? 'SIMPLE').toUpperCase();
  if (tls?.httpsRedirect === true)
    notes.push(
      dropped(
        `${field}.tls.httpsRedirect`,
        'add an HTTPRoute with a RequestRedirect filter to https instead',
      ),
    );
  switch (protocol) {
    case 'HTTP':
    case 'HTTP2':
    case 'GRPC':
      return { protocol: 'HTTP' };
    case 'HTTPS':
    case 'TLS': {
      if (mode === 'PASSTHROUGH' || mode === 'AUTO_PASSTHROUGH')
        return { protocol: 'TLS', tls: { mode: 'Passthrough' } };
      const credential = tls?.credentialName;
      if (typeof credential !== 'string') {
        notes.push(
          action(
            `${field}.tls`,
            'TLS is terminated with files mounted in the gateway pod; Gateway API needs a Secret: set certificateRefs',
          ),
        );
      }
      if (mode === 'MUTUAL' || mode === 'ISTIO_MUTUAL' || mode === 'OPTIONAL_MUTUAL')
        notes.push(dropped(`${field}.tls.mode`, `${mode}: client certificate validation is not converted`));
      return {
        protocol: protocol === 'HTTPS' ? 'HTTPS' : 'TLS',
        tls: {
          mode: 'Terminate',
          ...(typeof credential === 'string' ? { certificateRefs: [{ name: credential }] } : {}),
        },
      };
    }
    case 'TCP':
    case 'MONGO':
      return { protocol: 'TCP' };
    default:
      notes.push(
        dropped(
          `${field}.port.protocol`,
          `protocol ${protocol} has no Gateway API listener; the server is left out`,
        ),
      );
      return undefined;
  }
}

/** A host name as a listener name part (`*.example.com` → `wildcard-example-com`). */
function labelOf(host: string): string {
  return host
    .replace(/^\*/, 'wildcard')
    .replace(/[^a-z0-9-]/gi, '-')
    .toLowerCase();
}

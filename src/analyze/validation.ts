/**
 * The checks of Istio's validation (what istiod's admission webhook refuses on apply) that kfmesh makes,
 * for the kinds it reads (docs/semantics.md, Istio's validation). The CRDs' schemas check types and
 * enumerations as the snapshot is read; these are the semantic checks on top: a Gateway's servers, ports
 * and TLS settings, a VirtualService's routes and gateway names, a Sidecar with nothing in it, a
 * ServiceEntry's hosts, a policy that both selects workloads and names targets; and the values of a
 * VirtualService's routes (`route-values.ts`: regexes, weights, percentages). Each problem names the field
 * it is about.
 */
import type { FieldPath } from '../load/parse.ts';
import {
  specOf,
  type IstioServer,
  type PolicyTargetRef,
  type ServiceEntrySpec,
  type SidecarSpec,
  type VirtualServiceSpec,
} from '../model/specs.ts';
import { groupOf, type KubeObject } from '../model/object.ts';
import { GroupKind } from '../model/vocabulary.ts';
import { valueProblems } from './route-values.ts';

/** One thing Istio's validation refuses, and where. */
export interface ValidationProblem {
  field: FieldPath;
  message: string;
}

/** The kinds checked here. */
export const validatedKinds = [
  GroupKind.IstioGateway,
  GroupKind.VirtualService,
  GroupKind.Sidecar,
  GroupKind.ServiceEntry,
  GroupKind.AuthorizationPolicy,
  GroupKind.RequestAuthentication,
  GroupKind.Telemetry,
  GroupKind.WasmPlugin,
] as const;

/** What Istio's validation refuses in an object of one of `validatedKinds` (none for other kinds). */
export function validationProblems(object: KubeObject): ValidationProblem[] {
  switch (`${groupOf(object.apiVersion)}/${object.kind}`) {
    case GroupKind.IstioGateway:
      return gatewayProblems(specOf(object, 'networking.istio.io/Gateway').servers);
    case GroupKind.VirtualService:
      return [
        ...virtualServiceProblems(specOf(object, 'networking.istio.io/VirtualService')),
        ...valueProblems(object).filter((p) => !p.envoyOnly),
      ];
    case GroupKind.Sidecar:
      return sidecarProblems(specOf(object, 'networking.istio.io/Sidecar'));
    case GroupKind.ServiceEntry:
      return serviceEntryProblems(specOf(object, 'networking.istio.io/ServiceEntry'));
    case GroupKind.AuthorizationPolicy:
      return selectorProblems(specOf(object, 'security.istio.io/AuthorizationPolicy'));
    case GroupKind.RequestAuthentication:
      return selectorProblems(specOf(object, 'security.istio.io/RequestAuthentication'));
    case GroupKind.Telemetry:
      return selectorProblems(specOf(object, 'telemetry.istio.io/Telemetry'));
    case GroupKind.WasmPlugin:
      return selectorProblems(specOf(object, 'extensions.istio.io/WasmPlugin'));
    default:
      return [];
  }
}

/** Istio's port protocol names (matched without case); anything else is refused on a Gateway server. */
const serverProtocols = new Set([
  'tcp',
  'udp',
  'grpc',
  'grpc-web',
  'http',
  'http_proxy',
  'http2',
  'https',
  'tls',
  'mongo',
  'redis',
  'mysql',
]);
const httpProtocols = new Set(['http', 'http2', 'http_proxy', 'grpc', 'grpc-web']);
const tlsProtocols = new Set(['https', 'tls']);

function gatewayProblems(servers: readonly IstioServer[] | undefined): ValidationProblem[] {
  if (!servers || servers.length === 0)
    return [{ field: ['spec', 'servers'], message: 'a Gateway must have at least one server' }];
  const problems = servers.flatMap((server, i) => serverProblems(server, ['spec', 'servers', i]));
  const names = new Set<string>();
  servers.forEach((server, i) => {
    if (!server.port) return;
    const name = server.port.name ?? '';
    if (names.has(name))
      problems.push({
        field: ['spec', 'servers', i, 'port', 'name'],
        message: `server port names must be unique, and ${name || 'an empty name'} is used twice`,
      });
    names.add(name);
  });
  return problems;
}

function serverProblems(server: IstioServer, at: FieldPath): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (field: FieldPath, message: string) => problems.push({ field: [...at, ...field], message });
  if (!server.hosts || server.hosts.length === 0) add(['hosts'], 'a server must name at least one host');
  const port = server.port;
  if (!port) {
    add(['port'], 'a server must have a port');
    return [...problems, ...tlsProblems(server, at)];
  }
  const protocol = (port.protocol ?? '').toLowerCase();
  const knownProtocol = serverProtocols.has(protocol);
  if (!knownProtocol)
    add(['port', 'protocol'], `protocol ${JSON.stringify(port.protocol ?? '')} is not one Istio knows`);
  const unix = (server.bind ?? '').startsWith('unix://');
  const number = port.number ?? 0;
  const numberOk = Number.isInteger(number) && number >= 1 && number <= 65535;
  if ((number > 0 || !unix) && !numberOk) add(['port', 'number'], `port number ${number} is not in 1-65535`);
  if (!port.name) add(['port', 'name'], 'a server port must have a name');
  // Istio checks TLS against the protocol only when the port itself passed.
  if (knownProtocol && (numberOk || (number === 0 && unix)) && port.name) {
    const tls = server.tls;
    if (tlsProtocols.has(protocol) && !tls) add(['tls'], `a ${port.protocol} server must have TLS settings`);
    else if (!tlsProtocols.has(protocol) && tls) {
      const passthrough =
        tls.mode === undefined || tls.mode === 'PASSTHROUGH' || tls.mode === 'AUTO_PASSTHROUGH';
      const files = Boolean(tls.caCertificates || tls.privateKey || tls.serverCertificate);
      if (!httpProtocols.has(protocol) || !passthrough || files)
        add(
          ['tls'],
          httpProtocols.has(protocol)
            ? 'a plain-text HTTP server may have TLS settings only to redirect to HTTPS'
            : `a ${port.protocol} server cannot have TLS settings`,
        );
    }
  }
  return [...problems, ...tlsProblems(server, at)];
}

/** The certificate settings a server's TLS mode needs or refuses. */
function tlsProblems(server: IstioServer, at: FieldPath): ValidationProblem[] {
  const tls = server.tls;
  if (!tls) return [];
  const problems: ValidationProblem[] = [];
  const add = (field: string, message: string) => problems.push({ field: [...at, 'tls', field], message });
  const mode = tls.mode ?? 'PASSTHROUGH';
  const credentialNames = (tls.credentialNames ?? []).length > 0;
  const certificates = tls.tlsCertificates ?? [];
  if (mode === 'ISTIO_MUTUAL') {
    for (const f of ['serverCertificate', 'privateKey', 'caCertificates', 'credentialName'] as const)
      if (tls[f]) add(f, `ISTIO_MUTUAL uses the mesh's certificates and cannot have ${f}`);
    if (certificates.length > 0)
      add('tlsCertificates', "ISTIO_MUTUAL uses the mesh's certificates and cannot have tlsCertificates");
    if (credentialNames)
      add('credentialNames', "ISTIO_MUTUAL uses the mesh's certificates and cannot have credentialNames");
    return problems;
  }
  const sources = [
    Boolean(tls.serverCertificate && tls.privateKey),
    Boolean(tls.credentialName),
    credentialNames,
    certificates.length > 0,
  ].filter(Boolean).length;
  if (sources > 1)
    add(
      'mode',
      'only one certificate source may be given: credentialName, credentialNames, serverCertificate and privateKey, or tlsCertificates',
    );
  const terminates = mode === 'SIMPLE' || mode === 'MUTUAL' || mode === 'OPTIONAL_MUTUAL';
  if (terminates && !(tls.credentialName || credentialNames)) {
    if (mode !== 'SIMPLE' && !tls.caCertificates)
      add('caCertificates', `${mode} TLS needs a client CA bundle`);
    const pairs =
      certificates.length > 0
        ? certificates
        : [{ serverCertificate: tls.serverCertificate, privateKey: tls.privateKey }];
    for (const pair of pairs) {
      if (!pair.serverCertificate)
        add('serverCertificate', `${mode} TLS needs a server certificate (or a credentialName)`);
      if (!pair.privateKey) add('privateKey', `${mode} TLS needs a private key (or a credentialName)`);
    }
  }
  if (tls.caCrl) {
    if (tls.credentialName)
      add('caCrl', 'a CRL cannot be given beside credentialName: put it in the credential');
    if (mode === 'SIMPLE') add('caCrl', 'SIMPLE TLS does not check client certificates, so it takes no CRL');
  }
  return problems;
}

type HttpRoute = NonNullable<VirtualServiceSpec['http']>[number];

function virtualServiceProblems(spec: VirtualServiceSpec): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (field: FieldPath, message: string) => problems.push({ field, message });
  const { http = [], tcp = [], tls = [] } = spec;
  if (http.length === 0 && tcp.length === 0 && tls.length === 0)
    add(['spec'], 'a VirtualService must have http, tcp or tls routes');
  const delegate = !spec.hosts?.length;
  // Without hosts it can only be delegated to, which takes HTTP rules alone.
  if (delegate)
    for (const field of ['gateways', 'tcp', 'tls'] as const)
      if ((spec[field] ?? []).length > 0)
        add(['spec', field], `a VirtualService without hosts (a delegate) cannot have ${field}`);
  http.forEach((rule, r) => problems.push(...httpRouteProblems(rule, ['spec', 'http', r], delegate)));
  tls.forEach((rule, r) => {
    if (!rule.match?.length) add(['spec', 'tls', r], 'a TLS rule must have a match');
    (rule.match ?? []).forEach((m, i) => {
      if (!m.sniHosts?.length) add(['spec', 'tls', r, 'match', i], 'a TLS match must name an SNI host');
    });
  });
  for (const kind of ['tcp', 'tls'] as const)
    (spec[kind] ?? []).forEach((rule, r) => {
      if (!rule.route?.length) add(['spec', kind, r], `a ${kind.toUpperCase()} rule must have a route`);
      (rule.route ?? []).forEach((route, i) => {
        if (!route.destination) add(['spec', kind, r, 'route', i], 'a route must have a destination');
      });
    });
  (spec.gateways ?? []).forEach((name, i) => {
    const problem = gatewayNameProblem(name);
    if (problem) add(['spec', 'gateways', i], problem);
  });
  return problems;
}

function httpRouteProblems(rule: HttpRoute, at: FieldPath, delegated: boolean): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (message: string) => problems.push({ field: at, message });
  // A root rule that delegates routes nowhere itself.
  if (rule.delegate) {
    if (delegated) add('a delegate VirtualService cannot delegate again');
    else {
      if (rule.redirect) add('a rule that delegates cannot redirect');
      if ((rule.route ?? []).length > 0) add('a rule that delegates cannot route');
      return problems;
    }
  }
  const route = (rule.route ?? []).length > 0;
  if (rule.redirect) {
    if (route) add('a rule cannot both route and redirect');
    if (rule.fault) add('a rule cannot both inject faults and redirect');
    if (rule.rewrite) add('a rule cannot both rewrite and redirect');
    if (rule.directResponse) add('a rule cannot both redirect and respond directly');
  } else if (rule.directResponse) {
    if (route) add('a rule cannot both route and respond directly');
    if (rule.fault) add('a rule cannot both inject faults and respond directly');
    if (rule.rewrite) add('a rule cannot both rewrite and respond directly');
  } else if (!route) add('an HTTP rule must route, redirect or respond directly');
  if (rule.mirror && (rule.mirrors ?? []).length > 0) add('a rule cannot have both mirror and mirrors');
  (rule.route ?? []).forEach((r, i) => {
    if (!r.destination)
      problems.push({ field: [...at, 'route', i], message: 'a route must have a destination' });
  });
  return problems;
}

// Istio's own DNS label check, which takes capitals too (Kubernetes names do not).
const dnsLabel = /^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$/;

/** A gateway reference `namespace/name` whose parts are not DNS labels (a bare name is checked otherwise). */
function gatewayNameProblem(name: string): string | undefined {
  const slash = name.indexOf('/');
  if (slash < 0) return undefined;
  const [ns, gateway] = [name.slice(0, slash), name.slice(slash + 1)];
  if (!ns || !gateway) return `gateway ${JSON.stringify(name)}: neither namespace nor name may be empty`;
  if (!dnsLabel.test(ns))
    return `gateway ${JSON.stringify(name)}: ${JSON.stringify(ns)} is not a namespace name`;
  if (!dnsLabel.test(gateway))
    return `gateway ${JSON.stringify(name)}: ${JSON.stringify(gateway)} is not a valid Gateway name (a DNS label)`;
  return undefined;
}

function sidecarProblems(spec: SidecarSpec): ValidationProblem[] {
  const empty =
    !spec.egress?.length &&
    !spec.ingress?.length &&
    spec.outboundTrafficPolicy === undefined &&
    spec['inboundConnectionPool'] === undefined;
  return empty
    ? [
        {
          field: ['spec'],
          message:
            'a Sidecar must configure something: ingress, egress, outboundTrafficPolicy or inboundConnectionPool',
        },
      ]
    : [];
}

function serviceEntryProblems(spec: ServiceEntrySpec): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const hosts = spec.hosts ?? [];
  if (hosts.length === 0)
    problems.push({ field: ['spec', 'hosts'], message: 'a ServiceEntry must have at least one host' });
  const endpoints = (spec.endpoints ?? []).length;
  // Resolution NONE passes connections on to the address asked for: endpoints would be ignored.
  if ((spec.resolution ?? 'NONE') === 'NONE' && endpoints > 0)
    problems.push({ field: ['spec', 'endpoints'], message: 'resolution NONE takes no endpoints' });
  if (spec.resolution === 'DNS_ROUND_ROBIN' && endpoints > 1)
    problems.push({
      field: ['spec', 'endpoints'],
      message: 'resolution DNS_ROUND_ROBIN takes at most one endpoint',
    });
  const dnsWithoutEndpoints =
    (spec.resolution === 'DNS' || spec.resolution === 'DNS_ROUND_ROBIN') && endpoints === 0;
  hosts.forEach((host, i) => {
    if (host === '*')
      problems.push({ field: ['spec', 'hosts', i], message: 'a ServiceEntry cannot have the host *' });
    else if (dnsWithoutEndpoints && host.includes('*'))
      problems.push({
        field: ['spec', 'hosts', i],
        message: `host ${host} has a wildcard, which DNS resolution without endpoints cannot resolve`,
      });
  });
  return problems;
}

interface Selecting {
  selector?: unknown;
  targetRef?: PolicyTargetRef;
  targetRefs?: PolicyTargetRef[];
}

function selectorProblems(spec: Selecting): ValidationProblem[] {
  const set = [spec.selector !== undefined, spec.targetRef !== undefined, (spec.targetRefs ?? []).length > 0];
  return set.filter(Boolean).length > 1
    ? [{ field: ['spec', 'targetRefs'], message: 'a policy may select workloads or name targets, not both' }]
    : [];
}

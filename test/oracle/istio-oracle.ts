/**
 * Istio's own code as the judge (oracle/istio): the harness is built once per machine and source digest
 * with the machine's Go, fed a platform and the requests kfmesh traced, and answers hop by hop what the
 * configuration istiod generates does with each. This module turns a kfmesh trace into the oracle's
 * questions and compares the answers with kfmesh's hops.
 *
 * The questions are built from the platform as Kubernetes has it (pods, their IPs and labels; a pod kfmesh
 * made up for a workload given only as a template is written out with the IP kfmesh gave it) and from the
 * request as it enters each proxy: the original request for the first hop, then what the previous hop
 * sent (its authority, path and upstream address). Nothing of kfmesh's Istio model goes into a question.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import type { Hop } from '../../src/model/trace-result.ts';
import type { MeshService } from '../../src/mesh/services.ts';
import type { Workload } from '../../src/mesh/workloads.ts';
import { projectRoot } from '../conformance/cases.ts';
import { onPath, partTestOptions } from '../kube-apiserver.ts';

const sourceDir = join(projectRoot, 'oracle/istio');

/** The oracle's binary for the current sources, built when missing; or why it cannot be. */
let built: GoBuild | undefined;
export function oracleBinary(): GoBuild {
  return (built ??= goBuild('istio-oracle', '.'));
}

/**
 * `istioctl` of the same pinned Istio (oracle/istio/go.mod names it as a tool), for the benchmark that
 * times `kfmesh analyze` beside `istioctl analyze`; or why it cannot be built.
 */
let istioctl: GoBuild | undefined;
export function istioctlBinary(): GoBuild {
  return (istioctl ??= goBuild('istioctl', 'istio.io/istio/istioctl/cmd/istioctl'));
}

/** A binary built from oracle/istio's module, or why it could not be. */
export interface GoBuild {
  path?: string;
  missing?: string;
}

/**
 * Builds `pkg` of oracle/istio's module once per machine and source digest into the cache, named
 * `<prefix>-<digest>`, and removes that prefix's builds of sources that are gone.
 */
function goBuild(prefix: string, pkg: string): GoBuild {
  if (!onPath('go')) return { missing: 'needs Go on PATH (1.26) to build oracle/istio' };
  const hash = createHash('sha256');
  // By path within the sources, so checkouts of the same sources (a work tree and a clone) share one build
  // rather than each removing the other's as stale.
  for (const file of sourceFiles(sourceDir))
    hash.update(relative(sourceDir, file)).update(readFileSync(file));
  const dir = join(process.env['KFMESH_CACHE'] ?? join(homedir(), '.cache', 'kfmesh'), 'oracle');
  const path = join(dir, `${prefix}-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(path)) return { path };
  mkdirSync(dir, { recursive: true });
  // Test files run side by side: each builds to a file of its own and renames it into place.
  const tmp = `${path}.${process.pid}.tmp`;
  const run = spawnSync('go', ['build', '-trimpath', '-o', tmp, pkg], {
    cwd: sourceDir,
    encoding: 'utf8',
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
    maxBuffer: 64 << 20,
  });
  if (run.status !== 0)
    return { missing: `go build of ${pkg} in oracle/istio failed: ${run.stderr.slice(-2000)}` };
  renameSync(tmp, path);
  // Older builds (about 200 MB each) are of sources that are gone.
  for (const f of readdirSync(dir))
    if (f.startsWith(`${prefix}-`) && !f.endsWith('.tmp') && join(dir, f) !== path)
      rmSync(join(dir, f), { force: true });
  return { path };
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const full = join(dir, name.name);
    if (name.isDirectory()) out.push(...sourceFiles(full));
    else if (/\.(go|mod|sum)$/.test(name.name) && !name.name.endsWith('_test.go')) out.push(full);
  }
  return out;
}

/** `{ skip }` for `describe`: skipped with the reason when the oracle cannot be built (fails under CI=true). */
export function oracleTestOptions(): { skip: string | false } {
  return partTestOptions("Istio's oracle", oracleBinary().missing);
}

/** One proxy as the oracle sets it up. */
export interface OracleProxy {
  id: string;
  type: 'sidecar' | 'router' | 'waypoint';
  namespace: string;
  name: string;
  ip: string;
  labels: Record<string, string>;
  serviceAccount: string;
}

/** One request as a proxy receives it. */
export interface OracleRequest {
  id: string;
  proxy: string;
  direction: 'outbound' | 'inbound' | 'gateway' | 'ztunnel' | 'ztunnel-outbound' | 'waypoint';
  address: string;
  port: number;
  protocol: 'http' | 'http2' | 'grpc' | 'tcp';
  tls: 'none' | 'tls' | 'mtls';
  sni?: string;
  authority?: string;
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  sourceIP?: string;
  principal?: string;
}

/** What Envoy, configured by istiod, does with one request at one proxy. */
export interface OracleAnswer {
  id: string;
  listener?: string;
  filterChain?: string;
  routeConfig?: string;
  virtualHost?: string;
  route?: string;
  cluster?: string;
  weighted?: { name: string; weight: number }[];
  redirect?: string;
  directCode?: number;
  outcome: string;
  code?: number;
  rbac?: { action: string; allowed: boolean; policy?: string }[];
  custom?: boolean;
  unreachable?: string[];
  error?: string;
}

export interface OracleOutput {
  rejected?: string[];
  answers: OracleAnswer[];
}

/** Asks the oracle about one platform. */
export function askIstio(
  objects: readonly KubeObject[],
  proxies: readonly OracleProxy[],
  requests: readonly OracleRequest[],
): OracleOutput {
  const binary = oracleBinary();
  if (!binary.path) throw new Error(binary.missing);
  const meshConfig = objects.find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === 'istio' && o.metadata.namespace === 'istio-system',
  );
  const input = {
    objects: objects.map((o) => stringify(o)).join('---\n'),
    crds: crdFiles(),
    mesh: String((meshConfig?.['data'] as Record<string, unknown> | undefined)?.['mesh'] ?? ''),
    proxies,
    requests,
  };
  // KFMESH_ORACLE_INPUT=FILE keeps the last question asked, to run the oracle by hand (ORACLE_DUMP=proxy).
  if (process.env['KFMESH_ORACLE_INPUT'])
    writeFileSync(process.env['KFMESH_ORACLE_INPUT'], JSON.stringify(input));
  const run = spawnSync(binary.path, [], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    env: { ...process.env, PILOT_ENABLE_AMBIENT: 'true' },
  });
  if (run.status !== 0) throw new Error(`the oracle failed: ${run.error?.message ?? lastLines(run.stderr)}`);
  return JSON.parse(run.stdout) as OracleOutput;
}

/** The real CRDs (../shared/crds, else the project's copies), whose defaults the API server applies. */
function crdFiles(): string[] {
  const shared = join(projectRoot, '../shared/crds');
  const dir = existsSync(shared) ? shared : join(projectRoot, 'test/data/crds');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(dir, f));
}

function lastLines(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/^\d{4}-\d\d-\d\dT/.test(l))
    .slice(-20)
    .join('\n');
}

/** A pod for every workload kfmesh made up from a template (its IP is kfmesh's), so Istio sees the same pods. */
export function podsFor(workloads: readonly Workload[]): KubeObject[] {
  return workloads
    .filter((w) => w.ipAssigned)
    .map((w) =>
      runningPod(w, {
        serviceAccountName: w.serviceAccount,
        containers: [
          {
            name: 'app',
            image: 'app',
            ports: [...w.containerPorts].map(([name, port]) => ({ name, containerPort: port })),
          },
        ],
      }),
    );
}

/** A ready, running pod of a workload as kfmesh has it (name, labels, annotations, IP), with this spec. */
export function runningPod(
  w: Workload,
  spec: Record<string, unknown>,
  annotations: Readonly<Record<string, string>> = {},
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: w.podName,
      namespace: w.namespace,
      labels: { ...w.labels },
      annotations: { ...w.annotations, ...annotations },
    },
    spec,
    status: {
      phase: 'Running',
      podIP: w.ip,
      podIPs: [{ ip: w.ip }],
      conditions: [{ type: 'Ready', status: 'True' }],
    },
  };
}

/**
 * The objects with a cluster IP on every Service given without one, the one kfmesh gave it (the API
 * server assigns one to each ClusterIP Service), so both sides address a Service alike.
 */
export function withClusterIPs(
  objects: readonly KubeObject[],
  services: readonly MeshService[],
): KubeObject[] {
  const vips = new Map(
    services.filter((s) => s.type !== 'ServiceEntry').map((s) => [`${s.namespace}/${s.name}`, s.vip]),
  );
  return objects.map((o) => {
    const spec = o['spec'] as { clusterIP?: string; type?: string } | undefined;
    if (
      o.kind !== 'Service' ||
      o.apiVersion !== 'v1' ||
      !spec ||
      spec.clusterIP ||
      spec.type === 'ExternalName'
    )
      return o;
    const vip = vips.get(`${o.metadata.namespace ?? 'default'}/${o.metadata.name}`);
    return vip ? { ...o, spec: { ...spec, clusterIP: vip } } : o;
  });
}

/** The proxy the oracle sets up for a workload. */
export function proxyOf(w: Workload, type: OracleProxy['type']): OracleProxy {
  return {
    id: `${w.namespace}/${w.name}`,
    type,
    namespace: w.namespace,
    name: w.podName,
    ip: w.ip,
    labels: { ...w.labels },
    serviceAccount: w.serviceAccount,
  };
}

/** The fields of a kfmesh hop that differ from the oracle's answer, each said as `field: kfmesh ≠ Istio`. */
export function hopDisagreements(hop: Hop, answer: OracleAnswer): string[] {
  if (answer.error) return [`the oracle cannot answer: ${answer.error}`];
  if (hop.kind === 'ztunnel') return ztunnelDisagreements(hop, answer);
  const out: string[] = [];
  const same = (field: string, ours: string | undefined, theirs: string | undefined) => {
    if ((ours ?? '') !== (theirs ?? '')) out.push(`${field}: ${ours ?? '(none)'} ≠ ${theirs ?? '(none)'}`);
  };
  same('listener', hop.listener, answer.listener);
  const ended = hopStops(hop);
  if (ended === 'forwarded' || ended === 'no_route') same('routeConfig', hop.routeConfig, answer.routeConfig);
  // kfmesh's inbound sidecar hops name no virtual host (Istio's is `inbound|http|PORT`, from an inline
  // route configuration): the field is not compared there.
  const inbound = hop.kind === 'sidecar' && hop.direction === 'inbound';
  if (!inbound) same('virtualHost', hop.virtualHost, answer.virtualHost);
  // The cluster a route names is compared where the request went to it, and where it does not exist.
  if (ended === 'forwarded' || ended.startsWith('no_cluster')) {
    if (hop.split && hop.split.length > 1) {
      const ours = hop.split
        .map((s) => `${s.cluster}=${s.weight}`)
        .sort()
        .join(',');
      const theirs = (answer.weighted ?? [])
        .map((s) => `${s.name}=${s.weight}`)
        .sort()
        .join(',');
      same('split', ours, theirs || answer.cluster);
    } else same('cluster', hop.cluster, answer.cluster ?? answer.weighted?.map((w) => w.name).join('|'));
  }
  // kfmesh follows one share of a weighted split (the heaviest): a share Envoy cannot send (no such
  // cluster, no host) ends there, which the oracle reports per share.
  const unreachable = hop.split && hop.cluster !== undefined && answer.unreachable?.includes(hop.cluster);
  if (!(unreachable && (ended.startsWith('no_cluster') || ended === 'no_healthy_upstream')))
    same('outcome', ended, outcomeClass(answer));
  if (
    (hop.decision === 'deny' && !networkRefused(hop) && refusedByMtlsMode(hop) === undefined) ||
    answer.outcome === 'rbac_denied'
  ) {
    const theirs = answer.rbac?.find((d) => !d.allowed);
    same('denied', hop.decision === 'deny' ? 'deny' : 'allow', theirs ? 'deny' : 'allow');
  }
  return out;
}

/**
 * A client's ztunnel: whether it sends to a waypoint, and which. A destination ztunnel's verdict against
 * the policies istiod sends it: allowed or denied, and a denial by a DENY policy names one of the DENY
 * policies that match (ztunnel reports one of them, in no defined order). A denial because no ALLOW
 * policy matches names no policy on either side.
 */
function ztunnelDisagreements(hop: Hop, answer: OracleAnswer): string[] {
  if (hop.direction === 'outbound') {
    // The client's ztunnel: to the waypoint the address uses, or straight to the destination.
    const ours = hop.route === 'waypoint' ? (hop.cluster ?? '') : '(direct)';
    const theirs = answer.cluster ?? '(direct)';
    return ours === theirs ? [] : [`ztunnel sends to: ${ours} ≠ ${theirs}`];
  }
  const ours = hop.decision === 'deny' ? 'rbac_denied' : 'forwarded';
  if (ours !== answer.outcome) return [`ztunnel: ${ours} ≠ ${answer.outcome}`];
  if (ours === 'forwarded') return [];
  const denying = (answer.rbac ?? []).filter((d) => d.action === 'DENY').map((d) => d.policy ?? '');
  const byUs = networkRefused(hop) ? undefined : hop.policy;
  // istiod turns STRICT PeerAuthentication into DENY policies of its own (istio_converted_*): kfmesh says
  // so as a denial without a policy.
  const converted = (p: string) => p.split('/')[1]?.startsWith('istio_converted_') === true;
  const theirs = denying.filter((p) => !converted(p));
  // Where STRICT and a DENY policy both refuse, ztunnel may name either.
  if (byUs === undefined && (theirs.length === 0 || denying.some(converted))) return [];
  if (byUs !== undefined && theirs.includes(byUs)) return [];
  return [`denied by: ${byUs ?? '(no ALLOW matches)'} ≠ ${theirs.join(' | ') || '(no ALLOW matches)'}`];
}

/**
 * How a hop's proxy refused a connection its PeerAuthentication mode does not take (kfmesh says so as a
 * denial without a policy): plaintext where it is STRICT finds no filter chain; mutual TLS where it is
 * DISABLE reaches the plaintext HTTP codec, which closes the connection on the TLS bytes.
 */
function refusedByMtlsMode(hop: Hop): 'no_filter_chain' | 'protocol_error' | undefined {
  if (hop.decision !== 'deny' || hop.policy !== undefined) return undefined;
  const tls = hop.tls ?? '';
  if (!hop.mtls && tls.includes('STRICT')) return 'no_filter_chain';
  if (hop.mtls && tls.includes('DISABLE')) return 'protocol_error';
  return undefined;
}

/** A hop whose connection a NetworkPolicy dropped after the proxy sent it. */
function networkRefused(hop: Hop): boolean {
  return hop.decision === 'deny' && (hop.policy ?? '').startsWith('NetworkPolicy ');
}

/**
 * How a kfmesh hop ended, in the oracle's words: Envoy's response flags say which (NR no route, NC no
 * cluster, UH no healthy upstream); a response the application gave (or none yet) is a forwarded request.
 */
function hopStops(hop: Hop): string {
  // A connection NetworkPolicy drops left the proxy: the network refused it, not Envoy (docs/semantics.md,
  // What Istio's code cannot judge).
  if (networkRefused(hop)) return 'forwarded';
  if (hop.listener === undefined) return 'no_listener';
  const refused = refusedByMtlsMode(hop);
  if (refused) return refused;
  if (hop.decision === 'deny') return 'rbac_denied';
  if (hop.code === undefined) return 'forwarded';
  switch (hop.flags) {
    case 'NR':
      return 'no_route';
    case 'NC':
      return `no_cluster ${hop.code}`;
    case 'UH':
      return 'no_healthy_upstream';
    // The upstream failed or reset the connection after the proxy sent it.
    case 'UF':
    case 'UC':
    case 'URX':
      return 'forwarded';
  }
  if (hop.code === 404) return 'no_route';
  if (hop.code === 301 || hop.code === 302 || hop.code === 307 || hop.code === 308) return 'redirect';
  return `code ${hop.code}`;
}

function outcomeClass(a: OracleAnswer): string {
  switch (a.outcome) {
    case 'no_virtual_host':
    case 'no_route':
      return 'no_route';
    case 'tls_redirect':
    case 'redirect':
      return 'redirect';
    case 'direct_response':
      return `code ${a.code ?? 0}`;
    case 'no_cluster':
      return `no_cluster ${a.code ?? 0}`;
  }
  return a.outcome;
}

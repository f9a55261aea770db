/**
 * istioctl's analyzers as the judge of `kfmesh analyze`: the oracle's analyze mode (oracle/istio/analyze.go)
 * runs Istio's own analyzers (`analyzers.AllCombined()` at the pinned version) on files, and this module
 * compares what they report with kfmesh's findings that name an istioctl counterpart, both ways, by
 * analyzer, message code and object.
 *
 * An istioctl message is accounted for when a kfmesh finding gives the same analyzer and code on the same
 * object, or when its analyzer is one kfmesh lists as not applicable (src/analyze/istio-analyzers.ts), or
 * when its analyzer and code are a counterpart no kfmesh rule claims and the listing says why
 * (`uncoveredCodes`). Anything else is a difference: `missing` (istioctl reports it, kfmesh does not) or
 * `extra` (kfmesh claims istioctl would, and it does not).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { analyze, rules, type AnalyzeOptions } from '../../src/analyze/analyze.ts';
import { divergences, notApplicable, uncoveredCodes } from '../../src/analyze/istio-analyzers.ts';
import { loadPaths } from '../../src/load/files.ts';
import type { LoadedObject } from '../../src/load/parse.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import type { Finding } from '../../src/model/finding.ts';
import type { KubeObject } from '../../src/model/object.ts';
import { compileMesh } from '../../src/mesh/mesh.ts';
import type { Workload } from '../../src/mesh/workloads.ts';
import { GroupKind } from '../../src/model/vocabulary.ts';
import { writeManifest } from '../cli-process.ts';
import { oracleBinary, runningPod } from './istio-oracle.ts';

export interface IstioMessage {
  analyzer: string;
  code: string;
  level: string;
  kind?: string;
  namespace?: string;
  name?: string;
  text: string;
}

export interface IstioAnalysis {
  analyzers: { name: string; type: string; inputs: string[] }[];
  skipped: string[];
  messages: IstioMessage[];
  catalogue: { code: string; level: string; template: string }[];
  loadErrors?: string;
}

export interface AnalyzeRunOptions {
  /** A MeshConfig file (istioctl's --meshConfigFile). */
  meshConfig?: string;
  /** Run only these analyzers (istioctl's --analyzer). */
  analyzers?: readonly string[];
  suppress?: readonly string[];
}

/** The kinds of the inputs that have no namespace (the rest are stored in one). */
const clusterScoped = new Set([
  'Namespace',
  'Node',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'IngressClass',
  'GatewayClass',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'APIService',
  'MeshConfig',
]);

/**
 * The objects as the API server stores them, in one file for istioctl, which on files reads fields as
 * written: a Service port without a protocol is TCP (the API server's default; Istio's gateway port analyzer
 * counts only ports whose protocol says TCP, and kfmesh applies the default, as a cluster read would give it).
 */
export function asStored(objects: readonly KubeObject[]): string {
  const stored = objects.map((o) => structuredClone(o));
  for (const o of stored) {
    // An object given without a namespace is stored in `default` (kubectl apply's), where kfmesh reads it.
    if (!o.metadata.namespace && !clusterScoped.has(o.kind)) o.metadata.namespace = 'default';
    const ports = o.kind === 'Service' ? (o['spec'] as { ports?: unknown } | undefined)?.ports : undefined;
    if (Array.isArray(ports))
      for (const p of ports as Record<string, unknown>[])
        if (p && typeof p === 'object' && p['protocol'] === undefined) p['protocol'] = 'TCP';
  }
  return writeManifest(stored, 'stored.yaml');
}

/** What Istio's analyzers report on these files (and directories). */
export function istioAnalyze(paths: readonly string[], options: AnalyzeRunOptions = {}): IstioAnalysis {
  const binary = oracleBinary();
  if (!binary.path) throw new Error(binary.missing);
  const args = ['analyze'];
  if (options.meshConfig) args.push('--mesh-config', options.meshConfig);
  for (const a of options.analyzers ?? []) args.push('--analyzer', a);
  for (const s of options.suppress ?? []) args.push('--suppress', s);
  const run = spawnSync(binary.path, [...args, ...paths], { encoding: 'utf8', maxBuffer: 512 << 20 });
  if (run.status !== 0)
    throw new Error(`the oracle's analyze failed: ${run.error?.message ?? run.stderr.slice(-2000)}`);
  return JSON.parse(run.stdout) as IstioAnalysis;
}

/**
 * What istioctl adds to files it analyzes without a cluster (`AddDefaultResources`, unless the mesh
 * configuration turns Ingress off): a stand-in ingress gateway pod and its Service in istio-system. kfmesh
 * is given the same objects, first, so the input's own replace them as they do for istioctl.
 */
export function istioDefaultsFile(ingressService = 'istio-ingressgateway'): string {
  const written = defaultsFiles.get(ingressService);
  if (written) return written;
  const port = (name: string, number: number, nodePort: number) => ({
    name,
    nodePort,
    port: number,
    protocol: 'TCP',
    targetPort: number,
  });
  const objects = [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${ingressService}-dummypod`,
        namespace: 'istio-system',
        labels: { istio: 'ingressgateway' },
      },
      spec: { containers: [{ name: 'istio-proxy' }] },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: ingressService, namespace: 'istio-system' },
      spec: {
        selector: { istio: 'ingressgateway' },
        ports: [
          port('http2', 80, 31380),
          port('https', 443, 31390),
          port('tcp', 31400, 31400),
          port('tls', 15443, 31447),
        ],
      },
    },
  ];
  const path = writeManifest(objects, 'istio-defaults.yaml');
  defaultsFiles.set(ingressService, path);
  return path;
}

const defaultsFiles = new Map<string, string>();

/**
 * kfmesh's findings on the loaded objects, istioctl's defaults first; and the pods the files' workloads run (those
 * kfmesh makes of templates), as a cluster would have them, for istioctl, which matches selectors against
 * Pods only: on rendered manifests without pods it would find every selector empty.
 */
export async function kfmeshAnalyze(
  loaded: readonly LoadedObject[],
  options: AnalyzeOptions = {},
): Promise<{ findings: Finding[]; standIns: KubeObject[] }> {
  const snapshot = new Snapshot([...(await loadPaths([istioDefaultsFile()])), ...loaded]);
  const [problem] = snapshot.problems;
  if (problem) throw new Error(`kfmesh refuses the input: ${problem.message}`);
  // Certificates are judged now, as the CLI does.
  const given = new Set(snapshot.list(GroupKind.Pod));
  const templated = compileMesh(snapshot).workloads.filter((w) => !given.has(w.object));
  return { findings: analyze(snapshot, { now: new Date(), ...options }), standIns: standInPods(templated) };
}

/** A running pod for each workload given only as a template, with the sidecar injection adds where it does. */
function standInPods(workloads: readonly Workload[]): KubeObject[] {
  return workloads.map((w) => {
    const spec = (w.object['spec'] ?? {}) as { containers?: unknown[] };
    const proxied = w.proxy === 'sidecar' || w.proxy === 'gateway' || w.proxy === 'waypoint';
    const containers = [
      ...(spec.containers ?? []),
      ...(proxied ? [{ name: 'istio-proxy', image: 'docker.io/istio/proxyv2:1.31.0' }] : []),
    ];
    // The CNI marks the pods it redirects to ztunnel.
    const redirected: Record<string, string> =
      w.proxy === 'ambient' ? { 'ambient.istio.io/redirection': 'enabled' } : {};
    return runningPod(w, { ...spec, containers }, redirected);
  });
}

export interface AnalysisComparison {
  /** istioctl messages a kfmesh finding answers. */
  agreed: number;
  /** istioctl messages where kfmesh parts from it on purpose, by divergence (its index). */
  diverged: number[];
  /** istioctl messages of analyzers that do not apply, or codes kfmesh leaves out with a reason. */
  explained: number;
  missing: string[];
  extra: string[];
  /** istioctl's message text for each missing one. */
  texts: Map<string, string>;
}

const key = (analyzer: string, code: string, kind = '', namespace = '', name = '') =>
  `${analyzer} ${code} ${kind} ${namespace ? `${namespace}/` : ''}${name}`;

/** Istio's messages against kfmesh's findings, by analyzer, code and object. */
export function compareAnalysis(
  istio: IstioAnalysis,
  findings: readonly Finding[],
  label = '',
  standIns: readonly KubeObject[] = [],
): AnalysisComparison {
  // Messages about the stand-in pods are about objects that are not in the input.
  const standIn = new Set(standIns.map((p) => `Pod ${p.metadata.namespace}/${p.metadata.name}`));
  const claimed = new Set(rules.flatMap((r) => (r.istio ?? []).map((c) => `${c.analyzer} ${c.code}`)));
  const inapplicable = new Set(notApplicable.map((a) => a.analyzer));
  const leftOut = new Set(uncoveredCodes.map((c) => `${c.analyzer} ${c.code}`));
  // Counterparts of analyzers istioctl does not run (Istio's code has them) are not judged here.
  const ran = new Set(istio.analyzers.map((a) => a.type));
  const reported = new Set<string>();
  for (const f of findings)
    for (const c of (f.istio ?? []).filter((x) => ran.has(x.analyzer)))
      reported.add(
        key(
          c.analyzer,
          c.code,
          f.object.kind,
          f.object.namespace || (clusterScoped.has(f.object.kind) ? '' : 'default'),
          f.object.name,
        ),
      );
  const result: AnalysisComparison = {
    agreed: 0,
    diverged: [],
    explained: 0,
    missing: [],
    extra: [],
    texts: new Map(),
  };
  const istioKeys = new Set<string>();
  for (const m of istio.messages) {
    const k = key(m.analyzer, m.code, m.kind, m.namespace, m.name);
    if (istioKeys.has(k) || standIn.has(`${m.kind} ${m.namespace}/${m.name}`)) continue;
    istioKeys.add(k);
    const divergence = divergences.findIndex(
      (d) => d.analyzer === m.analyzer && d.code === m.code && d.text.test(m.text),
    );
    if (reported.has(k)) result.agreed++;
    else if (divergence >= 0) result.diverged.push(divergence);
    else if (inapplicable.has(m.analyzer) || leftOut.has(`${m.analyzer} ${m.code}`)) result.explained++;
    else {
      result.missing.push(`${label}${k}`);
      const claim = claimed.has(`${m.analyzer} ${m.code}`) ? '' : 'no kfmesh rule claims it: ';
      result.texts.set(`${label}${k}`, `${claim}${m.text}`);
    }
  }
  for (const k of reported) if (!istioKeys.has(k)) result.extra.push(`${label}${k}`);
  result.missing.sort();
  result.extra.sort();
  return result;
}

/** Both sides on the same files; the mesh configuration as istioctl's flag and as kfmesh's ConfigMap. */
export async function judge(
  label: string,
  paths: readonly string[],
  meshConfig?: string,
): Promise<AnalysisComparison> {
  const loaded = await loadPaths(paths);
  const mesh = meshConfig ? await loadPaths([meshConfigMap(readFileSync(meshConfig, 'utf8'))]) : [];
  const { findings, standIns } = await kfmeshAnalyze([...loaded, ...mesh]);
  const istio = istioAnalyze(
    [asStored(loaded.map((l) => l.object)), writeManifest(standIns, 'stand-in-pods.yaml')],
    meshConfig ? { meshConfig } : {},
  );
  return compareAnalysis(istio, findings, label, standIns);
}

function meshConfigMap(mesh: string): string {
  return writeManifest([
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'istio', namespace: 'istio-system' },
      data: { mesh },
    },
  ]);
}

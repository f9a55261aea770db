/**
 * Conformance cases (format in shared/conformance/README.md): discovery in the project's copies and in
 * ../shared/conformance, and the matching rules of RenderCase expectations.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { groupOf, isPlainObject, type KubeObject } from '../../src/model/object.ts';
import { listItems } from '../cli-process.ts';

/** The project root (this file runs from dist/test/conformance). */
export const projectRoot = resolve(fileURLToPath(import.meta.url), '../../../..');

/** One case file. */
export interface CaseFile {
  /** Where it was found, for test names: `project:kserve/01-....yaml` or `shared:...`. */
  label: string;
  path: string;
  body: Record<string, unknown>;
}

/** The folders holding cases: the project's copies, and ../shared/conformance when it is there. */
export function caseRoots(): { name: string; dir: string }[] {
  const roots = [{ name: 'project', dir: join(projectRoot, 'test/data/conformance') }];
  const shared = process.env['KFMESH_SHARED_CONFORMANCE'] ?? resolve(projectRoot, '../shared/conformance');
  if (existsSync(shared)) roots.push({ name: 'shared', dir: shared });
  return roots;
}

/** Every case file under the roots, once per distinct content (a copy identical to the shared case runs once). */
export function discoverCases(): CaseFile[] {
  const seen = new Set<string>();
  const cases: CaseFile[] = [];
  for (const root of caseRoots()) {
    for (const path of yamlFiles(root.dir)) {
      const text = readFileSync(path, 'utf8');
      const digest = createHash('sha256').update(text).digest('hex');
      if (seen.has(digest)) continue;
      seen.add(digest);
      const body = parse(text) as unknown;
      if (!isPlainObject(body)) throw new Error(`${path}: a case must be a mapping`);
      cases.push({ label: `${root.name}:${relative(root.dir, path)}`, path, body });
    }
  }
  return cases;
}

/**
 * Folders of ../shared/conformance in another format than one case per file (their own README says
 * which): `istio-analyzers/` is Istio's analyzer test data with a table of expectations, for the
 * analyzer's own suite, not a RenderCase or TraceCase folder.
 */
const otherSuites = new Set(['istio-analyzers']);

function yamlFiles(dir: string, top = true): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (top && otherSuites.has(name)) continue;
    if (statSync(full).isDirectory()) out.push(...yamlFiles(full, false));
    else if (/\.ya?ml$/.test(name)) out.push(full);
  }
  return out;
}

/** Removes empty values (`{}`, `[]`, `""`, `null`, undefined) at every depth: an empty value counts as absent. */
function pruneEmpty(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(pruneEmpty);
    return items.length === 0 ? undefined : items.map((v) => (v === undefined ? null : v));
  }
  if (isPlainObject(value)) {
    const entries = Object.entries(value)
      .map(([k, v]) => [k, pruneEmpty(v)] as const)
      .filter(([, v]) => v !== undefined);
    return entries.length === 0 ? undefined : Object.fromEntries(entries);
  }
  return value === null || value === '' ? undefined : value;
}

/** Deep equality where empty values equal absent ones (at any depth), lists keep order, scalars compare strictly. */
export function deepEqualLoose(a: unknown, b: unknown): boolean {
  return strictEqual(pruneEmpty(a), pruneEmpty(b));
}

function strictEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => strictEqual(v, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => strictEqual(a[k], b[k]));
  }
  return a === b;
}

const sameIdentity = (a: KubeObject, b: KubeObject): boolean =>
  groupOf(a.apiVersion) === groupOf(b.apiVersion) &&
  a.kind === b.kind &&
  (a.metadata?.namespace ?? '') === (b.metadata?.namespace ?? '') &&
  a.metadata?.name === b.metadata?.name;

const describe = (o: KubeObject): string =>
  `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

/** The expectations of a RenderCase that the output breaks (empty when the case holds). */
export function renderCaseFailures(
  expect: Record<string, unknown>,
  run: { code: number; stdout: string; stderr: string },
): string[] {
  const error = expect['error'] as { exitCode?: number; stderrIncludes?: string } | undefined;
  if (error) {
    const failures: string[] = [];
    if (error.exitCode !== undefined && run.code !== error.exitCode)
      failures.push(`exit code ${run.code}, expected ${error.exitCode}`);
    if (error.stderrIncludes !== undefined && !run.stderr.includes(error.stderrIncludes)) {
      failures.push(`stderr does not include ${JSON.stringify(error.stderrIncludes)}: ${run.stderr}`);
    }
    return failures;
  }
  if (run.code !== 0) return [`exit code ${run.code}: ${run.stderr}`];
  let output: KubeObject[];
  try {
    output = listItems<KubeObject>(run.stdout);
  } catch {
    return [`stdout is not a v1 List of objects: ${run.stdout.slice(0, 200)}`];
  }
  const failures: string[] = [];
  for (const want of (expect['present'] ?? []) as KubeObject[]) {
    const got = output.find((o) => sameIdentity(o, want));
    if (!got) {
      failures.push(`missing ${describe(want)}; output has ${output.map(describe).join(', ') || 'nothing'}`);
      continue;
    }
    failures.push(...objectDifferences(want, got));
  }
  for (const unwanted of (expect['absent'] ?? []) as KubeObject[]) {
    if (output.some((o) => sameIdentity(o, unwanted)))
      failures.push(`${describe(unwanted)} must not be rendered`);
  }
  return failures;
}

function objectDifferences(want: KubeObject, got: KubeObject): string[] {
  const failures: string[] = [];
  const show = (v: unknown): string => JSON.stringify(v);
  for (const key of Object.keys(want)) {
    if (key === 'apiVersion' || key === 'kind') continue;
    if (key === 'metadata') {
      for (const field of ['labels', 'annotations'] as const) {
        if (!(field in want.metadata)) continue;
        if (!deepEqualLoose(want.metadata[field], got.metadata[field])) {
          failures.push(
            `${describe(want)} metadata.${field}: got ${show(got.metadata[field])}, expected ${show(want.metadata[field])}`,
          );
        }
      }
      continue;
    }
    if (!deepEqualLoose(want[key], got[key]))
      failures.push(`${describe(want)} ${key}:\n  got      ${show(got[key])}\n  expected ${show(want[key])}`);
  }
  return failures;
}

/** A telemetry expectation: fields left out match anything; labels are a subset. */
interface TelemetryExpectation {
  metric?: string;
  reporter?: string;
  proxy?: string;
  labels?: Record<string, string>;
}

interface TraceOutput {
  response?: { code?: number; flags?: string };
  hops?: ({ kind?: string } & Record<string, unknown>)[];
  answeredBy?: string;
  telemetry?: { metric?: string; reporter?: string; proxy?: string; labels?: Record<string, string> }[];
  unsupported?: string;
}

function telemetryMatches(
  want: TelemetryExpectation,
  got: NonNullable<TraceOutput['telemetry']>[number],
): boolean {
  if (want.metric !== undefined && want.metric !== got.metric) return false;
  if (want.reporter !== undefined && want.reporter !== got.reporter) return false;
  if (want.proxy !== undefined && want.proxy !== got.proxy) return false;
  return Object.entries(want.labels ?? {}).every(([k, v]) => got.labels?.[k] === String(v));
}

/** The expectations of a TraceCase that the output breaks (empty when the case holds), and the trace's own caveat. */
export function traceCaseFailures(
  expect: Record<string, unknown>,
  run: { code: number; stdout: string; stderr: string },
): { failures: string[]; unsupported?: string } {
  const error = expect['error'] as { exitCode?: number; stderrIncludes?: string } | undefined;
  if (error) return { failures: renderCaseFailures(expect, run) };
  if (run.code !== 0) return { failures: [`exit code ${run.code}: ${run.stderr}`] };
  let out: TraceOutput;
  try {
    out = JSON.parse(run.stdout) as TraceOutput;
  } catch {
    return { failures: [`stdout is not a JSON object: ${run.stdout.slice(0, 200)}`] };
  }
  const failures: string[] = [];
  const response = expect['response'] as { code?: number; flags?: string } | undefined;
  if (response?.code !== undefined && out.response?.code !== response.code)
    failures.push(`response code ${out.response?.code}, expected ${response.code}`);
  if (response?.flags !== undefined && out.response?.flags !== response.flags)
    failures.push(`response flags ${out.response?.flags}, expected ${response.flags}`);
  const kinds = (out.hops ?? []).map((h) => h.kind);
  const gatewayHops = expect['gatewayHops'];
  if (typeof gatewayHops === 'number' && kinds.filter((k) => k === 'gateway').length !== gatewayHops) {
    failures.push(
      `${kinds.filter((k) => k === 'gateway').length} gateway hops, expected ${gatewayHops} (hops: ${kinds.join(', ')})`,
    );
  }
  const hopKinds = expect['hopKinds'];
  if (Array.isArray(hopKinds) && JSON.stringify(kinds) !== JSON.stringify(hopKinds))
    failures.push(`hop kinds [${kinds.join(', ')}], expected [${hopKinds.join(', ')}]`);
  // The application that answered, and fields of numbered hops (upstream-tests' README): compared as text.
  const answeredBy = expect['answeredBy'];
  if (typeof answeredBy === 'string' && out.answeredBy !== answeredBy)
    failures.push(`answered by ${out.answeredBy ?? '(a proxy)'}, expected ${answeredBy}`);
  for (const want of (expect['hops'] ?? []) as ({ index?: number } & Record<string, unknown>)[]) {
    const hop = out.hops?.[want.index ?? 0];
    if (!hop) {
      failures.push(`no hop ${want.index ?? 0} (${out.hops?.length ?? 0} hops)`);
      continue;
    }
    for (const [field, value] of Object.entries(want)) {
      if (field === 'index') continue;
      if (String(hop[field] ?? '') !== String(value))
        failures.push(
          `hop ${want.index ?? 0} ${field}: ${String(hop[field] ?? '(none)')}, expected ${String(value)}`,
        );
    }
  }
  const records = out.telemetry ?? [];
  for (const want of (expect['telemetry'] ?? []) as TelemetryExpectation[]) {
    if (!records.some((r) => telemetryMatches(want, r)))
      failures.push(`no telemetry record matches ${JSON.stringify(want)}`);
  }
  for (const unwanted of (expect['absentTelemetry'] ?? []) as TelemetryExpectation[]) {
    const found = records.find((r) => telemetryMatches(unwanted, r));
    if (found)
      failures.push(
        `telemetry record ${JSON.stringify(found)} matches the absent expectation ${JSON.stringify(unwanted)}`,
      );
  }
  return out.unsupported ? { failures, unsupported: out.unsupported } : { failures };
}

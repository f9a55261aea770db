/**
 * `kfmesh verify --cases FILE`: request expectations written by users, each traced and checked.
 *
 * A case file is YAML: a list of cases, or a mapping with the list under `cases`. Each case:
 *
 * ```yaml
 * - name: the owner reaches their notebook          # required
 *   request:
 *     from: external                                # NS/WORKLOAD or external (required)
 *     via: kubeflow/kubeflow-gateway                # external only: the ingress gateway
 *     url: http://kubeflow.example.com/notebook/ml-research/lab/   # required
 *     method: GET                                   # default GET
 *     headers: { kubeflow-userid: researcher@example.com }
 *   expect:                                         # at least one of:
 *     code: 200                                     # the response code the client gets
 *     hops: [gateway, waypoint, ztunnel]            # the proxies passed, by kind, in order
 *     destination: ml-research/lab                  # the workload that answers (none: a proxy answered)
 *     identity: spiffe://cluster.local/ns/kubeflow/sa/kubeflow-gateway-istio   # the caller the destination's
 *                                                   # policies see (behind a waypoint: as the waypoint sees it)
 *     policy: ml-research/ns-owner-access-istio     # the policy that decided last
 * ```
 */
import { isMap, isSeq, LineCounter, parseDocument } from '../load/yaml.ts';
import { InputError, type SourceLocation, messageOf } from '../model/errors.ts';
import { isPlainObject } from '../model/object.ts';
import { traceRequest } from '../mesh/trace.ts';
import type { TraceResult } from '../model/trace-result.ts';
import { type TraceInput, TraceInputError } from '../mesh/trace/request.ts';
import type { Mesh } from '../mesh/compiled.ts';

/** What a case expects; every field given is checked. */
export interface CaseExpectation {
  code?: number;
  hops?: string[];
  destination?: string | null;
  identity?: string;
  policy?: string;
}

/** One request expectation. */
export interface VerifyCase {
  name: string;
  request: TraceInput;
  expect: CaseExpectation;
  location?: SourceLocation;
}

/** What a case found. */
export interface CaseResult {
  name: string;
  passed: boolean;
  /** One line per expectation that did not hold. */
  failures: string[];
  actual: {
    code: number;
    hops: string[];
    destination: string | null;
    identity?: string;
    policy?: string;
    summary: string;
  };
  location?: string;
}

const hopKinds = ['sidecar', 'gateway', 'ztunnel', 'waypoint'];

/** A mapping whose every value is a string. */
function isStringMap(value: unknown): value is Record<string, string> {
  return isPlainObject(value) && Object.values(value).every((v) => typeof v === 'string');
}

/** Reads a case file; a malformed case is an InputError naming the file, line and field. */
/**
 * Whether a file's text is a cases file rather than manifests: one document, a mapping with `cases` and
 * neither `apiVersion` nor `kind`. What a command reading manifests says when it meets one.
 */
export function casesFileReason(text: string): string | undefined {
  if (!/^cases\s*:/m.test(text)) return undefined;
  const doc = parseDocument(text, { prettyErrors: false });
  const root = doc.contents;
  if (
    doc.errors.length > 0 ||
    !isMap(root) ||
    !root.has('cases') ||
    root.has('apiVersion') ||
    root.has('kind')
  )
    return undefined;
  return 'a file of request expectations (for kfmesh verify --cases), not Kubernetes objects';
}

export function parseCases(text: string, file: string): VerifyCase[] {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  // Where a field is written; a missing field points at the nearest enclosing node that is there.
  const at = (path: (string | number)[]): SourceLocation => {
    for (let n = path.length; n >= 0; n--) {
      const node = (n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true)) as
        { range?: [number, number, number] } | undefined;
      const offset = node?.range?.[0];
      if (offset === undefined) continue;
      const pos = lines.linePos(offset);
      return { file, line: pos.line, column: pos.col };
    }
    return { file };
  };
  const fail = (path: (string | number)[], message: string): never => {
    const field = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
    throw new InputError({ location: at(path), ...(field ? { field } : {}) }, message);
  };
  const firstError = doc.errors[0];
  if (firstError) {
    const pos = lines.linePos(firstError.pos[0]);
    throw new InputError(
      { location: { file, line: pos.line, column: pos.col } },
      firstError.message.split('\n')[0] ?? '',
    );
  }
  const root = doc.contents;
  const base: (string | number)[] = isMap(root) ? ['cases'] : [];
  const list = isMap(root) ? doc.get('cases', true) : root;
  if (!isSeq(list)) fail(base, 'expected a list of cases (or a mapping with the list under "cases")');
  let cases: unknown;
  try {
    cases = doc.toJS({ maxAliasCount: 1000 });
  } catch (error) {
    // The yaml library refuses aliases that expand past the limit (a "billion laughs" document).
    return fail([], `cannot read: ${messageOf(error)}`);
  }
  const items = Array.isArray(cases) ? cases : isPlainObject(cases) ? cases['cases'] : undefined;
  if (!Array.isArray(items) || items.length === 0) return fail(base, 'no cases: give at least one');
  return items.map((item, i) => parseCase(item, [...base, i], fail, at));
}

function parseCase(
  item: unknown,
  path: (string | number)[],
  fail: (path: (string | number)[], message: string) => never,
  at: (path: (string | number)[]) => SourceLocation,
): VerifyCase {
  if (!isPlainObject(item)) return fail(path, 'expected a mapping with name, request and expect');
  const required = (value: unknown, field: string): string =>
    typeof value === 'string' && value !== ''
      ? value
      : fail([...path, ...field.split('.')], 'expected a non-empty string');
  const text = (value: unknown, field: string): string | undefined =>
    value === undefined ? undefined : required(value, field);
  const name = required(item['name'], 'name');
  const request = item['request'];
  if (!isPlainObject(request)) return fail([...path, 'request'], 'expected a mapping with from and url');
  const input: TraceInput = {
    from: required(request['from'], 'request.from'),
    url: required(request['url'], 'request.url'),
  };
  const method = text(request['method'], 'request.method');
  if (method) input.method = method;
  const via = text(request['via'], 'request.via');
  if (via) input.via = via;
  if (request['headers'] !== undefined) {
    const headers = request['headers'];
    if (!isStringMap(headers))
      return fail([...path, 'request', 'headers'], 'expected a mapping of header names to string values');
    input.headers = headers;
  }
  const expect = item['expect'];
  if (!isPlainObject(expect) || Object.keys(expect).length === 0)
    return fail(
      [...path, 'expect'],
      'expected a mapping with at least one of code, hops, destination, identity, policy',
    );
  const out: CaseExpectation = {};
  for (const key of Object.keys(expect))
    if (!['code', 'hops', 'destination', 'identity', 'policy'].includes(key))
      fail([...path, 'expect', key], 'unknown expectation; use code, hops, destination, identity or policy');
  if (expect['code'] !== undefined) {
    const code = expect['code'];
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 0 || code > 599)
      return fail([...path, 'expect', 'code'], 'expected an HTTP status code (0 for a reset connection)');
    out.code = code;
  }
  if (expect['hops'] !== undefined) {
    const hops = expect['hops'];
    if (
      !Array.isArray(hops) ||
      !hops.every((h): h is string => typeof h === 'string' && hopKinds.includes(h))
    )
      return fail([...path, 'expect', 'hops'], `expected a list of ${hopKinds.join(', ')}`);
    out.hops = hops;
  }
  if (expect['destination'] !== undefined) {
    const d = expect['destination'];
    if (d !== null && typeof d !== 'string')
      return fail(
        [...path, 'expect', 'destination'],
        'expected NAMESPACE/WORKLOAD, or null when a proxy answers',
      );
    out.destination = d;
  }
  const identity = text(expect['identity'], 'expect.identity');
  if (identity) out.identity = identity;
  const policy = text(expect['policy'], 'expect.policy');
  if (policy) out.policy = policy;
  return { name, request: input, expect: out, location: at(path) };
}

/** Traces every case and checks its expectations. */
export function runCases(mesh: Mesh, cases: readonly VerifyCase[]): CaseResult[] {
  return cases.map((c) => {
    const where = c.location
      ? `${c.location.file}${c.location.line ? `:${c.location.line}` : ''}`
      : undefined;
    let result: TraceResult;
    try {
      result = traceRequest(mesh, c.request);
    } catch (error) {
      if (!(error instanceof TraceInputError)) throw error;
      return {
        name: c.name,
        passed: false,
        failures: [`the request cannot be traced: ${error.message}`],
        actual: { code: 0, hops: [], destination: null, summary: error.message },
        ...(where ? { location: where } : {}),
      };
    }
    const actual = actualOf(result);
    const failures: string[] = [];
    const e = c.expect;
    if (e.code !== undefined && e.code !== actual.code)
      failures.push(`expected code ${e.code}, got ${actual.code}`);
    if (e.hops !== undefined && e.hops.join(',') !== actual.hops.join(','))
      failures.push(`expected hops [${e.hops.join(', ')}], got [${actual.hops.join(', ')}]`);
    if (e.destination !== undefined && e.destination !== actual.destination)
      failures.push(
        `expected destination ${e.destination ?? 'none'}, got ${actual.destination ?? 'none (a proxy answered)'}`,
      );
    if (e.identity !== undefined && e.identity !== actual.identity)
      failures.push(`expected identity ${e.identity}, got ${actual.identity ?? 'none'}`);
    if (e.policy !== undefined && e.policy !== actual.policy)
      failures.push(`expected policy ${e.policy}, got ${actual.policy ?? 'none'}`);
    return {
      name: c.name,
      passed: failures.length === 0,
      failures,
      actual,
      ...(where ? { location: where } : {}),
    };
  });
}

function actualOf(result: TraceResult): CaseResult['actual'] {
  // The identity the destination's policies see: the HTTP request's peer where a proxy reports the request
  // (the destination sidecar, or the waypoint, which sees the original client), else ztunnel's connection peer.
  const atDestination = result.telemetry.filter(
    (t) => t.reporter === 'destination' || t.reporter === 'waypoint',
  );
  const request = atDestination.filter((t) => t.metric === 'istio_requests_total').at(-1);
  const identity = (request ?? atDestination.at(-1))?.labels['source_principal'];
  const decided = [...result.hops].reverse().find((h) => h.policy !== undefined);
  return {
    code: result.response.code,
    hops: result.hops.map((h) => h.kind),
    destination: result.answeredBy ?? null,
    ...(identity && identity !== 'unknown' ? { identity } : {}),
    ...(decided?.policy ? { policy: decided.policy } : {}),
    summary: result.summary,
  };
}

/**
 * The request a trace starts from, as users write it (the CLI's flags, the console's form, verify's cases):
 * the URL parsed as Envoy sees it, the client found by `namespace/name` (with a near-miss suggestion), and
 * `Name: value` headers. Errors here are the user's, said as such (TraceInputError).
 */
import { at } from '../../model/checked.ts';
import type { Workload } from '../workloads.ts';
import type { Mesh } from '../compiled.ts';
import { parseIstioVersion, unmodelledVersion, type IstioVersion } from '../istio-version.ts';

/** The request to trace. */
export interface TraceInput {
  /** `namespace/workload`, `external`, or `kube-apiserver` (ApiServerClient). */
  from: string;
  url: string;
  method?: string;
  /** Extra request headers (any case). */
  headers?: Readonly<Record<string, string>>;
  /** At the n-th weighted split met, take destination `choices[n]` (default: the heaviest). */
  choices?: readonly number[];
  /**
   * For an external client: the ingress gateway to enter through, `namespace/name` of its pods' workload
   * or of its Gateway API Gateway (default: the first gateway of the mesh that serves the host).
   */
  via?: string;
  /**
   * For an external client: it enters the gateway's pod by `kubectl port-forward`, inside the pod's own
   * network, where the NetworkPolicies of its namespace do not see it (docs/semantics.md, NetworkPolicy).
   */
  portForward?: boolean;
}

/**
 * The client name of a caller outside the mesh inside the cluster network, as the Kubernetes API server is
 * when it calls an admission webhook or an aggregated API: plaintext to the Service, no identity.
 */
export const ApiServerClient = 'kube-apiserver';

/** A request header written `Name: value`, or undefined when no name comes before a colon. */
function parseHeaderLine(text: string): [name: string, value: string] | undefined {
  const colon = text.indexOf(':');
  return colon > 0 ? [text.slice(0, colon).trim(), text.slice(colon + 1).trim()] : undefined;
}

/** A request the trace cannot start (unknown workload, bad URL, no gateway for an external host). */
export class TraceInputError extends Error {
  override name = 'TraceInputError';
}

/** A trace request as a user writes it: the CLI's flags or the console's query, every field text. */
export interface WrittenRequest {
  from?: string | null | undefined;
  url?: string | null | undefined;
  method?: string | null | undefined;
  /** `Name: value` lines. */
  headers: readonly string[];
  via?: string | null | undefined;
  portForward?: boolean | null | undefined;
  /** `X.Y`: the Istio version to simulate (the caller's default when absent). */
  istio?: string | null | undefined;
}

/** What each field is called where the user wrote it (`--from` on the command line, `from` in a query). */
export interface FieldNames {
  from: string;
  url: string;
  header: string;
  istio: string;
}

/**
 * Reads a written trace request: from and url given, each header `Name: value`, the version one kfmesh
 * models; a TraceInputError naming the field as the user wrote it otherwise. The CLI and the console
 * both read their requests here.
 */
export function readTraceRequest(
  written: WrittenRequest,
  names: FieldNames,
): { input: TraceInput; istio?: IstioVersion } {
  if (!written.from)
    throw new TraceInputError(
      `${names.from} is required: NAMESPACE/WORKLOAD, external or ${ApiServerClient}`,
    );
  if (!written.url) throw new TraceInputError(`${names.url} is required`);
  const headers: Record<string, string> = {};
  for (const h of written.headers) {
    const header = parseHeaderLine(h);
    if (!header) throw new TraceInputError(`${names.header} ${JSON.stringify(h)}: write 'Name: value'`);
    headers[header[0]] = header[1];
  }
  let istio: IstioVersion | undefined;
  if (written.istio !== undefined && written.istio !== null) {
    istio = parseIstioVersion(written.istio);
    if (!istio) throw new TraceInputError(unmodelledVersion(names.istio, written.istio));
  }
  const input: TraceInput = {
    from: written.from,
    url: written.url,
    ...(written.method ? { method: written.method } : {}),
    headers,
    ...(written.via ? { via: written.via } : {}),
    ...(written.portForward ? { portForward: true } : {}),
  };
  return { input, ...(istio ? { istio } : {}) };
}

/** The parts of a request URL the trace needs. */
interface ParsedUrl {
  scheme: 'http' | 'https';
  /** Host name (IPv6 without brackets). */
  host: string;
  /** The port when the URL names a non-default one. */
  port: number | undefined;
  /** `host[:port]` as a client sends it in the Host header (default port left out). */
  authority: string;
  path: string;
  query: Record<string, string>;
}

/** URLs of this shape parse the same by hand as by WHATWG URL (lower-case host, no dot segments, query or escapes). */
const plainUrl =
  /^(https?):\/\/([a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::(\d{1,5}))?(\/[A-Za-z0-9_~!$&'()*+,;=:@/-]*)?$/;

/** Parses an http(s) URL; throws TraceInputError for anything else. */
export function parseUrl(text: string): ParsedUrl {
  const plain = plainUrl.exec(text);
  // WHATWG reads a host whose last label is a number as IPv4 (`0` is 0.0.0.0): such hosts take the full parser.
  const lastLabel = plain?.[2]?.slice((plain[2] ?? '').lastIndexOf('.') + 1) ?? '';
  if (plain && !/^(\d+|0x[0-9a-f]*)$/.test(lastLabel) && !/\/\.\.?(\/|$)/.test(plain[4] ?? '')) {
    const scheme = at(plain, 1) === 'https' ? 'https' : 'http';
    const host = at(plain, 2);
    const explicit = plain[3] === undefined ? undefined : Number(plain[3]);
    const port = explicit === (scheme === 'https' ? 443 : 80) ? undefined : explicit;
    return {
      scheme,
      host,
      port,
      authority: port === undefined ? host : `${host}:${port}`,
      path: plain[4] ?? '/',
      query: {},
    };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TraceInputError(
      `--url ${JSON.stringify(text)} is not a URL (write it as http://host[:port]/path)`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TraceInputError(`--url: only http and https are traced, got ${url.protocol}`);
  return {
    scheme: url.protocol === 'https:' ? 'https' : 'http',
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port ? Number(url.port) : undefined,
    authority: url.host,
    path: decodePath(url.pathname) || '/',
    query: url.search ? Object.fromEntries(url.searchParams.entries()) : {},
  };
}

/** The path with percent-escapes decoded; a path that does not decode stays as sent. */
function decodePath(path: string): string {
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The workload named `ns/name` (a Deployment, StatefulSet, DaemonSet or Pod); the error names the closest ones. */
export function findWorkload(mesh: Mesh, from: string): Workload {
  const direct = mesh.workloadByName.get(from);
  if (direct) return direct;
  const [namespace, name] = from.split('/');
  if (!namespace || !name || from.split('/').length !== 2)
    throw new TraceInputError(`--from ${JSON.stringify(from)}: write NAMESPACE/WORKLOAD or external`);
  const found =
    mesh.workloadByName.get(from) ??
    mesh.workloads.find((w) => w.namespace === namespace && w.podName === name);
  if (found) return found;
  const names = [...mesh.workloadByName.keys()];
  // Names that contain what was asked come first (a workload named by its beginning), then by edit distance.
  const closest = names
    .map((n) => ({ n, d: editDistance(n, from) - (n.includes(from) ? 1000 : 0) }))
    .sort((a, b) => a.d - b.d || (a.n < b.n ? -1 : 1))
    .slice(0, 3)
    .map((x) => x.n);
  throw new TraceInputError(
    `--from ${from}: no such workload${closest.length ? `; closest: ${closest.join(', ')}` : ' (the input has no workloads)'}`,
  );
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = at(row, 0);
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = at(row, j);
      row[j] = Math.min(at(row, j) + 1, at(row, j - 1) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return at(row, b.length);
}

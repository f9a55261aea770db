/**
 * `kfmesh serve` as a process: the JSON API on the example platform (summary, both graphs, a trace in each
 * mode, findings, rendered objects, the migration report), read-only, clear errors for bad queries, and a
 * reload when a served file changes (a file that no longer loads leaves the last good objects served).
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { NewestModelledVersion } from '../../src/mesh/istio-version.ts';
import { eventually } from '../controller-process.ts';
import { runKfmesh, writeText } from '../cli-process.ts';
import { startServe, stopServe as stop, type Serving } from '../serve-process.ts';

const serve = (args: string[]) => startServe(args);

const getJson = async <T>(url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T, headers: res.headers };
};

describe('kfmesh serve on the example platform', () => {
  let s: Serving;
  before(async () => {
    s = await serve([]);
  });
  after(async () => {
    await stop(s);
  });

  test('binds to loopback; the summary names the models, Profiles and clients', async () => {
    assert.match(s.base, /^http:\/\/127\.0\.0\.1:\d+$/);
    const { status, body, headers } = await getJson<{
      source: string;
      inferenceServices: string[];
      profiles: string[];
      clients: string[];
    }>(`${s.base}/api/summary`);
    assert.equal(status, 200);
    assert.equal(headers.get('x-content-type-options'), 'nosniff');
    assert.equal(body.source, '<example>');
    assert.ok(body.inferenceServices.includes('kubeflow-user-example-com/sklearn-iris'));
    assert.ok(body.profiles.includes('ml-research'));
    assert.ok(body.clients.includes('kubeflow-user-example-com/curl-inside-mesh'));
  });

  test('the graphs of both modes, from the same requests', async () => {
    const { body } = await getJson<{
      requests: number;
      sidecar: { nodes: { kind: string }[]; totals: { requests: number } };
      ambient: { nodes: { kind: string }[]; totals: { requests: number } };
    }>(`${s.base}/api/graph`);
    assert.ok(body.requests > 1000);
    assert.equal(body.sidecar.totals.requests, body.requests);
    assert.ok(body.ambient.nodes.some((n) => n.kind === 'waypoint'));
  });

  test("a trace in each mode: the in-mesh client's call to a model", async () => {
    const q = new URLSearchParams({
      from: 'kubeflow-user-example-com/curl-inside-mesh',
      url: 'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict',
      method: 'POST',
    });
    q.append('header', 'Content-Type: application/json');
    const sidecar = await getJson<{ hops: { kind: string; workload: string }[]; response: { code: number } }>(
      `${s.base}/api/trace?${q.toString()}`,
    );
    assert.equal(sidecar.status, 200);
    assert.equal(sidecar.body.response.code, 200);
    assert.ok(sidecar.body.hops.some((h) => h.kind === 'gateway'));
    q.set('mode', 'ambient');
    const ambient = await getJson<{ mode: string; hops: unknown[] }>(`${s.base}/api/trace?${q.toString()}`);
    assert.equal(ambient.status, 200);
    assert.equal(ambient.body.mode, 'ambient');
  });

  test('findings, rendered objects in a mode, the migration report', async () => {
    const findings = await getJson<{ summary: { findings: number } }>(`${s.base}/api/findings`);
    assert.equal(typeof findings.body.summary.findings, 'number');
    const rendered = await getJson<{ objects: { kind: string }[] }>(`${s.base}/api/render?mode=ambient`);
    assert.ok(rendered.body.objects.some((o) => o.kind === 'Gateway'));
    const report = await getJson<Record<string, unknown>>(`${s.base}/api/migration`);
    assert.equal(report.status, 200);
  });

  test('bad queries get 400 with the reason; unknown paths 404; writes 405', async () => {
    const noUrl = await getJson<{ error: string }>(`${s.base}/api/trace?from=a/b`);
    assert.equal(noUrl.status, 400);
    assert.match(noUrl.body.error, /url/);
    const unknown = await getJson<{ error: string }>(
      `${s.base}/api/trace?from=nowhere/nobody&url=http://x.y.svc.cluster.local/`,
    );
    assert.equal(unknown.status, 400);
    assert.equal((await getJson(`${s.base}/api/render?mode=both`)).status, 400);
    assert.equal((await getJson(`${s.base}/api/nothing`)).status, 404);
    const post = await fetch(`${s.base}/api/summary`, { method: 'POST', body: '{}' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
  });

  test('the page and its script from this server, under a CSP that allows nothing else', async () => {
    const page = await fetch(`${s.base}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    assert.match(html, /<script type="module" src="\/console.js">/);
    assert.doesNotMatch(html, /(src|href)="(https?:)?\/\//, 'no remote assets');
    const script = await fetch(`${s.base}/console.js`);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.ok((await script.text()).length > 100_000, 'cytoscape is bundled in');
  });

  test("one mode's graph; an InferenceService's and a Profile's objects; an input object", async () => {
    const ambient = await getJson<{ mode: string; graph: { nodes: { kind: string }[] }; requests: number }>(
      `${s.base}/api/graph?mode=ambient`,
    );
    assert.equal(ambient.body.mode, 'ambient');
    assert.ok(ambient.body.graph.nodes.some((n) => n.kind === 'waypoint'));
    const isvc = await getJson<{ count: number; yaml: string }>(
      `${s.base}/api/objects?owner=InferenceService/kubeflow-user-example-com/sklearn-iris`,
    );
    assert.equal(isvc.status, 200);
    assert.ok(isvc.body.count >= 2);
    assert.match(isvc.body.yaml, /kind: VirtualService\n/);
    assert.match(isvc.body.yaml, /name: sklearn-iris\n/);
    const profile = await getJson<{ count: number; yaml: string }>(
      `${s.base}/api/objects?owner=Profile//ml-research&mode=ambient`,
    );
    assert.equal(profile.status, 200);
    assert.match(
      profile.body.yaml,
      /kind: Gateway\n/,
      'the Profile namespace gets its waypoint in ambient mode',
    );
    assert.equal((await getJson(`${s.base}/api/objects?owner=Profile//nobody`)).status, 404);
    const object = await getJson<{ yaml: string; location: string }>(
      `${s.base}/api/object?group=serving.kserve.io&kind=InferenceService&namespace=kubeflow-user-example-com&name=sklearn-iris`,
    );
    assert.match(object.body.yaml, /kind: InferenceService/);
    assert.match(object.body.location, /^<example>:\d+:\d+$/);
    assert.equal((await getJson(`${s.base}/api/object?kind=Service&name=none`)).status, 404);
  });

  test('a trace at another Istio version, with its path on the graph', async () => {
    const q = new URLSearchParams({
      from: 'kubeflow-user-example-com/curl-inside-mesh',
      url: 'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/',
      istio: '1.20',
    });
    const traced = await getJson<{ istio: string; path: string[] }>(`${s.base}/api/trace?${q.toString()}`);
    assert.equal(traced.status, 200);
    assert.equal(traced.body.istio, '1.20');
    assert.equal(traced.body.path[0], 'kubeflow-user-example-com/curl-inside-mesh');
    q.set('istio', 'latest');
    assert.equal((await getJson(`${s.base}/api/trace?${q.toString()}`)).status, 400);
  });

  test('SIGTERM: exit 0', async () => {
    assert.equal(await stop(s), 0);
  });
});

describe('kfmesh serve: bad flags', () => {
  test('a taken port or a bad Istio version: exit 2 with the reason', async () => {
    const first = await serve([]);
    try {
      const port = new URL(first.base).port;
      const taken = runKfmesh(['serve', '--port', port]);
      assert.equal(taken.code, 2);
      assert.match(taken.stderr, new RegExp(`can't listen on 127.0.0.1:${port} \\(EADDRINUSE\\)`));
    } finally {
      await stop(first);
    }
    // The version after the newest modelled one is refused too (a serve it started would not end).
    const next = `${NewestModelledVersion.major}.${NewestModelledVersion.minor + 1}`;
    for (const bad of ['one', '9.9', '1.19', '0.1', next]) {
      const version = runKfmesh(['serve', '--istio-version', bad]);
      assert.equal(version.code, 2, bad);
      assert.match(version.stderr, /--istio-version must be a modelled version X.Y \(1\.20 to 1\.31\)/);
    }
    for (const command of [
      ['trace', '--from', 'external', '--url', 'http://x/'],
      ['verify', '--equivalence', 'a', 'b'],
    ]) {
      const version = runKfmesh([...command, '--istio-version', '9.9']);
      assert.equal(version.code, 2, command.join(' '));
    }
  });

  test('bad metrics: a malformed line, a missing file, two sources, a bad window: exit 2 before listening', () => {
    const bad = writeText('istio_requests_total{reporter="source" 3\n', 'serve-bad.prom');
    const cases: [string[], RegExp][] = [
      [['--metrics', bad], /serve-bad\.prom:1:\d+: /],
      [['--metrics', '/nonexistent/m.prom'], /--metrics \/nonexistent\/m\.prom: no such file/],
      [['--metrics', bad, '--prometheus', 'http://127.0.0.1:9'], /not both/],
      [
        ['--prometheus', 'http://127.0.0.1:9', '--window', 'an hour'],
        /--window must be a Prometheus duration/,
      ],
    ];
    for (const [args, reason] of cases) {
      const run = runKfmesh(['serve', ...args]);
      assert.equal(run.code, 2, args.join(' '));
      assert.match(run.stderr, reason);
      assert.doesNotMatch(run.stderr, /is at http/);
    }
  });
});

/** A raw GET with the headers given (fetch would set Host and Origin itself). */
function rawGet(
  base: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path, method: 'GET', headers, setHost: false },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('kfmesh serve answers only its own origin', () => {
  let s: Serving;
  before(async () => {
    s = await serve([]);
  });
  after(async () => {
    await stop(s);
  });

  test('a rebound name in Host is refused; IP addresses and localhost at its port are answered', async () => {
    const port = new URL(s.base).port;
    for (const host of [
      `attacker.example:${port}`,
      `127.0.0.1.nip.io:${port}`,
      `localhost:${Number(port) + 1}`,
    ]) {
      const r = await rawGet(s.base, '/api/summary', { host });
      assert.equal(r.status, 403, host);
      assert.match(r.body, /answers only requests addressed to it/);
    }
    // No Host at all: Node's server refuses HTTP/1.1 requests without one.
    assert.equal((await rawGet(s.base, '/api/summary', {})).status, 400);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      const r = await rawGet(s.base, '/api/summary', { host });
      assert.equal(r.status, 200, host);
    }
  });

  test('cross-origin requests are refused, same-origin ones answered', async () => {
    const port = new URL(s.base).port;
    const host = `127.0.0.1:${port}`;
    const refused: Record<string, string>[] = [
      { host, origin: 'http://attacker.example' },
      { host, origin: `http://localhost:${port}` },
      { host, 'sec-fetch-site': 'cross-site' },
      { host, 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of refused) {
      const r = await rawGet(s.base, '/api/summary', headers);
      assert.equal(r.status, 403, JSON.stringify(headers));
      assert.match(r.body, /cross-origin requests are refused/);
    }
    const same = await rawGet(s.base, '/api/summary', {
      host,
      origin: `http://${host}`,
      'sec-fetch-site': 'same-origin',
    });
    assert.equal(same.status, 200);
  });

  test('unmodelled Istio versions are refused, and meshes of other versions are not kept without bound', async () => {
    for (const istio of ['9.9', '1.19', '0.1']) {
      const r = await getJson<{ error: string }>(
        `${s.base}/api/trace?from=external&url=${encodeURIComponent('http://x/')}&istio=${istio}`,
      );
      assert.equal(r.status, 400, istio);
      assert.match(r.body.error, /modelled version X.Y \(1\.20 to 1\.31\)/);
    }
  });

  test('a non-loopback --host warns that the console has no authentication', async () => {
    const open = await startServe(['--host', '0.0.0.0']);
    try {
      assert.match(
        open.log(),
        /warning: --host 0\.0\.0\.0 is not a loopback address: the console has no authentication/,
      );
      assert.match(open.log(), /kubectl port-forward/);
    } finally {
      await stop(open);
    }
    assert.doesNotMatch(s.log(), /warning/);
  });
});

describe('kfmesh serve on a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-serve-'));
  const file = join(dir, 'platform.yaml');
  const namespace = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`;
  let s: Serving | undefined;
  after(async () => {
    await stop(s);
    rmSync(dir, { recursive: true, force: true });
  });

  test('reloads when the file changes; a broken file leaves the last good objects served', async () => {
    writeFileSync(file, namespace('first'));
    s = await serve([file]);
    const served = s;
    const namespaces = async () =>
      (await getJson<{ objects: number; kinds: Record<string, number> }>(`${served.base}/api/summary`)).body;
    assert.equal((await namespaces()).kinds['Namespace'], 1);
    writeFileSync(file, `${namespace('first')}---\n${namespace('second')}`);
    await eventually(
      'the reload',
      async () => ((await namespaces()).kinds['Namespace'] === 2 ? true : undefined),
      {
        context: served.log,
      },
    );
    writeFileSync(file, 'kind: [unclosed');
    await eventually('the failed reload said', () => (/reload failed/.test(served.log()) ? true : undefined));
    assert.equal((await namespaces()).kinds['Namespace'], 2);
  });
});

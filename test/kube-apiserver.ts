/**
 * A real Kubernetes API server for tests: etcd and kube-apiserver (built from Go modules by
 * scripts/build-kube-apiserver.sh, at the current release or the oldest supported one) on free loopback
 * ports, with a temporary data dir, self-signed serving certificates, a service-account key pair, a token
 * for a `system:masters` user and RBAC; the real CRDs (from ../shared/crds, else the project's copies)
 * loaded exactly as shipped, their CEL validation rules (`x-kubernetes-validations`) included.
 *
 * Without the binaries the tests that need it are skipped with a message, except under CI=true, where
 * they fail: `.ci/run` builds them first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KubeClient, type Resource } from '../src/kube/client.ts';
import type { KubeObject } from '../src/model/object.ts';
import { projectRoot } from './conformance/cases.ts';

const binDir = join(process.env['KFMESH_CACHE'] ?? join(homedir(), '.cache', 'kfmesh'), 'bin');

/** The versions scripts/build-kube-apiserver.sh built (`current`, `oldest`, `etcd`), read from its record. */
function builtVersions(): Partial<Record<'current' | 'oldest' | 'etcd', string>> {
  const file = join(binDir, 'kube-versions.env');
  if (!existsSync(file)) return {};
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((line) => line.split('='))
      .filter((kv): kv is [string, string] => kv.length === 2),
  );
}

/** Which of the built Kubernetes releases a test runs against. */
export type KubeRelease = 'current' | 'oldest';

/** The Kubernetes version (`v1.Y.Z`) a release stands for here, or undefined before the build. */
export function kubeVersion(release: KubeRelease = 'current'): string | undefined {
  return builtVersions()[release];
}

const apiserverBin = (release: KubeRelease): string =>
  join(binDir, `kube-apiserver-${kubeVersion(release) ?? 'unbuilt'}`);
const etcdBin = (): string => join(binDir, `etcd-${builtVersions().etcd ?? 'unbuilt'}`);

/** Where a program is on PATH, or undefined. */
export function onPath(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    const candidate = join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Why the server (at `release`) can't run here, or undefined when it can. */
export function apiServerMissing(release: KubeRelease = 'current'): string | undefined {
  const missing = [apiserverBin(release), etcdBin()].filter((bin) => !existsSync(bin));
  return missing.length > 0
    ? `needs ${missing.join(' and ')}: run scripts/build-kube-apiserver.sh (as .ci/run does)`
    : undefined;
}

/**
 * `{ skip }` for `describe` when a real part is `missing` (the reason, or undefined): skipped with the
 * reason, except under CI=true, where it fails.
 */
export function partTestOptions(part: string, missing: string | undefined): { skip: string | false } {
  if (missing && process.env['CI'] === 'true') throw new Error(`CI=true and ${part} ${missing}`);
  return { skip: missing ?? false };
}

/** `{ skip }` for `describe`: skipped with the reason when the server can't run, never under CI=true. */
export function apiServerTestOptions(release: KubeRelease = 'current'): { skip: string | false } {
  return partTestOptions(`the API server (${release} release)`, apiServerMissing(release));
}

/** The real Kubeflow platform (../shared/real), which holds the Notebook CRD the shared CRDs lack. */
export const realPlatformFile = resolve(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');

/** Skips where the real Kubeflow platform is absent (fails under CI=true), as for the API server. */
export function realPlatformTestOptions(): { skip: string | false } {
  const options = apiServerTestOptions();
  if (options.skip) return options;
  return partTestOptions(
    'the real platform',
    existsSync(realPlatformFile)
      ? undefined
      : `${realPlatformFile} is missing (../shared beside the project)`,
  );
}

/** Kubeflow's Notebook CRD, as the real platform installs it (its one document of that name). */
function notebookCrd(): KubeObject {
  const text = readFileSync(realPlatformFile, 'utf8')
    .split('\n---\n')
    .find((d) => d.includes('kind: CustomResourceDefinition') && d.includes('name: notebooks.kubeflow.org'));
  if (!text) throw new Error(`no Notebook CRD in ${realPlatformFile}`);
  return parseAllDocuments(text)[0]?.toJS() as KubeObject;
}

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** How a test server starts. */
interface StartOptions {
  /** Load the real CRDs (default true). */
  crds?: boolean;
  /** Users besides the admin, each with a token of its own. */
  users?: string[];
  /** Also load Kubeflow's Notebook CRD from the real platform. */
  notebooks?: boolean;
  /** Which built Kubernetes release to run (default: the current one). */
  release?: KubeRelease;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A running etcd and kube-apiserver. */
export class TestApiServer {
  readonly dir: string;
  readonly kubeconfig: string;
  readonly token = randomBytes(16).toString('hex');
  #etcd: ChildProcess | undefined;
  #apiserver: ChildProcess | undefined;
  #etcdPort = 0;
  #peerPort = 0;
  #port = 0;
  #client: KubeClient | undefined;
  readonly release: KubeRelease;
  /** The server's own `gitVersion` (GET /version), read once it is ready. */
  version = '';

  private constructor(release: KubeRelease) {
    this.release = release;
    // On a memory file system where there is one: etcd syncs each write to disk, and a test server's data
    // need not outlive it.
    this.dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'kfmesh-apiserver-'));
    this.kubeconfig = join(this.dir, 'kubeconfig');
  }

  /** Users besides the admin, by name, each with a token of its own (for RBAC tests). */
  readonly #users = new Map<string, string>();

  /**
   * Starts both processes and loads the CRDs. `users` are names the token file admits (for example
   * `system:serviceaccount:ns:name`, which RBAC bindings to that ServiceAccount then apply to).
   */
  static async start(options: StartOptions = {}): Promise<TestApiServer> {
    // A free port is only free when it is chosen: a test file running beside this one can take it before
    // etcd or the API server binds it. Such a start is tried again with new ports, twice at most.
    for (let attempt = 1; ; attempt++) {
      try {
        return await TestApiServer.#startOnce(options);
      } catch (error) {
        if (attempt >= 3 || !/address already in use/.test(String(error))) throw error;
      }
    }
  }

  static async #startOnce(options: StartOptions): Promise<TestApiServer> {
    const server = new TestApiServer(options.release ?? 'current');
    for (const user of options.users ?? []) server.#users.set(user, randomBytes(16).toString('hex'));
    try {
      await server.#startEtcd();
      await server.#startApiServer();
      await server.#checkVersion();
      if (options.crds !== false) await server.loadCrds(options.notebooks ? [notebookCrd()] : []);
      return server;
    } catch (error) {
      await server.stop();
      throw error;
    }
  }

  /** A client with the admin token (through the kubeconfig the server wrote). */
  get client(): KubeClient {
    return (this.#client ??= KubeClient.fromKubeconfig(this.kubeconfig));
  }

  async #startEtcd(): Promise<void> {
    this.#etcdPort = await freePort();
    this.#peerPort = await freePort();
    const peer = `http://127.0.0.1:${this.#peerPort}`;
    const client = `http://127.0.0.1:${this.#etcdPort}`;
    this.#etcd = this.#spawn('etcd', etcdBin(), [
      '--name=default',
      `--data-dir=${join(this.dir, 'etcd')}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=default=${peer}`,
      '--log-level=error',
    ]);
  }

  async #startApiServer(): Promise<void> {
    this.#port = await freePort();
    const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(this.dir, 'sa.pub'), keys.publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(join(this.dir, 'sa.key'), keys.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const others = [...this.#users].map(
      ([user, token], i) => `${token},${user},uid-${i},system:authenticated\n`,
    );
    writeFileSync(
      join(this.dir, 'tokens.csv'),
      [`${this.token},admin,admin,system:masters\n`, ...others].join(''),
    );
    this.#apiserver = this.#spawn('kube-apiserver', apiserverBin(this.release), this.#apiServerArgs());
    writeFileSync(
      this.kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'test',
            cluster: { server: `https://127.0.0.1:${this.#port}`, 'insecure-skip-tls-verify': true },
          },
        ],
        users: [{ name: 'admin', user: { token: this.token } }],
        contexts: [{ name: 'test', context: { cluster: 'test', user: 'admin' } }],
        'current-context': 'test',
      }),
    );
    await this.#waitReady();
  }

  #kubeconfigText(token: string): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'test',
          cluster: { server: `https://127.0.0.1:${this.#port}`, 'insecure-skip-tls-verify': true },
        },
      ],
      users: [{ name: 'user', user: { token } }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'user' } }],
      'current-context': 'test',
    });
  }

  /** A kubeconfig file for one of the `users` the server was started with. */
  kubeconfigFor(user: string): string {
    const token = this.#users.get(user);
    if (!token) throw new Error(`no user ${user}: start the server with it`);
    const file = join(this.dir, `kubeconfig-${this.#users.size}-${user.replace(/[^a-z0-9-]/gi, '_')}`);
    writeFileSync(file, this.#kubeconfigText(token));
    return file;
  }

  #apiServerArgs(): string[] {
    return [
      `--etcd-servers=http://127.0.0.1:${this.#etcdPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${this.#port}`,
      `--cert-dir=${join(this.dir, 'certs')}`,
      `--service-account-key-file=${join(this.dir, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(this.dir, 'sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--token-auth-file=${join(this.dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=10.96.0.0/16',
      // No controller-manager runs: nothing would create the default ServiceAccount pods need.
      '--disable-admission-plugins=ServiceAccount',
      '--v=0',
    ];
  }

  #spawn(name: string, bin: string, args: string[]): ChildProcess {
    const out = openSync(join(this.dir, `${name}.out`), 'a');
    const child = spawn(bin, args, { stdio: ['ignore', out, out] });
    child.on('error', () => undefined);
    return child;
  }

  async #waitReady(timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      if (this.#apiserver?.exitCode !== null && this.#apiserver?.exitCode !== undefined)
        throw new Error(`kube-apiserver exited: ${this.#tail('kube-apiserver.out')}`);
      try {
        await this.client.request('GET', '/readyz');
        return;
      } catch (error) {
        last = (error as Error).message;
      }
      await sleep(250);
    }
    throw new Error(`kube-apiserver not ready after ${timeoutMs} ms: ${last}`);
  }

  /** Reads the server's version and checks it is the release asked for (a stale or wrong binary fails). */
  async #checkVersion(): Promise<void> {
    const got = await this.client.request<{ gitVersion?: string }>('GET', '/version');
    this.version = got.gitVersion ?? '';
    const wanted = kubeVersion(this.release);
    if (this.version !== wanted)
      throw new Error(`kube-apiserver reports ${this.version || 'no version'}, expected ${wanted}`);
  }

  #tail(file: string): string {
    try {
      return readFileSync(join(this.dir, file), 'utf8').slice(-2000);
    } catch {
      return '(no output)';
    }
  }

  /**
   * Loads the real CRDs (and `extra`) as shipped, CEL validation rules included, and waits until each is
   * established and served.
   */
  async loadCrds(extra: readonly KubeObject[] = []): Promise<void> {
    const shared = resolve(projectRoot, '../shared/crds');
    const dir = existsSync(shared) ? shared : join(projectRoot, 'test/data/crds');
    const files = [
      'istio-crd-all.yaml',
      'gateway-api-v1.6.1-standard.yaml',
      'kserve-inferenceservices.yaml',
      'kubeflow-profiles.yaml',
    ];
    const crds = files.flatMap((f) =>
      parseAllDocuments(readFileSync(join(dir, f), 'utf8'))
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => o?.kind === 'CustomResourceDefinition'),
    );
    crds.push(...extra);
    const path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
    await Promise.all(crds.map((crd) => this.client.request('POST', path, { body: crd })));
    for (const crd of crds) {
      for (;;) {
        const got = await this.client.request<{
          status?: { conditions?: { type: string; status: string }[] };
        }>('GET', `${path}/${crd.metadata.name}`);
        if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
        await sleep(100);
      }
    }
    // Discovery serves an established CRD's resources a moment later.
    for (const crd of crds) {
      const spec = crd['spec'] as {
        group: string;
        names: { plural: string };
        versions: { name: string; served: boolean }[];
      };
      const version = spec.versions.find((v) => v.served)?.name;
      if (!version) continue;
      for (;;) {
        const list = await this.client
          .request<{ resources: { name: string }[] }>('GET', `/apis/${spec.group}/${version}`)
          .catch(() => ({ resources: [] }));
        if (list.resources.some((r) => r.name === spec.names.plural)) break;
        await sleep(100);
      }
    }
    this.client.rediscover();
  }

  /**
   * Creates objects as `kubectl create` would, cluster-scoped ones first; an object's `status` is then
   * written to its status subresource, as its controller would have.
   */
  async create(objects: readonly KubeObject[]): Promise<void> {
    const resources = await this.client.resources();
    const resourceOf = (o: KubeObject): Resource => {
      const group = o.apiVersion.includes('/') ? (o.apiVersion.split('/')[0] ?? '') : '';
      const found = resources.get(`${group}/${o.kind}`);
      if (!found) throw new Error(`the server does not serve ${o.apiVersion} ${o.kind}`);
      // At the version the object names (the server converts), not the preferred one.
      return { ...found, version: o.apiVersion.split('/').at(-1) ?? found.version };
    };
    const first = objects.filter((o) => !resourceOf(o).namespaced);
    const rest = objects.filter((o) => resourceOf(o).namespaced);
    for (const batch of [first, rest])
      await Promise.all(
        batch.map(async (o) => {
          const resource = resourceOf(o);
          const collection = KubeClient.collectionPath(resource, o.metadata.namespace);
          await this.client.request('POST', collection, { body: o });
          if (o['status'] !== undefined && resource.group !== '')
            await this.client.request('PATCH', `${collection}/${o.metadata.name}/status`, {
              body: { status: o['status'] },
              contentType: 'application/merge-patch+json',
            });
        }),
      );
  }

  /**
   * Stops kube-apiserver and starts it again on the same port (etcd, and so every object, stays): for
   * tests of clients that must ride out an API server restart. Resolves once it is ready again.
   */
  async restartApiServer(downMs = 1000): Promise<void> {
    await this.stopApiServer();
    await sleep(downMs);
    await this.startApiServer();
  }

  /** Stops kube-apiserver (etcd stays); its port then refuses connections. */
  async stopApiServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.#apiserver;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill(signal);
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }

  /** Starts kube-apiserver again on its port, after `stopApiServer`; resolves once it is ready. */
  async startApiServer(): Promise<void> {
    this.#apiserver = this.#spawn('kube-apiserver', apiserverBin(this.release), this.#apiServerArgs());
    await this.#waitReady();
  }

  /** The API server's loopback port (for a proxy in front of it). */
  get port(): number {
    return this.#port;
  }

  /** A kubeconfig for the admin user that reaches the server at another loopback port (a proxy's). */
  kubeconfigVia(port: number): string {
    const file = join(this.dir, `kubeconfig-via-${port}`);
    writeFileSync(
      file,
      this.#kubeconfigText(this.token).replace(`127.0.0.1:${this.#port}`, `127.0.0.1:${port}`),
    );
    return file;
  }

  /** Stops both processes and removes the data dir. */
  async stop(): Promise<void> {
    for (const child of [this.#apiserver, this.#etcd]) {
      if (!child || child.exitCode !== null) continue;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

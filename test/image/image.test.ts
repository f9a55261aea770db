/**
 * The controller's image as a container runtime runs it: the OCI layout that `npm run image`
 * (scripts/build-image.sh) writes is unpacked with umoci, its root filesystem mounted read-only (as
 * deploy/'s `readOnlyRootFilesystem` asks), with /proc and /dev, and the image's entrypoint run in it as
 * the image's user. `kfmesh --version`, then `kfmesh controller` with the in-cluster configuration a
 * Pod gets (the service account's token and CA mounted where Kubernetes mounts them, the
 * KUBERNETES_SERVICE_* variables) against a real API server: it syncs the example platform.
 *
 * Needs root (mount namespaces, chroot), umoci and unshare, and the image built; skipped with the
 * reason where one is missing, and failing under CI=true, where .ci/run builds the image first.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../src/model/object.ts';
import { runKfmesh } from '../cli-process.ts';
import { eventually } from '../controller-process.ts';
import { projectRoot } from '../conformance/cases.ts';
import { apiServerMissing, onPath, partTestOptions, TestApiServer } from '../kube-apiserver.ts';

const version = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string })
  .version;
const layout = resolve(projectRoot, process.env['KFMESH_IMAGE_DIR'] ?? 'build/image', 'oci');

/** Why the image can't be run here, or undefined. */
function imageMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (mount namespaces and chroot)';
  const tools = ['umoci', 'unshare', 'chroot', 'mount'].filter((t) => !onPath(t));
  if (tools.length > 0) return `needs ${tools.join(', ')} (apt-get install umoci util-linux coreutils)`;
  if (!existsSync(join(layout, 'index.json')))
    return `no image at ${layout}: build it with \`npm run image\` (as .ci/run does)`;
  const built = readFileSync(join(layout, '..', 'dist.sha256'), 'utf8').trim();
  // The same digest of the tree's dist/ that the build script recorded of the image's.
  const now = execFileSync('bash', ['scripts/build-image.sh', '--dist-digest'], {
    cwd: projectRoot,
    encoding: 'utf8',
  }).trim();
  if (built !== now) return `the image at ${layout} holds an older build of dist/: run \`npm run image\``;
  return apiServerMissing();
}

interface ImageConfig {
  config: {
    User?: string;
    Entrypoint?: string[];
    Cmd?: string[];
    Env?: string[];
    Labels?: Record<string, string>;
  };
}

/** The image configuration of the layout's tag, as a runtime reads it (index → manifest → config). */
function imageConfig(tag: string): ImageConfig {
  const blob = (digest: string) =>
    JSON.parse(readFileSync(join(layout, 'blobs', ...digest.split(':')), 'utf8')) as Record<string, unknown>;
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (!entry) throw new Error(`no tag ${tag} in ${layout}`);
  const manifest = blob(entry.digest) as { config: { digest: string } };
  return blob(manifest.config.digest) as unknown as ImageConfig;
}

/**
 * `target` as a path in `root`, following symbolic links inside `root` as a runtime does (Debian's
 * /var/run is a link to /run, and followed from outside it would lead to the host's /run).
 */
function inRoot(root: string, target: string, depth = 0): string {
  if (depth > 40) throw new Error(`too many symbolic links in ${target}`);
  let at = '';
  const parts = target.split('/').filter(Boolean);
  for (const [i, part] of parts.entries()) {
    const path = join(root, at, part);
    if (existsSync(path) && lstatSync(path).isSymbolicLink()) {
      const link = readlinkSync(path);
      const rest = parts.slice(i + 1).join('/');
      return inRoot(root, link.startsWith('/') ? `${link}/${rest}` : `${at}/${link}/${rest}`, depth + 1);
    }
    at = `${at}/${part}`;
  }
  return at || '/';
}

/** The controller container's arguments in deploy/deployment.yaml. */
function deploymentArgs(): string[] {
  const deployment = parse(readFileSync(join(projectRoot, 'deploy', 'deployment.yaml'), 'utf8')) as {
    spec: { template: { spec: { containers: { name: string; args: string[] }[] } } };
  };
  const container = deployment.spec.template.spec.containers.find((c) => c.name === 'controller');
  if (!container) throw new Error('deploy/deployment.yaml has no container "controller"');
  return container.args;
}

interface Mount {
  source: string;
  target: string;
}

/**
 * Runs the image's entrypoint with `args` in a mount namespace of its own: the root filesystem bound
 * read-only, /proc and /dev, the `mounts` (read-only), then chroot as the image's user.
 */
function runInImage(
  rootfs: string,
  image: ImageConfig,
  args: readonly string[],
  options: { mounts?: Mount[]; env?: Record<string, string> } = {},
): ChildProcess {
  const user = image.config.User ?? '0';
  const lines = [
    'set -e',
    'r="$1"; shift',
    'mount --bind "$r" "$r"',
    'mount -t proc proc "$r/proc"',
    'mount --rbind /dev "$r/dev"',
    ...(options.mounts ?? []).flatMap((m) => {
      const target = inRoot(rootfs, m.target);
      return [
        `mkdir -p "$r${target}"`,
        `mount --bind '${m.source}' "$r${target}"`,
        `mount -o remount,bind,ro "$r${target}"`,
      ];
    }),
    'mount -o remount,bind,ro "$r"',
    `exec chroot --userspec=${user.includes(':') ? user : `${user}:${user}`} "$r" "$@"`,
  ];
  const env = Object.fromEntries((image.config.Env ?? []).map((e) => e.split(/=(.*)/s).slice(0, 2)));
  return spawn(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      lines.join('\n'),
      'sh',
      rootfs,
      ...(image.config.Entrypoint ?? []),
      ...args,
    ],
    { env: { ...env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

/** Output and exit code of a run to its end. */
function finished(child: ChildProcess): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let [stdout, stderr] = ['', ''];
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((r) => child.once('exit', (code) => r({ code, stdout, stderr })));
}

describe(
  'the controller image, run as a container runtime runs it',
  partTestOptions('the image test', imageMissing()),
  () => {
    let dir: string;
    let rootfs: string;
    let image: ImageConfig;

    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'kfmesh-image-'));
      execFileSync('umoci', ['unpack', '--image', `${layout}:${version}`, join(dir, 'bundle')], {
        stdio: 'ignore',
      });
      rootfs = join(dir, 'bundle', 'rootfs');
      image = imageConfig(version);
    });

    after(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('is tagged with the package version, runs as a numbered non-root user, labelled', () => {
      assert.match(image.config.User ?? '', /^[1-9]\d*(:\d+)?$/);
      assert.deepEqual(image.config.Entrypoint, ['/usr/bin/node', '/opt/kfmesh/dist/src/cli/main.js']);
      const labels = image.config.Labels ?? {};
      assert.equal(labels['org.opencontainers.image.version'], version);
      assert.equal(labels['org.opencontainers.image.licenses'], 'Apache-2.0');
      assert.ok(labels['org.opencontainers.image.source']);
      const sbom = JSON.parse(readFileSync(join(layout, '..', 'sbom.cdx.json'), 'utf8')) as {
        bomFormat: string;
        components: { name: string; purl?: string }[];
      };
      assert.equal(sbom.bomFormat, 'CycloneDX');
      const purls = sbom.components.map((c) => c.purl ?? '');
      assert.ok(purls.some((p) => p.startsWith('pkg:npm/%40kubernetes/client-node@')));
      assert.ok(purls.some((p) => p.startsWith('pkg:deb/debian/nodejs@')));
    });

    test('kfmesh --version answers from inside the image; its root filesystem is read-only', async () => {
      const run = await finished(runInImage(rootfs, image, ['--version']));
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout.trim(), version);
      const write = await finished(
        runInImage(rootfs, { config: { ...image.config, Entrypoint: ['/usr/bin/node'] } }, [
          '-e',
          'try { require("fs").writeFileSync("/opt/kfmesh/x", "") } catch (e) { console.log(e.code) }',
        ]),
      );
      assert.equal(write.stdout.trim(), 'EROFS', write.stderr);
    });

    test('kfmesh controller syncs the example platform from inside the image, in-cluster', async () => {
      const server = await TestApiServer.start();
      let controller: ChildProcess | undefined;
      let log = '';
      try {
        const example = parseAllDocuments(runKfmesh(['example']).stdout).map((d) => d.toJS() as KubeObject);
        const platform = example.filter((o) =>
          ['Namespace', 'ConfigMap', 'InferenceService'].includes(o.kind),
        );
        await server.create([
          ...platform,
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kfmesh-system' } },
        ]);
        // What the kubelet mounts for a Pod's service account, and the variables it sets.
        const account = mkdtempSync(join(dir, 'serviceaccount-'));
        writeFileSync(join(account, 'token'), server.token);
        writeFileSync(join(account, 'namespace'), 'kfmesh-system');
        copyFileSync(join(server.dir, 'certs', 'apiserver.crt'), join(account, 'ca.crt'));
        // As the kubelet leaves them: readable by the Pod's user.
        chmodSync(account, 0o755);
        for (const file of ['token', 'namespace', 'ca.crt']) chmodSync(join(account, file), 0o644);
        // The arguments deploy/ gives the container, its servers on loopback ports of their own.
        const args = deploymentArgs().map((a) =>
          a.replace(/^(--(?:metrics|health-probe)-bind-address)=.*$/, '$1=127.0.0.1:0'),
        );
        controller = runInImage(rootfs, image, args, {
          mounts: [{ source: account, target: '/var/run/secrets/kubernetes.io/serviceaccount' }],
          env: {
            KUBERNETES_SERVICE_HOST: '127.0.0.1',
            KUBERNETES_SERVICE_PORT: String(server.port),
            POD_NAMESPACE: 'kfmesh-system',
            POD_NAME: 'kfmesh-controller-0',
          },
        });
        controller.stderr?.on('data', (c: Buffer) => (log += c.toString()));
        controller.stdout?.resume();
        const models = platform.filter((o) => o.kind === 'InferenceService');
        await eventually(
          'a MeshReady condition on every InferenceService',
          async () => {
            for (const m of models) {
              const isvc = await server.client.request<{ status?: { conditions?: { type: string }[] } }>(
                'GET',
                `/apis/serving.kserve.io/v1beta1/namespaces/${m.metadata.namespace}/inferenceservices/${m.metadata.name}`,
              );
              if (!isvc.status?.conditions?.some((c) => c.type === 'MeshReady')) return undefined;
            }
            return true;
          },
          { context: () => log },
        );
        const vs = await server.client.request<KubeObject & { spec: { gateways?: string[] } }>(
          'GET',
          '/apis/networking.istio.io/v1/namespaces/kubeflow-user-example-com/virtualservices/sklearn-iris',
        );
        assert.ok(vs.spec.gateways?.includes('mesh'), JSON.stringify(vs.spec));
        assert.equal(vs.metadata.labels?.['app.kubernetes.io/managed-by'], 'kfmesh');
        // The same process all along (unshare, sh and chroot each exec the next): node, as the image's user.
        const status = readFileSync(`/proc/${controller.pid}/status`, 'utf8');
        assert.match(status, /^Name:\s+node$/m);
        assert.equal(status.match(/^Uid:\s+(\d+)/m)?.[1], (image.config.User ?? '').split(':')[0]);
        const probes = [...log.matchAll(/"address":"([^"]+)".*"msg":"serving"/g)].map((m) => m[1]);
        assert.equal(probes.length, 2, log);
        const ready = await fetch(`http://${probes[1]}/readyz`);
        assert.equal(ready.status, 200);
        const exited = finished(controller);
        controller.kill('SIGTERM');
        assert.equal((await exited).code, 0, log);
      } finally {
        if (controller && controller.exitCode === null) controller.kill('SIGKILL');
        await server.stop();
      }
    });
  },
);

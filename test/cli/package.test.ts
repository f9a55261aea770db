/**
 * The npm package as a user installs it: `npm pack` of the built tree, then `npm install -g` of the
 * tarball into an empty prefix (dependencies from the registry, as any install), and the installed
 * `kfmesh` command run from there: --version, and a whole command that reads its bundled schemas. And the
 * first hour in the project itself: its dependencies install on this Node without a warning, and
 * `npx kfmesh` runs the built command without building again.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { projectRoot } from '../conformance/cases.ts';

const version = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string })
  .version;

describe('the npm package', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-pack-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('packs dist/ (no tests, no sources), installs into an empty prefix, and its kfmesh runs', () => {
    // The tree is built already (npm test builds first); --ignore-scripts keeps `prepare` from building again.
    const packed = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
        cwd: projectRoot,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    ) as { filename: string; files: { path: string }[] }[];
    const tarball = packed[0];
    assert.ok(tarball);
    assert.equal(tarball.filename, `kfmesh-${version}.tgz`);
    const files = tarball.files.map((f) => f.path);
    for (const needed of [
      'dist/src/cli/main.js',
      'dist/src/load/schemas.json',
      'dist/ui/index.html',
      'LICENSE',
      'README.md',
      'package.json',
    ])
      assert.ok(files.includes(needed), `${needed} is not in the package`);
    assert.deepEqual(
      files.filter((f) => f.startsWith('dist/test/') || f.startsWith('src/') || f.endsWith('.ts')),
      [],
    );

    const prefix = join(dir, 'prefix');
    const install = spawnSync(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        join(dir, tarball.filename),
      ],
      { encoding: 'utf8', timeout: 300_000 },
    );
    assert.equal(install.status, 0, install.stderr);
    const bin = join(prefix, 'bin', 'kfmesh');
    assert.ok(existsSync(bin), `no ${bin}`);

    // Run from elsewhere, with nothing of the project's tree on the way.
    const run = (args: string[]) =>
      spawnSync(bin, args, {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env['PATH'] ?? '', HOME: dir },
      });
    const shown = run(['--version']);
    assert.equal(shown.status, 0, shown.stderr);
    assert.equal(shown.stdout.trim(), version);
    const example = run(['example']);
    assert.equal(example.status, 0, example.stderr);
    writeFileSync(join(dir, 'platform.yaml'), example.stdout);
    const analyzed = run(['analyze', '-o', 'json', 'platform.yaml']);
    assert.ok(analyzed.status === 0 || analyzed.status === 1, analyzed.stderr);
    assert.ok((JSON.parse(analyzed.stdout) as { findings: unknown[] }).findings.length > 0);
    // A field of the wrong type is found through the packaged schemas: exit 2 with its place.
    writeFileSync(
      join(dir, 'bad.yaml'),
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: models\nspec:\n  ports: 80\n',
    );
    const bad = run(['analyze', 'bad.yaml']);
    assert.equal(bad.status, 2, bad.stdout);
    assert.match(bad.stderr, /bad\.yaml:7/);
  });

  test("the project's dependencies install on this Node version without a warning", () => {
    const project = join(dir, 'install');
    mkdirSync(project);
    const manifest = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
      scripts?: unknown;
    };
    delete manifest.scripts; // the project's own scripts (prepare builds) are not the dependencies'
    writeFileSync(join(project, 'package.json'), JSON.stringify(manifest));
    writeFileSync(join(project, 'package-lock.json'), readFileSync(join(projectRoot, 'package-lock.json')));
    const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 300_000,
    });
    assert.equal(install.status, 0, install.stderr);
    assert.doesNotMatch(`${install.stdout}${install.stderr}`, /warn/i);
  });

  test('npx kfmesh in the built project runs the command, without building it again', () => {
    const stamp = join(projectRoot, 'dist/.build-stamp');
    assert.ok(existsSync(stamp), 'npm run build writes dist/.build-stamp');
    const before = statSync(stamp).mtimeMs;
    const run = spawnSync('npx', ['--yes', 'kfmesh', '--version'], {
      cwd: projectRoot,
      encoding: 'utf8',
      env: { ...process.env, npm_config_cache: join(dir, 'npm-cache') },
      timeout: 300_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout.trim(), version);
    assert.equal(statSync(stamp).mtimeMs, before, 'the build was not run again');
  });
});

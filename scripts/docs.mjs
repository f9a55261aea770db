// Writes the generated documentation from the built code: docs/analyzers.md from each rule's example in
// examples/rules/, and the console's screenshots in docs/images: `npm run docs`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { analyzerCatalog } from '../dist/src/analyze/catalog.js';

const folder = new URL('../examples/rules/', import.meta.url);
const examples = new Map(
  readdirSync(folder)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => [
      f.replace(/\.yaml$/, ''),
      { file: `examples/rules/${f}`, text: readFileSync(new URL(f, folder), 'utf8') },
    ]),
);
writeFileSync(new URL('../docs/analyzers.md', import.meta.url), analyzerCatalog(examples));
console.log('wrote docs/analyzers.md');

// The console's screenshots in docs/images (README and docs/cli.md show them): taken by the browser tests
// in real Chromium, which assert what each view shows before it is shot. Without Chromium they are left.
const chromium = process.env['KFMESH_CHROMIUM'] ?? '/usr/bin/chromium';
if (!existsSync(chromium)) console.log(`left docs/images as they are: no Chromium at ${chromium}`);
else {
  const images = fileURLToPath(new URL('../docs/images/', import.meta.url));
  const run = spawnSync(
    process.execPath,
    [
      '--test',
      'dist/test/e2e/console.test.js',
      'dist/test/e2e/console-observed.test.js',
      'dist/test/e2e/console-layout.test.js',
    ],
    { stdio: 'inherit', env: { ...process.env, KFMESH_SCREENSHOTS: images } },
  );
  if (run.status !== 0) {
    console.error('the browser tests failed: docs/images may be partly new');
    process.exitCode = 1;
  } else console.log('wrote docs/images from the browser tests');
}

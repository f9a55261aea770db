// Whether dist/ was built from the sources as they are: `write` records a digest of every input of
// `npm run build` (src, the tests' TypeScript, the build scripts, the CRD copies, the TypeScript and
// package settings; not what tests write, such as test/data) in
// dist/.build-stamp; `check` exits 0 when the digest still matches, else 1. `npm install` (prepare) and
// the first `npx kfmesh` build only when it does not, so a call on an unchanged clone starts at once.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const inputs = [
  'src',
  'test',
  'scripts',
  'test/data/crds',
  'tsconfig.json',
  'tsconfig.ui.json',
  'package.json',
  'package-lock.json',
];

/** Whether a file is read by the build: every file of src and test/data/crds, scripts' and the tests' code. */
function built(file) {
  if (file.startsWith('src/') || file.startsWith('test/data/crds/') || !file.includes('/')) return true;
  if (file.startsWith('test/data/')) return false;
  return file.endsWith('.ts') || file.endsWith('.mjs');
}
const stamp = 'dist/.build-stamp';

function files(path) {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((name) => files(join(path, name)));
}

function digest() {
  const hash = createHash('sha256');
  for (const file of [...new Set(inputs.flatMap(files))].filter(built).sort())
    hash.update(`${file}\0`).update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

const [command] = process.argv.slice(2);
if (command === 'write') writeFileSync(stamp, `${digest()}\n`);
else if (command === 'check')
  process.exitCode = existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest() ? 0 : 1;
else {
  console.error('usage: node scripts/build-stamp.mjs write|check');
  process.exitCode = 2;
}

// Bundles the console page (src/ui) into dist/ui: one script with cytoscape inside, the stylesheet and
// the page. Nothing is loaded from elsewhere at run time.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

const out = 'dist/ui';
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ['src/ui/main.ts'],
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: process.env.KFMESH_UI_DEBUG !== '1',
  sourcemap: true,
  legalComments: 'linked',
  outfile: `${out}/console.js`,
  logLevel: 'warning',
});
for (const file of ['index.html', 'console.css']) copyFileSync(`src/ui/${file}`, `${out}/${file}`);

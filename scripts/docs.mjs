// Writes the generated documentation (docs/analyzers.md) from the built code and each rule's example in
// examples/rules/: `npm run docs`.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

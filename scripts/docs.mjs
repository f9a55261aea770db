// Writes the generated documentation (docs/analyzers.md) from the built code: `npm run docs`.
import { writeFileSync } from 'node:fs';
import { analyzerCatalog } from '../dist/src/analyze/catalog.js';

writeFileSync(new URL('../docs/analyzers.md', import.meta.url), analyzerCatalog());
console.log('wrote docs/analyzers.md');

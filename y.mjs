import { readFileSync } from 'node:fs';
import { parseManifests, parseWithPositions } from './dist/src/load/parse.js';
import { splitDocuments } from './dist/src/load/documents.js';
const text = readFileSync('/work/shared/real/kubeflow-manifests/platform.yaml', 'utf8');
console.log('fast?', !!splitDocuments(text)?.every((d) => d.read));
const m = /^%|^\.\.\.(?:[ \t\r\n]|$)|(?:^|[\s[{,])[&*!]|<</m.exec(text); console.log(m && JSON.stringify(text.slice(m.index - 80, m.index + 40)));
for (const [n, f] of [['fast', parseManifests], ['full', parseWithPositions]]) { f({name:'x',text}); const s = performance.now(); f({ name: 'x', text }); console.log(n, (performance.now() - s).toFixed(0)); }

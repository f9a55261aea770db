import { stringify } from 'yaml';
import { writeYaml, yamlWriteOptions } from './dist/src/model/yaml-writer.js';
import { readFileSync } from 'node:fs';
import { parseManifests } from './dist/src/load/parse.js';
import { canonicalObject } from './dist/src/model/serialize.js';
const text = readFileSync('/work/shared/real/kubeflow-manifests/platform.yaml', 'utf8');
const objs = parseManifests({ name: 'x', text }).map((l) => canonicalObject(l.object));
let bad = 0;
for (const o of objs) { const a = writeYaml(o), b = stringify(o, yamlWriteOptions); if (a !== b) { bad++; if (bad < 3) { const i = [...a].findIndex((c, j) => c !== b[j]); console.log(JSON.stringify(a.slice(i - 100, i + 60)), '\n', JSON.stringify(b.slice(i - 100, i + 60))); } } }
console.log('bad', bad, 'of', objs.length);
for (const [n, f] of [['writer', writeYaml], ['library', (o) => stringify(o, yamlWriteOptions)]]) { objs.map(f); const s = performance.now(); objs.map(f); console.log(n, (performance.now() - s).toFixed(0)); }

/**
 * Import cycles between the files of src/, type-only imports included (ESLint's no-cycle skips those,
 * and a cycle of types still ties the files' designs together). `npm run lint` runs it; it prints each
 * cycle and exits 1 when there is one. test/lint/layers.test.ts checks it finds them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The relative imports and re-exports of each .ts file under `dir`, as paths relative to `root`. */
export function importGraph(root, dir = 'src') {
  const graph = new Map();
  const walk = (folder) => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts'))
        graph.set(path, importsOf(path, readFileSync(join(root, path), 'utf8')));
    }
  };
  walk(dir);
  return graph;
}

/** The relative modules a file imports or re-exports from, types included. */
export function importsOf(path, text) {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false);
  return file.statements.flatMap((statement) => {
    const from =
      (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) && statement.moduleSpecifier;
    if (!from || !ts.isStringLiteral(from) || !from.text.startsWith('.')) return [];
    return [relative('.', join(dirname(path), from.text))];
  });
}

/** The cycles of a graph: its strongly connected components of more than one file (Tarjan), sorted. */
export function cyclesOf(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const cycles = cyclesOf(importGraph(root));
  for (const cycle of cycles) console.error(`import cycle: ${cycle.join(' ↔ ')}`);
  process.exitCode = cycles.length > 0 ? 1 : 0;
}

/**
 * docs/analyzers.md, written from the rule registry: every rule's code, name, severity and what it finds.
 * `npm run docs` writes the file; a test fails when the file and the registry disagree.
 */
import { rules } from './analyze.ts';

/** The Markdown of docs/analyzers.md. */
export function analyzerCatalog(): string {
  const lines = [
    '# Analyzer rules',
    '',
    '<!-- Written by `npm run docs` from src/analyze/analyze.ts; edit the rules, not this file. -->',
    '',
    '`kfmesh analyze` runs these rules. Each has a stable code; findings give the object, the field, the file',
    'position when the input came from a file, and a fix (a JSON patch where the fix is mechanical).',
    '`--fail-on` sets the severity at which the command exits 1.',
    '',
    '| code | name | severity | finds |',
    '|---|---|---|---|',
    ...rules.map(
      (r) => `| ${r.code} | \`${r.name}\` | ${r.severity} | ${r.description.replaceAll('|', '\\|')} |`,
    ),
    '',
    'Each rule lives in `src/analyze/rules/<code>-<name>.ts` with its tests in `test/unit/analyze.test.ts`.',
    '',
  ];
  return lines.join('\n');
}

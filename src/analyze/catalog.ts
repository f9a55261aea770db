/**
 * docs/analyzers.md, written from the rule registry: every rule's code, name, severity, what it finds and
 * its `istioctl analyze` counterpart, then the Istio analyzers kfmesh leaves out and why.
 * `npm run docs` writes the file; a test fails when the file and the registry disagree.
 */
import { describeRef } from '../model/object.ts';
import { istioCodes, type Finding } from '../model/finding.ts';
import { parseManifests } from '../load/parse.ts';
import { Snapshot } from '../load/snapshot.ts';
import { analyze, rules } from './analyze.ts';
import { notApplicable, notYetCovered, type UncoveredAnalyzer } from './istio-analyzers.ts';

const cell = (text: string) => text.replaceAll('|', '\\|');

/** A rule's example: an input file (`examples/rules/<code>.yaml`) and its text. */
export interface RuleExample {
  file: string;
  text: string;
}

/** The findings a rule's example gives (of that rule only), as analyze prints them, without file positions. */
export function exampleFindings(code: string, example: RuleExample): Finding[] {
  const snapshot = new Snapshot(parseManifests({ name: example.file, text: example.text }));
  return analyze(snapshot).filter((f) => f.code === code);
}

const examplesShown = 2;

function exampleSection(examples: ReadonlyMap<string, RuleExample>): string[] {
  return rules.flatMap((rule) => {
    const example = examples.get(rule.code);
    if (!example) return [];
    const found = exampleFindings(rule.code, example);
    const shown = found
      .slice(0, examplesShown)
      .flatMap((f) => [
        `${f.severity} ${f.code}${f.istio ? ` (${istioCodes(f).join(', ')})` : ''}: ${describeRef(f.object)}${f.field ? ` ${f.field}` : ''}`,
        `  ${f.message}`,
        ...(f.fix ? [`  fix: ${f.fix}`] : []),
        ...(f.evidence ?? []).map((e) => `  trace: ${e}`),
      ]);
    const more = found.length > examplesShown ? [`(and ${found.length - examplesShown} more)`] : [];
    return [
      `### ${rule.code} \`${rule.name}\``,
      '',
      `\`${example.file}\`:`,
      '',
      '```yaml',
      example.text.trimEnd(),
      '```',
      '',
      '```',
      ...shown,
      ...more,
      '```',
      '',
    ];
  });
}

/** The Markdown of docs/analyzers.md, with each rule's example (read by the caller from examples/rules/). */
export function analyzerCatalog(examples: ReadonlyMap<string, RuleExample> = new Map()): string {
  const covered = new Map<string, Set<string>>();
  for (const rule of rules)
    for (const c of rule.istio ?? [])
      covered.set(c.analyzer, (covered.get(c.analyzer) ?? new Set()).add(rule.code));
  const uncovered = (list: readonly UncoveredAnalyzer[]) =>
    [...list]
      .sort((a, b) => (a.analyzer < b.analyzer ? -1 : 1))
      .map((a) => `| \`${a.analyzer}\` | ${cell(a.reason)} |`);
  const lines = [
    '# Analyzer rules',
    '',
    '<!-- Written by `npm run docs` from src/analyze/analyze.ts and src/analyze/istio-analyzers.ts; edit those, not this file. -->',
    '',
    '`kfmesh analyze` runs these rules. Each has a stable code; findings give the object, the field, the file',
    'position when the input came from a file, and a fix (a JSON patch where the fix is mechanical).',
    '`--fail-on` sets the severity at which the command exits 1. A rule runs only when the input holds an',
    'object of a kind it reads. Where `istioctl analyze` reports the same problem, the finding carries',
    'its message code (`istio` in `-o json`, a list of `{analyzer, code}`: two where two of its analyzers',
    'report the same object; a property in SARIF; in brackets in text).',
    '',
    '| code | name | severity | finds | reads | istioctl |',
    '|---|---|---|---|---|---|',
    ...rules.map(
      (r) =>
        `| ${r.code} | \`${r.name}\` | ${r.severity} | ${cell(r.description)} | ${r.reads.map((k) => k.replace(/^\//, '')).join(', ')} | ${(r.istio ?? []).map((c) => `${c.code} (\`${c.analyzer}\`)`).join(', ')} |`,
    ),
    '',
    'Each rule lives in `src/analyze/rules/<code>-<name>.ts` with its tests in `test/unit/analyze-*.test.ts`.',
    '',
    '## Examples',
    '',
    'One input per rule (`examples/rules/<code>.yaml`, run as `kfmesh analyze examples/rules/<code>.yaml`) and',
    'what the rule finds in it; a test checks that each still does.',
    '',
    ...exampleSection(examples),
    "## istioctl's analyzers",
    '',
    "Istio's own analyzer test data (`../shared/conformance/istio-analyzers`) runs in `npm test`: for every",
    'case of an analyzer kfmesh covers, kfmesh must report exactly the objects and message codes Istio does.',
    '',
    '### Covered',
    '',
    '| analyzer | rules |',
    '|---|---|',
    ...[...covered]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([analyzer, codes]) => `| \`${analyzer}\` | ${[...codes].join(', ')} |`),
    '',
    '### Not applicable to a Kubeflow/KServe platform',
    '',
    '| analyzer | why |',
    '|---|---|',
    ...uncovered(notApplicable),
    '',
    '### Not covered yet',
    '',
    ...(notYetCovered.length === 0
      ? ['None: every analyzer that applies to a Kubeflow platform has a rule.', '']
      : [
          'These apply to a Kubeflow platform; kfmesh has no rule for them yet, and their cases are reported as to do.',
          '',
          '| analyzer | what it checks |',
          '|---|---|',
          ...uncovered(notYetCovered),
          '',
        ]),
  ];
  return lines.join('\n');
}

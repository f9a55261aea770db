/**
 * docs/analyzers.md, written from the rule registry: every rule's code, name, severity, what it finds and
 * its `istioctl analyze` counterpart, then istioctl's analyzers (answered, left out and why, where kfmesh
 * parts from istioctl on purpose) and istioctl's conventions kfmesh follows.
 * `npm run docs` writes the file; a test fails when the file and the registry disagree.
 */
import { describeRef } from '../model/object.ts';
import { istioCodes, type Finding } from '../model/finding.ts';
import { parseManifests } from '../load/parse.ts';
import { Snapshot } from '../load/snapshot.ts';
import { analyze, rules } from './analyze.ts';
import { kialiAmbientValidations } from './kiali.ts';
import {
  divergences,
  istioctlNames,
  notApplicable,
  notYetCovered,
  outsideIstioctl,
  type UncoveredAnalyzer,
} from './istio-analyzers.ts';

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
    ...istioctlSection(),
  ];
  return lines.join('\n');
}

const sortedByAnalyzer = (list: readonly UncoveredAnalyzer[]) =>
  [...list]
    .sort((a, b) => (a.analyzer < b.analyzer ? -1 : 1))
    .map((a) => `| \`${a.analyzer}\` | ${cell(a.reason)} |`);

/** The sections on istioctl's analyzers and conventions. */
function istioctlSection(): string[] {
  const covered = new Map<string, Set<string>>();
  for (const rule of rules)
    for (const c of rule.istio ?? [])
      covered.set(c.analyzer, (covered.get(c.analyzer) ?? new Set()).add(rule.code));
  const name = (type: string) =>
    type === 'schemaValidation.CollectionValidationAnalyzer'
      ? '`schema.ValidationAnalyzer.<Kind>`'
      : `\`${istioctlNames[type] ?? type}\``;
  return [
    "## istioctl's analyzers",
    '',
    "Istio's own analyzers (`analyzers.AllCombined()` of the Istio that `oracle/istio` pins) judge these rules in",
    "`npm test` (test/oracle/analyzers.test.ts): on Istio's analyzer test data, the built-in example, the real",
    'Kubeflow platforms, what `migrate --to ambient` makes of them, and generated platforms, every message',
    'istioctl gives must be answered by a finding naming its analyzer and code on the same object, or be listed',
    'below with the reason, and every counterpart a finding names must be one istioctl gives.',
    "`npm run istio-analyzer-data` makes the same comparison over the whole of Istio's analyzer test data at",
    'the pinned version, read from the Go module cache (every case of its test table, and each file no case',
    "reads), and prints the counts. Istio's validation errors (IST0106) are judged on generated objects too",
    '(test/oracle/validation.test.ts).',
    '',
    '### Answered',
    '',
    "| analyzer (Go type) | istioctl's name (`--analyzer`) | rules |",
    '|---|---|---|',
    ...[...covered]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([analyzer, codes]) => `| \`${analyzer}\` | ${name(analyzer)} | ${[...codes].join(', ')} |`),
    '',
    ...outsideIstioctl.map((a) => `\`${a.analyzer}\`: ${a.reason}.`),
    '',
    '### Not applicable to a Kubeflow/KServe platform',
    '',
    '| analyzer | why |',
    '|---|---|',
    ...sortedByAnalyzer(notApplicable),
    '',
    '### Not covered yet',
    '',
    ...(notYetCovered.length === 0
      ? ['None: every analyzer that applies to a Kubeflow platform has a rule.', '']
      : [
          'These apply to a Kubeflow platform; kfmesh has no rule for them yet.',
          '',
          '| analyzer | what it checks |',
          '|---|---|',
          ...sortedByAnalyzer(notYetCovered),
          '',
        ]),
    '### Where kfmesh parts from istioctl on purpose',
    '',
    '| analyzer | code | why |',
    '|---|---|---|',
    ...divergences.map((d) => `| \`${d.analyzer}\` | ${d.code} | ${cell(d.reason)} |`),
    '',
    ...conventions,
    "## Kiali's ambient validations",
    '',
    "Kiali (its validations on the main branch of 2026-08-20) checks ambient configuration in a live cluster 21 ways; kfmesh's rules find these",
    'from the files, where they do:',
    '',
    '| Kiali | its message | kfmesh | how |',
    '|---|---|---|---|',
    ...kialiAmbientValidations.map(
      (k) => `| ${k.code} | ${cell(k.message)} | ${k.rules.join(', ') || '-'} | ${cell(k.note)} |`,
    ),
    '',
  ];
}

/** istioctl's conventions and how kfmesh spells them. */
const conventions = [
  "## istioctl's conventions",
  '',
  "- **Levels.** kfmesh's severities are istioctl's levels: `error` is Error, `warning` Warning, `info` Info.",
  "  `--fail-on` (istioctl's `--failure-threshold`, default `error`) sets the level at which the command exits",
  "  1, and also takes `never`; `--output-threshold` (default `info`, as istioctl 1.31's) the lowest level",
  '  printed. Both take either spelling (`Warning` or `warning`). As in istioctl, the exit code reads every',
  "  finding, not only the printed ones. A finding's level is kfmesh's rule's, which can differ from the",
  "  level of istioctl's message for the same object (KFM420 is an info where no port is refused today;",
  '  istioctl always warns).',
  "- **Codes.** A finding that istioctl also reports carries istioctl's analyzer and message code: `istio`",
  '  in `-o json` (a list of `{analyzer, code}`), a property in SARIF, in brackets in text.',
  '- **Suppressing findings.** An object annotated `galley.istio.io/analyze-suppress: <code>[,<code>...]`',
  '  (or `*`) gets no findings of those codes; `-S`/`--suppress <code>=<resource>` (repeatable) drops a code',
  "  on the resources named. A code is kfmesh's (`KFM420`) or istioctl's (`IST0133`, which drops every",
  '  finding carrying it). The resource is `<Kind> <namespace>/<name>` (`<Kind> <name>` for cluster-scoped',
  "  objects), which is what istioctl 1.31 compares, or `<Kind> <name>.<namespace>`, the form istioctl's",
  '  help shows (which istioctl 1.31 itself does not match); `*` matches any run of characters. The oracle',
  '  test suppresses codes by flag, glob and annotation on both sides and checks both drop the same messages.',
  '- **A chosen part of the rules.** `--analyzer <name>` (repeatable) runs only the rule with that code',
  '  (`KFM420`) or name (`http-deny-refuses-tcp`), or the rules answering an istioctl analyzer, by',
  "  istioctl's name (the table above; `schema.ValidationAnalyzer.<Kind>` keeps that kind's findings) or its",
  '  Go type; of those rules, only the findings carrying that analyzer are printed. A name that is neither',
  '  is refused (exit 2).',
  '',
];

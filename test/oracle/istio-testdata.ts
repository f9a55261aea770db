/**
 * `npm run istio-analyzer-data`: kfmesh analyze judged by istioctl's analyzers on the whole of Istio's
 * analyzer test data at the pinned version, read from the Go module cache rather than from a copy: every
 * case of the test table in pkg/config/analysis/analyzers/analyzers_test.go (read with Go's parser by the
 * oracle's `analyzer-cases`), then each file of its testdata that no case reads, alone. Each input is
 * compared as the differential test compares the published cases (both ways, by analyzer, code and
 * object); the totals, the differences by analyzer and code, and the inputs kfmesh refuses are printed.
 * It fails only when the oracle cannot run; the differences are the measurement.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { projectRoot } from '../conformance/cases.ts';
import { judge, type AnalysisComparison } from './istio-analyze.ts';
import { oracleBinary } from './istio-oracle.ts';

interface GridCase {
  name: string;
  analyzer: string;
  inputs: string[];
  meshConfig: string | null;
  meshNetworks: string | null;
  skipAll: boolean;
  expect: unknown[];
}

function moduleDir(): string {
  const run = spawnSync('go', ['list', '-m', '-f', '{{.Dir}}', 'istio.io/istio'], {
    cwd: join(projectRoot, 'oracle/istio'),
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
  });
  if (run.status !== 0 || !run.stdout.trim())
    throw new Error(`go list of istio.io/istio failed: ${run.stderr}`);
  return run.stdout.trim();
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((f) => (statSync(join(dir, f)).isDirectory() ? filesUnder(join(dir, f)) : [join(dir, f)]));
}

const oracle = oracleBinary();
if (!oracle.path) throw new Error(`the oracle cannot be built: ${oracle.missing}`);
const istio = moduleDir();
const testdata = join(istio, 'pkg/config/analysis/analyzers/testdata');
const listed = spawnSync(oracle.path, ['analyzer-cases', istio], { encoding: 'utf8', maxBuffer: 64 << 20 });
if (listed.status !== 0) throw new Error(`oracle analyzer-cases failed: ${listed.stderr}`);
const grid = JSON.parse(listed.stdout) as GridCase[];
const read = new Set(
  grid.flatMap((c) => [
    ...c.inputs,
    ...(c.meshConfig ? [c.meshConfig] : []),
    ...(c.meshNetworks ? [c.meshNetworks] : []),
  ]),
);
const alone = filesUnder(testdata)
  .map((f) => relative(testdata, f))
  .filter((f) => !read.has(f));

const inputs = [
  ...grid.map((c) => ({
    label: `case ${c.name} (${c.analyzer})`,
    paths: c.inputs.map((f) => join(testdata, f)),
    meshConfig: c.meshConfig ? join(testdata, c.meshConfig) : undefined,
  })),
  ...alone.map((f) => ({ label: `file ${f}`, paths: [join(testdata, f)], meshConfig: undefined })),
];

const results: AnalysisComparison[] = [];
const refused: string[] = [];
for (const input of inputs) {
  try {
    results.push(await judge(`${input.label}: `, input.paths, input.meshConfig));
  } catch (error) {
    refused.push(`${input.label}: ${(error as Error).message.split('\n')[0]}`);
  }
}

const sum = (f: (r: AnalysisComparison) => number) => results.reduce((n, r) => n + f(r), 0);
const missing = results.flatMap((r) => r.missing);
const extra = results.flatMap((r) => r.extra);
console.log(`Istio's analyzer test data at ${relative(join(istio, '..'), istio)}`);
console.log(
  `${grid.length} cases of its test table (${grid.reduce((n, c) => n + c.expect.length, 0)} expected messages) and ${alone.length} files no case reads`,
);
console.log(
  `${results.length} inputs compared, ${refused.length} refused by kfmesh's loader; istioctl messages: ` +
    `${sum((r) => r.agreed)} answered, ${sum((r) => r.explained)} of analyzers or codes that do not apply, ` +
    `${sum((r) => r.diverged.length)} where kfmesh parts on purpose, ${missing.length} missing, ${extra.length} extra`,
);
const byCode = (list: string[]) => {
  const counts = new Map<string, number>();
  for (const d of list) {
    // "<label>: <analyzer> <code> <kind> <object>"
    const [analyzer, code] = (d.split(': ').pop() ?? '').split(' ');
    counts.set(`${analyzer} ${code}`, (counts.get(`${analyzer} ${code}`) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) => `  ${n} ${k}`);
};
console.log(['missing, by analyzer and code:', ...byCode(missing)].join('\n'));
console.log(['extra, by analyzer and code:', ...byCode(extra)].join('\n'));
if (process.env['KFMESH_DETAIL'])
  for (const r of results)
    for (const d of [...r.missing, ...r.extra]) console.log(`  ${d} (${r.texts.get(d) ?? ''})`);
if (refused.length > 0) console.log(['refused:', ...refused.map((r) => `  ${r}`)].join('\n'));

/**
 * The regex engine, chosen by measurement (mesh/regex.ts): re2js (pure JavaScript, the one kfmesh uses)
 * beside re2-wasm (RE2 compiled to WebAssembly; present as a dependency of @kubernetes-models) and
 * JavaScript's own RegExp (backtracking; for scale, on the patterns it can compile). Per pattern: compile
 * time; per match: time on KServe's and Kubeflow's patterns; and the backtracking pattern (/?a+)+$ on a
 * path of n characters. Prints ratios to re2js measured in this run.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { RE2JS } from 're2js';
import { printTable } from './harness.ts';

interface Engine {
  name: string;
  compile(pattern: string): (value: string) => boolean;
}

const full = (p: string) => `^(?:${p})$`;
const engines: Engine[] = [
  {
    name: 're2js',
    compile: (p) => {
      const re = RE2JS.compile(p);
      return (v) => re.matches(v);
    },
  },
  {
    name: 'RegExp (backtracking)',
    compile: (p) =>
      (
        (re) => (v: string) =>
          re.test(v)
      )(new RegExp(full(p), 'u')),
  },
];
try {
  const { RE2 } = createRequire(import.meta.url)('re2-wasm') as {
    RE2: new (p: string, f: string) => { test(v: string): boolean };
  };
  engines.push({
    name: 're2-wasm',
    compile: (p) =>
      (
        (re) => (v: string) =>
          re.test(v)
      )(new RE2(full(p), 'u')),
  });
} catch (error) {
  console.log(`re2-wasm not measured: ${String(error)}`);
}

// What KServe and Kubeflow write: authority regexes of model hosts, path regexes of the predictor.
const patterns = [
  'sklearn-iris-predictor\\.kubeflow-user-example-com(\\.svc(\\.cluster\\.local)?)?(?::\\d{1,5})?',
  '^/v1/models/[\\w-]+(:predict|:explain)?$',
  '^/serving/kubeflow-user-example-com/sklearn-iris/(.*)',
  '(?i)^/API/v[0-9]+/.*',
];
const inputs = [
  'sklearn-iris-predictor.kubeflow-user-example-com.svc.cluster.local:80',
  '/v1/models/sklearn-iris:predict',
  '/serving/kubeflow-user-example-com/sklearn-iris/v1/models/x',
  '/api/v2/runs',
];

/** Compile and match times of one engine, or why it could not finish. */
function measure(engine: Engine): (string | number)[] {
  const rounds = 400;
  let start = performance.now();
  let compiled: ((v: string) => boolean)[] = [];
  let made = 0;
  try {
    // A new pattern each round (a suffix), as each tenant's VirtualService brings its own.
    for (let i = 0; i < rounds; i++)
      compiled = patterns.map((p) => {
        made++;
        return engine.compile(
          p.startsWith('(?i)') && engine.name.startsWith('RegExp') ? p.slice(4) : `${p}|x${i}`,
        );
      });
  } catch (error) {
    return [engine.name, `failed after ${made} patterns: ${String(error).slice(0, 60)}`, '', '', '', ''];
  }
  const compileUs = ((performance.now() - start) * 1000) / (rounds * patterns.length);
  start = performance.now();
  let hits = 0;
  const matches = 20_000;
  for (let i = 0; i < matches; i++) for (const m of compiled) for (const v of inputs) if (m(v)) hits++;
  const matchUs = ((performance.now() - start) * 1000) / (matches * compiled.length * inputs.length);
  const bomb = engine.compile('(/?a+)+$');
  const n = engine.name.startsWith('RegExp') ? 24 : 100_000;
  start = performance.now();
  bomb(`/${'a'.repeat(n)}!`);
  return [engine.name, compileUs, matchUs, hits, `${n} chars: ${(performance.now() - start).toFixed(1)} ms`];
}

const rows = engines.map(measure);
const ours = rows.find((r) => r[0] === 're2js')?.[2] as number;
printTable(
  'regex engines: compile and full match per pattern (this run)',
  ['engine', 'compile µs', 'match µs', 'matches', '(/?a+)+$ on /aaa…a!', 'match time / re2js'],
  rows.map((r) => [...r, typeof r[2] === 'number' ? r[2] / ours : '']),
);

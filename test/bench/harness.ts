/** A small benchmark harness: median of repeated timings, peak memory, ratios measured in one run. */
import { performance } from 'node:perf_hooks';

/** Collects garbage when the process runs with --expose-gc, so one measurement's leftovers don't tax the next. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** The median wall time of `fn` over `repeats` runs (after one warm-up), in milliseconds. */
export function medianMs(fn: () => unknown, repeats = 5): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    collectGarbage();
    const start = performance.now();
    fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

/** The process's peak resident memory so far, in MiB. */
export function peakRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** Prints rows as an aligned Markdown table (docs/benchmarks.md shows the same table). */
export function printTable(title: string, header: string[], rows: (string | number)[][]): void {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? formatNumber(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(cells[0] as string[]));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of cells.slice(1)) console.log(line(r as string[]));
}

function formatNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(n < 10 ? 2 : 1);
}

/** One timed run of `fn` (after collecting garbage): its wall time in ms and its result. */
export function timed<T>(fn: () => T): { ms: number; result: T } {
  collectGarbage();
  const start = performance.now();
  const result = fn();
  return { ms: performance.now() - start, result };
}

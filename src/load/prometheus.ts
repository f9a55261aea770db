/**
 * Reading an instant-vector answer of Prometheus' HTTP query API (`/api/v1/query`) into samples, and the
 * query kfmesh asks: how many requests each series counted over a window. The request itself is the
 * shell's (cli/explain.ts).
 */
import { InputError } from '../model/errors.ts';
import { isPlainObject } from '../model/object.ts';
import type { Sample } from './exposition.ts';

/** A Prometheus duration: `30s`, `1h`, `1h30m`, `7d`. */
export const durationPattern = /^([0-9]+(ms|s|m|h|d|w|y))+$/;

const unitSeconds: Record<string, number> = {
  ms: 0.001,
  s: 1,
  m: 60,
  h: 3600,
  d: 86_400,
  w: 604_800,
  y: 31_536_000,
};

/** The seconds of a duration that `durationPattern` accepts (`1h30m`: 5400). */
export function durationSeconds(duration: string): number {
  let seconds = 0;
  for (const [, amount, unit] of duration.matchAll(/([0-9]+)(ms|s|m|h|d|w|y)/g))
    seconds += Number(amount) * (unitSeconds[unit ?? 's'] ?? 1);
  return seconds;
}

/** The query for a metric's counts over a window (its increase, per series). */
export function increaseQuery(metric: string, window: string): string {
  return `increase(${metric}[${window}])`;
}

/**
 * The samples of an instant-vector answer, named `metric` (increase() drops the name); `line` is the
 * result's position, 1-based. An answer that is not a successful vector is an InputError naming `source`.
 */
export function samplesFromQuery(answer: unknown, metric: string, source: string): Sample[] {
  const fail = (message: string): never => {
    throw new InputError({ location: { file: source } }, message);
  };
  if (!isPlainObject(answer)) return fail('the answer is not a JSON object');
  if (answer['status'] !== 'success')
    return fail(
      `Prometheus refused the query: ${String(answer['errorType'] ?? 'error')}: ${String(answer['error'] ?? '')}`,
    );
  const data = answer['data'];
  if (!isPlainObject(data) || data['resultType'] !== 'vector' || !Array.isArray(data['result']))
    return fail('the answer is not an instant vector (data.resultType "vector")');
  return data['result'].map((entry: unknown, i) => {
    if (!isPlainObject(entry) || !isPlainObject(entry['metric']) || !Array.isArray(entry['value']))
      return fail(`result ${i + 1} has no metric and value`);
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(entry['metric']))
      if (k !== '__name__' && typeof v === 'string') labels[k] = v;
    const value = Number(entry['value'][1]);
    if (typeof entry['value'][1] !== 'string' || (Number.isNaN(value) && entry['value'][1] !== 'NaN'))
      return fail(`result ${i + 1} has no numeric value`);
    return { name: metric, labels, value, line: i + 1 };
  });
}

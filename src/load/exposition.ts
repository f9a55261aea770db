/**
 * Reading Prometheus' text exposition format (what Envoy's `/stats/prometheus` and Prometheus'
 * `/federate` serve; OpenMetrics' `# EOF` accepted): `# HELP` and `# TYPE` lines, and samples
 * `name{label="value",...} value [timestamp]`. Written here rather than taken from a library: the one npm
 * parser (parse-prometheus-text-format 1.1.1) says no line for a malformed input and takes a value such as
 * `notanumber` as it is, and kfmesh refuses bad input with its file and line.
 */
import { InputError } from '../model/errors.ts';
import type { InputText } from './parse.ts';

/** One sample: a series (name and labels) and its value, with the line it was read from. */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
  /** Milliseconds since the epoch, when the line gives one. */
  timestamp?: number;
  line: number;
}

/** What an exposition text holds: its samples in order, and the type each metric family declares. */
export interface Exposition {
  samples: Sample[];
  types: ReadonlyMap<string, string>;
}

const metricTypes = new Set([
  'counter',
  'gauge',
  'histogram',
  'summary',
  'untyped',
  'unknown',
  'info',
  'stateset',
  'gaugehistogram',
]);
const metricName = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const labelName = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const floatText = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
const specialValues: Readonly<Record<string, number>> = {
  NaN: Number.NaN,
  '+Inf': Number.POSITIVE_INFINITY,
  Inf: Number.POSITIVE_INFINITY,
  '-Inf': Number.NEGATIVE_INFINITY,
};

/** Every sample of an exposition text; bad input is an InputError naming the file and line. */
export function parseExposition(input: InputText): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const seen = new Set<string>();
  const lines = input.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] ?? '').replace(/\r$/, '');
    const number = i + 1;
    const fail = (column: number, message: string): never => {
      throw new InputError({ location: { file: input.name, line: number, column } }, message);
    };
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      if (line.trim() === '# EOF') break;
      const comment = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
      if (!comment) continue;
      const [, keyword, name = '', rest = ''] = comment;
      if (!metricName.test(name) || metricName.exec(name)?.[0] !== name)
        fail(1, `"${name}" is not a metric name`);
      if (keyword === 'TYPE') {
        const type = rest.trim();
        if (!metricTypes.has(type))
          fail(1, `metric type "${type}" is not one of ${[...metricTypes].join(', ')}`);
        if (types.has(name)) fail(1, `the type of ${name} is declared twice`);
        types.set(name, type);
      }
      continue;
    }
    const sample = parseSample(line, number, fail);
    const key = `${sample.name}\u0000${Object.entries(sample.labels)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join('\u0000')}`;
    if (seen.has(key)) fail(1, `series ${seriesText(sample)} appears twice`);
    seen.add(key);
    samples.push(sample);
  }
  return { samples, types };
}

/** A series as Prometheus writes it: `name{a="x",b="y"}`. */
export function seriesText(sample: Pick<Sample, 'name' | 'labels'>): string {
  const labels = Object.entries(sample.labels).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return labels.length > 0 ? `${sample.name}{${labels.join(',')}}` : sample.name;
}

// Why long: one pass over a sample line (name, labels with their escapes, value, timestamp), each
// malformation reported at its column.
function parseSample(line: string, number: number, fail: (column: number, message: string) => never): Sample {
  let at = 0;
  const name = metricName.exec(line)?.[0];
  if (!name) return fail(1, 'expected a metric name, a comment (#) or an empty line');
  at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === '{') {
    at++;
    for (;;) {
      while (line[at] === ' ') at++;
      if (line[at] === '}') {
        at++;
        break;
      }
      const label = labelName.exec(line.slice(at))?.[0];
      if (!label) return fail(at + 1, 'expected a label name or }');
      at += label.length;
      if (line[at] !== '=') return fail(at + 1, `expected = after label ${label}`);
      at++;
      if (line[at] !== '"') return fail(at + 1, `expected the quoted value of label ${label}`);
      at++;
      let value = '';
      for (;;) {
        const c = line[at];
        if (c === undefined) return fail(at + 1, `the value of label ${label} is not closed with "`);
        if (c === '"') break;
        if (c === '\\') {
          const next = line[at + 1];
          if (next === 'n') value += '\n';
          else if (next === '\\' || next === '"') value += next;
          else return fail(at + 1, `unknown escape \\${next ?? ''} in the value of label ${label}`);
          at += 2;
          continue;
        }
        value += c;
        at++;
      }
      at++;
      if (label in labels) return fail(at, `label ${label} appears twice`);
      labels[label] = value;
      while (line[at] === ' ') at++;
      if (line[at] === ',') {
        at++;
        continue;
      }
      if (line[at] === '}') {
        at++;
        break;
      }
      return fail(at + 1, 'expected , or } after a label');
    }
  }
  if (line[at] !== ' ' && line[at] !== '\t') return fail(at + 1, 'expected a space and the value');
  const fields = line
    .slice(at)
    .trim()
    .split(/[ \t]+/);
  const [valueText = '', timestampText, ...extra] = fields;
  const value =
    valueText in specialValues
      ? specialValues[valueText]
      : floatText.test(valueText)
        ? Number(valueText)
        : undefined;
  if (value === undefined) return fail(at + 2, `"${valueText}" is not a number`);
  if (extra.length > 0) return fail(at + 2, 'expected a value and at most a timestamp after the series');
  if (timestampText !== undefined && !/^-?[0-9]+$/.test(timestampText))
    return fail(at + 2, `timestamp "${timestampText}" is not whole milliseconds`);
  return {
    name,
    labels,
    value,
    ...(timestampText !== undefined ? { timestamp: Number(timestampText) } : {}),
    line: number,
  };
}

/**
 * The side panels: the selected node's traffic, the tracer's hop table, the findings, the objects and the
 * migration report. Each returns elements built from the API's answers (text only, see `dom.ts`).
 */
import { el, table } from './dom.ts';
import { describeRef } from './client.ts';
import type { Hop } from '../model/trace-result.ts';
import type {
  Finding,
  GraphEdge,
  MigrationReport,
  ObservedEdge,
  ObservedSeriesView,
  PlanView,
  Traced,
} from '../console/wire.ts';
import { errorRatio, shortNumber, type DrawnEdge, type DrawnNode } from '../console/collapse.ts';

const count = (n: number, of: number) => (n === 0 ? '' : n === of ? 'all' : String(n));

export function nodeDetails(node: DrawnNode, edges: { into: GraphEdge[]; out: GraphEdge[] }): HTMLElement {
  const rows = (list: GraphEdge[], peer: (e: GraphEdge) => string) =>
    list.map((e) => [
      peer(e),
      e.requests,
      count(e.allowed, e.requests),
      count(e.denied, e.requests) + (e.deniedBy ? ` (${e.deniedBy})` : ''),
      count(e.passthrough, e.requests),
      count(e.mtls, e.requests),
    ]);
  const header = ['requests', 'allowed', 'denied', 'passthrough', 'mTLS'];
  return el(
    'section',
    { 'data-testid': 'node-details' },
    el('h3', {}, `${node.kind} ${node.id}`),
    el('h4', {}, `From (${edges.into.length})`),
    table(
      ['from', ...header],
      rows(edges.into, (e) => e.source),
    ),
    el('h4', {}, `To (${edges.out.length})`),
    table(
      ['to', ...header],
      rows(edges.out, (e) => e.target),
    ),
  );
}

/**
 * A tapped edge: the simulated requests it stands for (each edge of the graph, when it joins namespaces),
 * and what the mesh reported over it, each series with what explains it: the trace and the finding with
 * its fix, or, for drift, the labels on which the nearest trace of the configuration differs.
 */
export function edgeDetails(
  edge: DrawnEdge,
  members: { edges: GraphEdge[]; observed: ObservedEdge[] },
  seconds?: number,
): HTMLElement {
  const o = edge.observed;
  const series = members.observed.flatMap((m) =>
    m.series.map((s) => ({ ...s, edge: `${m.source} → ${m.target}` })),
  );
  series.sort((a, b) => b.value - a.value);
  const top = [...members.edges].sort((a, b) => b.requests - a.requests).slice(0, 30);
  return el(
    'section',
    { 'data-testid': 'edge-details' },
    el('h3', {}, `${edge.source} → ${edge.target}`),
    el(
      'p',
      {},
      edge.requests > 0
        ? `Configuration: ${edge.requests} simulated requests take it; ${count(edge.allowed, edge.requests) || 'none'} allowed, ${count(edge.denied, edge.requests) || 'none'} denied${edge.deniedBy ? ` (${edge.deniedBy})` : ''}, ${count(edge.passthrough, edge.requests) || 'none'} to PassthroughCluster, ${count(edge.mtls, edge.requests) || 'none'} over mTLS.`
        : 'Configuration: no simulated request takes it.',
    ),
    o
      ? el(
          'p',
          { 'data-testid': 'edge-observed', class: o.drift > 0 || edge.observedOnly ? 'warning' : undefined },
          `Observed: ${o.requests > 0 ? `${shortNumber(o.requests)} requests` : `${shortNumber(o.connections)} connections`}` +
            (o.rate !== undefined ? ` (${shortNumber(o.rate)}/s over ${seconds ?? '?'} s)` : '') +
            (o.requests > 0
              ? `, ${Math.round(errorRatio(o) * 100)}% failed (${Object.entries(o.codes)
                  .sort()
                  .map(([k, v]) => `${k} ${shortNumber(v)}`)
                  .join(', ')})`
              : '') +
            (edge.observedOnly
              ? '. Drift: the configuration sends no request this way.'
              : o.drift > 0
                ? `. Drift: ${o.drift} series this configuration does not produce.`
                : '.'),
        )
      : false,
    top.length > 1
      ? el(
          'details',
          {},
          el('summary', {}, `${members.edges.length} edges between workloads`),
          table(
            ['from', 'to', 'requests', 'denied', 'passthrough'],
            top.map((e) => [
              e.source,
              e.target,
              e.requests,
              count(e.denied, e.requests),
              count(e.passthrough, e.requests),
            ]),
          ),
        )
      : false,
    series.length > 0
      ? el(
          'ol',
          { class: 'series', 'data-testid': 'edge-series' },
          ...series.map((s) => seriesItem(s, members.observed.length > 1 ? s.edge : undefined)),
        )
      : false,
  );
}

function seriesItem(s: ObservedSeriesView, edge: string | undefined): HTMLElement {
  const f = s.finding;
  return el(
    'li',
    { class: `series ${s.status}` },
    el('span', { class: 'badge' }, s.status),
    ' ',
    el('strong', {}, `${shortNumber(s.value)}${s.rate !== undefined ? ` (${shortNumber(s.rate)}/s)` : ''}`),
    ` ${s.metric} reporter=${s.reporter}${edge ? ` ${edge}` : ''} (${s.at})`,
    el(
      'dl',
      { class: 'labels' },
      ...Object.entries(s.labels).flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
    ),
    s.request
      ? el('p', {}, `${s.status === 'drift' ? 'Nearest trace' : 'Trace'}: ${s.request}: ${s.summary ?? ''}`)
      : false,
    f
      ? el(
          'p',
          { class: 'cause' },
          el('strong', {}, f.code),
          ` ${f.object}${f.field ? ` ${f.field}` : ''}: ${f.message}`,
        )
      : false,
    f?.fix ? el('p', { class: 'fix' }, `Fix: ${f.fix}`) : false,
    f?.patch ? el('pre', { class: 'yaml' }, f.patch) : false,
    ...(s.differences ?? []).map((d) => el('p', { class: 'warning' }, `Differs: ${d}`)),
    s.reason ? el('p', { class: 'note' }, s.reason) : false,
  );
}

function proxyOf(hop: Hop): string {
  return `${hop.kind} ${hop.namespace}/${hop.workload}`;
}

function labelsOf(result: Traced, hop: Hop): HTMLElement | string {
  const proxy = `${hop.namespace}/${hop.workload}`;
  const records = result.telemetry.filter((t) => t.proxy === proxy);
  if (records.length === 0) return '';
  return el(
    'details',
    {},
    el('summary', {}, records.map((r) => `reporter=${r.reporter}`).join(', ')),
    ...records.map((r) =>
      el(
        'dl',
        { class: 'labels' },
        ...Object.entries(r.labels).flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]),
      ),
    ),
  );
}

export function traceResult(result: Traced, shownOnGraph: number): HTMLElement {
  const decision = (hop: Hop) =>
    hop.decision === 'none' ? '' : hop.policy ? `${hop.decision}: ${hop.policy}` : hop.decision;
  const rows = result.hops.map((hop, i) => [
    i + 1,
    proxyOf(hop),
    hop.direction,
    hop.route ?? hop.virtualService ?? '',
    [hop.cluster, hop.upstream].filter(Boolean).join(' → '),
    `${hop.authority}${hop.path}`,
    hop.mtls ? `mTLS${hop.tls ? ` (${hop.tls})` : ''}` : 'plaintext',
    decision(hop),
    hop.code !== undefined ? `${hop.code} ${hop.flags ?? ''}` : '',
    labelsOf(result, hop),
  ]);
  return el(
    'section',
    { 'data-testid': 'trace-result' },
    el('p', { class: 'trace-summary', 'data-testid': 'trace-summary' }, result.summary),
    el(
      'p',
      {},
      `response ${result.response.code}${result.response.flags && result.response.flags !== '-' ? ` ${result.response.flags}` : ''}`,
      result.answeredBy ? `; answered by ${result.answeredBy}` : '; answered by a proxy',
      ` (${result.mode} mode; path ${result.path.join(' → ')}; ${shownOnGraph} of ${result.path.length} on the graph)`,
    ),
    result.unsupported ? el('p', { class: 'warning' }, `partial trace: ${result.unsupported}`) : false,
    // In a box of its own that scrolls sideways: cells keep their words on one line.
    el(
      'div',
      { class: 'scroll' },
      table(
        [
          '#',
          'proxy',
          'direction',
          'route',
          'cluster → upstream',
          'leaves as',
          'TLS',
          'decision',
          'response',
          'istio_requests_total',
        ],
        rows,
        'hop-table',
      ),
    ),
    ...result.hops
      .filter((h) => h.notes.length > 0)
      .map((h) => el('p', { class: 'note' }, `${proxyOf(h)}: ${h.notes.join('; ')}`)),
  );
}

export interface FindingActions {
  showInGraph(finding: Finding): void;
  showObject(finding: Finding): void;
}

export function findingsList(findings: Finding[], actions: FindingActions): HTMLElement {
  if (findings.length === 0) return el('p', { 'data-testid': 'findings' }, 'No findings.');
  return el(
    'ol',
    { class: 'findings', 'data-testid': 'findings' },
    ...findings.map((f) => {
      const graphButton = el('button', { type: 'button' }, 'Show in graph');
      graphButton.addEventListener('click', () => actions.showInGraph(f));
      const objectButton = el('button', { type: 'button' }, 'Show object');
      objectButton.addEventListener('click', () => actions.showObject(f));
      return el(
        'li',
        { class: `finding ${f.severity}` },
        el('span', { class: 'badge' }, f.severity),
        ' ',
        el('strong', {}, f.code),
        ' ',
        el('span', { class: 'object' }, describeRef(f.object)),
        f.field ? ` (${f.field})` : '',
        f.location ? el('span', { class: 'location' }, ` ${f.location}`) : false,
        el('p', {}, f.message),
        f.fix ? el('p', { class: 'fix' }, `Fix: ${f.fix}`) : false,
        el('div', { class: 'actions' }, graphButton, ' ', objectButton),
      );
    }),
  );
}

export function yamlBlock(title: string, yaml: string, testId: string): HTMLElement {
  const copy = el('button', { type: 'button' }, 'Copy');
  copy.addEventListener('click', () => {
    void navigator.clipboard?.writeText(yaml).then(() => {
      copy.textContent = 'Copied';
    });
  });
  return el(
    'section',
    {},
    el('div', { class: 'row' }, el('h3', {}, title), copy),
    el('pre', { class: 'yaml', 'data-testid': testId }, yaml),
  );
}

export function migrationReport(report: MigrationReport): HTMLElement {
  const changed = report.entries.filter((e) => e.outcome !== 'kept');
  return el(
    'section',
    { 'data-testid': 'migration-report' },
    el('h3', {}, 'Migration to ambient mode'),
    table(Object.keys(report.summary), [Object.values(report.summary)], 'migration-summary'),
    el('h4', {}, `Objects that change (${changed.length})`),
    table(
      ['object', 'outcome', 'notes'],
      changed.map((e) => [
        describeRef(e.object),
        e.outcome,
        el(
          'ul',
          {},
          ...e.notes.map((n) => el('li', {}, `${n.kind}${n.field ? ` ${n.field}` : ''}: ${n.message}`)),
        ),
      ]),
    ),
    el('h4', {}, `Objects added (${report.added.length})`),
    table(
      ['object', 'why'],
      report.added.map((a) => [describeRef(a.object), a.reason]),
    ),
  );
}

/** The migration plan: its verdict, its steps (the one shown marked; a click shows another), its outage windows. */
export function planPanel(plan: PlanView, current: number, show: (step: number) => void): HTMLElement {
  const windowed = plan.windows.reduce((n, w) => n + w.count, 0);
  const item = (step: number, text: string, detail: string) => {
    const li = el(
      'li',
      {
        class: step === current ? 'current' : undefined,
        'aria-current': step === current ? 'step' : undefined,
      },
      el('button', { type: 'button', 'data-step': String(step) }, text),
      detail ? el('span', { class: 'muted' }, ` ${detail}`) : undefined,
    );
    li.querySelector('button')?.addEventListener('click', () => show(step));
    return li;
  };
  return el(
    'section',
    { 'data-testid': 'plan' },
    el(
      'p',
      { 'data-testid': 'plan-summary' },
      `${plan.steps.length} steps; ${plan.groups.map((g) => g.join(' + ')).join(', then ') || 'no namespace moves'}. ` +
        `Every state against the start: ${plan.errors} errors, ${windowed} requests in outage windows.`,
    ),
    el(
      'ol',
      { class: 'plan-steps', start: '0' },
      item(0, 'The start', ''),
      ...plan.steps.map((s) =>
        item(
          s.number,
          `${s.title}${s.namespaces.length > 0 ? ` (${s.namespaces.join(', ')})` : ''}`,
          `${s.changes.length} changes; ${s.errors} errors, ${s.warnings} warnings`,
        ),
      ),
    ),
    el('h4', {}, `Outage windows (${plan.windows.length})`),
    plan.windows.length === 0
      ? el(
          'p',
          { 'data-testid': 'plan-windows' },
          'None: no request answered at the start is refused in one state and answered again later.',
        )
      : table(
          ['steps', 'requests', 'what happens', 'for example'],
          plan.windows.map((w) => [`${w.from}–${w.to}`, w.count, w.cause, w.example]),
          'plan-windows',
        ),
  );
}

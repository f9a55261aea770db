/**
 * The side panels: the selected node's traffic, the tracer's hop table, the findings, the objects and the
 * migration report. Each returns elements built from the API's answers (text only, see `dom.ts`).
 */
import { el, fill, table } from './dom.ts';
import { describeRef } from './client.ts';
import type { Hop } from '../model/trace-result.ts';
import type {
  Finding,
  GraphEdge,
  MigrationReport,
  ObservedEdge,
  ObservedSeriesView,
  PlanProgress,
  PlanStepView,
  PlanView,
  Traced,
} from '../console/wire.ts';
import { differencesShown } from '../console/differences.ts';
import { errorRatio, nodeName, shortNumber, type DrawnEdge, type DrawnNode } from '../console/collapse.ts';

/**
 * A node's traffic, a row per peer: requests = allowed + denied + failed (each request ends one of the
 * three ways); of them, how many left the mesh (PassthroughCluster) and how many went over mTLS.
 */
export function nodeDetails(node: DrawnNode, edges: { into: GraphEdge[]; out: GraphEdge[] }): HTMLElement {
  const rows = (list: GraphEdge[], peer: (e: GraphEdge) => string) =>
    list.map((e) => [
      peer(e),
      e.requests,
      e.allowed,
      `${e.denied}${e.deniedBy ? ` (${e.deniedBy})` : ''}`,
      e.failed,
      e.passthrough,
      e.mtls,
    ]);
  const header = ['requests', 'allowed', 'denied', 'failed', 'passthrough', 'mTLS'];
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
    el('h3', {}, `${nodeName(edge.source)} → ${nodeName(edge.target)}`),
    el(
      'p',
      {},
      edge.requests > 0
        ? `Configuration: ${edge.requests} simulated requests take it: ${edge.allowed} allowed, ${edge.denied} denied${edge.deniedBy ? ` (${edge.deniedBy})` : ''}, ${edge.failed} failed; ${edge.passthrough} to PassthroughCluster, ${edge.mtls} over mTLS.`
        : 'Configuration: none of the simulated requests takes it (the requests kfmesh draws the graph from: see the tracer for one of your own).',
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
            ['from', 'to', 'requests', 'allowed', 'denied', 'failed', 'passthrough'],
            top.map((e) => [e.source, e.target, e.requests, e.allowed, e.denied, e.failed, e.passthrough]),
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

/** The data plane a hop is part of: a sidecar, ambient mode's ztunnel or waypoint, or a gateway. */
function planeOf(hop: Hop): string {
  return hop.kind === 'ztunnel' || hop.kind === 'waypoint' ? 'ambient' : hop.kind;
}

/** What a hop did besides its decision and response: opened on demand under its row. */
function hopDetails(result: Traced, hop: Hop): HTMLElement {
  const rows: [string, string | HTMLElement][] = [
    ['direction', hop.direction],
    ['route', hop.route ?? hop.virtualService ?? ''],
    ['cluster → upstream', [hop.cluster, hop.upstream].filter(Boolean).join(' → ')],
    ['leaves as', `${hop.authority}${hop.path}`],
    ['TLS', hop.mtls ? `mTLS${hop.tls ? ` (${hop.tls})` : ''}` : 'plaintext'],
    ['istio_requests_total', labelsOf(result, hop)],
  ];
  return el(
    'details',
    { class: 'hop-details' },
    el('summary', {}, 'more'),
    el('dl', {}, ...rows.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)])),
  );
}

/**
 * A traced request: its summary, then a row per hop with what a reader looks for first (the proxy, the
 * data plane it belongs to, its decision and the response it gave), each hop's route, cluster, TLS and
 * metrics one click away under it.
 */
export function traceResult(result: Traced, shownOnGraph: number): HTMLElement {
  const decision = (hop: Hop) =>
    hop.decision === 'none' ? '' : hop.policy ? `${hop.decision}: ${hop.policy}` : hop.decision;
  const rows = result.hops.map((hop, i) => [
    i + 1,
    proxyOf(hop),
    planeOf(hop),
    decision(hop),
    // What the hop sent back: its own answer, else the response that came back through it.
    `${hop.code ?? result.response.code} ${(hop.code !== undefined ? hop.flags : result.response.flags) ?? ''}`
      .replace(/ -$/, '')
      .trim(),
    hopDetails(result, hop),
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
    table(['#', 'proxy', 'data plane', 'decision', 'response', 'route, cluster…'], rows, 'hop-table'),
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

/** A step of the plan as listed: a button that shows its state, and what its state gave once simulated. */
function stepItem(
  step: PlanStepView | undefined,
  current: number,
  show?: (step: number) => void,
): HTMLElement {
  const number = step?.number ?? 0;
  const text = step
    ? `${step.title}${step.namespaces.length > 0 ? ` (${step.namespaces.join(', ')})` : ''}`
    : 'The start';
  const detail = !step
    ? ''
    : step.simulated
      ? `${step.changes.length} changes; ${step.errors} errors, ${step.warnings} warnings`
      : `${step.changes.length} changes; simulating…`;
  const button = el('button', { type: 'button', 'data-step': String(number) }, text);
  if (show) button.addEventListener('click', () => show(number));
  else button.disabled = true;
  return el(
    'li',
    {
      class: number === current ? 'current' : undefined,
      'aria-current': number === current ? 'step' : undefined,
    },
    button,
    detail ? el('span', { class: 'muted' }, ` ${detail}`) : undefined,
  );
}

/** The plan while the server computes it: what it is doing, how far it is, and the steps once ordered. */
export function planProgress(progress: PlanProgress): HTMLElement {
  const ordered = progress.total > 0;
  return el(
    'section',
    { 'data-testid': 'plan-progress' },
    el(
      'p',
      { 'data-testid': 'plan-doing' },
      `Planning the move to ambient mode (${progress.seconds} s): ${progress.doing}. ` +
        (ordered
          ? `${progress.simulated} of ${progress.total} states simulated.`
          : 'Choosing the order first.'),
    ),
    el('progress', {
      max: String(Math.max(progress.total, 1)),
      value: String(progress.simulated),
      'aria-label': 'States simulated',
    }),
    ordered
      ? el(
          'ol',
          { class: 'plan-steps', start: '0' },
          ...[undefined, ...progress.steps].map((s) => stepItem(s, -1)),
        )
      : undefined,
  );
}

const severities = ['error', 'warning', 'note'] as const;

/**
 * How the requests of a step's state answer differently than at the start, errors first, filtered by
 * severity and by words in the cause or the example.
 */
function differences(step: PlanStepView): HTMLElement {
  const severity = el(
    'select',
    { 'aria-label': 'Severity', 'data-testid': 'plan-severity' },
    el('option', { value: '' }, 'all'),
    ...severities.map((s) => el('option', { value: s }, `${s}s`)),
  );
  const words = el('input', {
    type: 'search',
    placeholder: 'filter: words in what happens',
    'aria-label': 'Filter the differences',
    'data-testid': 'plan-filter',
  });
  const out = el('div', {});
  const draw = () => {
    const rows = differencesShown(step.differences, severity.value, words.value);
    const total = rows.reduce((n, d) => n + d.count, 0);
    fill(
      out,
      el(
        'p',
        { class: 'muted', 'data-testid': 'plan-differences-count' },
        `${total} requests in ${rows.length} ways`,
      ),
      table(
        ['severity', 'requests', 'what happens', 'for example'],
        rows.map((d) => [d.severity, d.count, d.cause, d.example]),
        'plan-differences',
      ),
    );
  };
  severity.addEventListener('change', draw);
  words.addEventListener('input', draw);
  draw();
  return el(
    'section',
    {},
    el(
      'h4',
      {},
      `Step ${step.number} against the start: ${step.errors} errors, ${step.warnings} warnings, ${step.notes} notes`,
    ),
    el('div', { class: 'plan-filter' }, severity, words),
    out,
  );
}

/** The migration plan: its verdict, its steps (the one shown marked; a click shows another), its outage windows. */
export function planPanel(plan: PlanView, current: number, show: (step: number) => void): HTMLElement {
  const windowed = plan.windows.reduce((n, w) => n + w.count, 0);
  const shown = plan.steps[current - 1];
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
      ...[undefined, ...plan.steps].map((s) => stepItem(s, current, show)),
    ),
    shown ? differences(shown) : undefined,
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

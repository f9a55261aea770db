/**
 * The console page: the mesh graph of one mode (sidecar, or the platform migrated to ambient) with search,
 * namespace filter and focus; the tracer (a request's hops on the graph and as a table); the analyzer's
 * findings, linked to the graph and to the objects; the objects kfmesh renders for an InferenceService or
 * Profile in the mode shown, and the migration report. It only reads the API.
 */
import { byId, el, fill } from './dom.ts';
import { get, planned } from './client.ts';
import { GraphView, type EdgeFilter } from './graph-view.ts';
import {
  edgeDetails,
  findingsList,
  migrationReport,
  nodeDetails,
  planPanel,
  planProgress,
  traceResult,
  yamlBlock,
} from './panels.ts';
import type { MeshGraph, ModeGraph, ObservedGraph, PlanView, Summary } from '../console/wire.ts';

/** The graph shown: the platform in sidecar mode, migrated to ambient, or a state of the migration plan. */
type Mode = 'sidecar' | 'ambient' | 'plan';

interface Ready {
  mode: Mode;
  /** Milliseconds from the start of navigation to the graph drawn and answering input. */
  interactiveMs: number;
  nodes: number;
  edges: number;
  /** Nodes on the page (namespaces folded into one each, at first). */
  drawnNodes: number;
  /** Edges on the page (a large graph draws some of its edges at a time). */
  drawnEdges: number;
}

/** What tests and benchmarks read: the graph, and when it became interactive. */
declare global {
  interface Window {
    kfmesh?: { view: GraphView; ready: Ready };
  }
}

const state: {
  mode: Mode;
  summary?: Summary;
  /** Each mode's graph, fetched when first shown. */
  graphs: Map<'sidecar' | 'ambient', Promise<ModeGraph>>;
  view?: GraphView;
  lastTrace?: Record<string, string | string[]>;
  /** The migration plan, fetched when first shown, and the step whose state the graph shows. */
  plan?: Promise<PlanView>;
  planStep: number;
  /** The traffic the mesh reported, when the console was given metrics (fetched once). */
  observed?: Promise<ObservedGraph>;
} = {
  mode: location.hash === '#ambient' ? 'ambient' : location.hash === '#plan' ? 'plan' : 'sidecar',
  graphs: new Map(),
  planStep: 0,
};

/** The plan; while the server computes it, its progress in the Plan tab and the status line. */
function planOf(): Promise<PlanView> {
  state.plan ??= planned((progress) => {
    if (state.mode !== 'plan') return;
    fill(byId('plan-out'), planProgress(progress));
    status(`planning: ${progress.doing} (${progress.seconds} s)`);
  }).then((plan) => {
    if (state.mode === 'plan') status(`planned: ${plan.steps.length} steps, every state simulated`);
    return plan;
  });
  return state.plan;
}

/** The observed traffic, when the console has metrics; it is of the platform as given (the sidecar graph). */
function observedOf(): Promise<ObservedGraph> | undefined {
  if (!state.summary?.observed) return undefined;
  state.observed ??= get('/api/observed');
  return state.observed;
}

function graphOf(mode: 'sidecar' | 'ambient'): Promise<ModeGraph> {
  let graph = state.graphs.get(mode);
  if (!graph) {
    graph = get('/api/graph', { mode });
    graph.catch(() => undefined); // awaited where it is used; this only keeps an early failure from going unhandled
    state.graphs.set(mode, graph);
  }
  return graph;
}

function status(text: string, error = false): void {
  const line = byId('status');
  line.textContent = text;
  line.className = error ? 'error' : '';
}

function failed(error: unknown): void {
  status(messageOf(error), true);
}

function selectTab(name: string): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('.tabs button'))
    button.setAttribute('aria-selected', String(button.dataset['tab'] === name));
  for (const tab of document.querySelectorAll<HTMLElement>('.tab')) tab.hidden = tab.id !== `tab-${name}`;
}

/** What the graph pane draws: a mode's graph, or a plan state's with the edges its step changed. */
async function shownGraph(): Promise<{
  graph: MeshGraph;
  requests: number;
  matrix: number;
  changed: string[];
  label: string;
}> {
  if (state.mode !== 'plan') return { ...(await graphOf(state.mode)), changed: [], label: state.mode };
  const plan = await planOf();
  const shown = await get('/api/plan/graph', { step: String(state.planStep) });
  const step = plan.steps[shown.step - 1];
  const label = step
    ? `plan step ${step.number} of ${plan.steps.length}, ${step.title}${step.namespaces.length ? ` (${step.namespaces.join(', ')})` : ''}: ${shown.changed.length} edges changed`
    : `plan: the start (step 0 of ${plan.steps.length})`;
  byId('plan-label').textContent = `step ${shown.step} of ${plan.steps.length}`;
  // The slider keeps the step asked for last: a graph that arrives late never moves it back.
  const slider = byId<HTMLInputElement>('plan-step');
  slider.max = String(plan.steps.length);
  slider.value = String(state.planStep);
  fill(
    byId('plan-out'),
    planPanel(plan, shown.step, (k) => void showStep(k)),
  );
  return { ...shown, label };
}

async function showStep(step: number): Promise<void> {
  if (step === state.planStep && document.body.dataset['graphReady'] === 'plan') return;
  state.planStep = step;
  delete document.body.dataset['graphReady'];
  await drawGraph().catch(failed);
}

// Why long: it builds the view with its three kinds of tap, then says what is drawn and when it is ready.
async function drawGraph(): Promise<void> {
  const mode = state.mode;
  const step = state.planStep;
  const [shown, observed] = await Promise.all([shownGraph(), mode === 'sidecar' ? observedOf() : undefined]);
  if (mode !== state.mode || step !== state.planStep) return; // changed again meanwhile
  const graph = shown.graph;
  const before = state.view?.expanded;
  state.view?.destroy();
  const grouping = byId<HTMLSelectElement>('grouping').value;
  const stats = () => {
    const t = graph.totals;
    const sampled = shown.requests < shown.matrix ? ` (a sample of ${shown.matrix} requests)` : '';
    const folded = view.drawn.nodes.filter((n) => n.kind === 'namespace').length;
    const o = observed?.summary;
    byId('graph-stats').textContent =
      `${shown.label}: ${graph.nodes.length} nodes, ${graph.edges.length} edges from ${shown.requests} requests${sampled}; ` +
      `${t.passthrough} to PassthroughCluster, ${t.denied} denied, ${t.mtls} over mTLS` +
      (folded > 0 ? `; ${folded} namespaces folded` : '') +
      (o ? `; observed: ${o.explained} series explained, ${o.drift} drift, ${o.untraced} not traced` : '');
  };
  const view: GraphView = new GraphView(
    byId('graph'),
    graph,
    {
      select: (node, edges) => {
        if (!node) return;
        fill(byId('details-out'), nodeDetails(node, edges));
        selectTab('details');
      },
      selectEdge: (edge) => {
        fill(byId('details-out'), edgeDetails(edge, view.membersOf(edge), observed?.seconds));
        selectTab('details');
      },
      namespace: (namespace, mode) => {
        if (mode) status(`${namespace}: ${mode.mode}${mode.why ? `; ${mode.why}` : ''}`);
      },
      expanded: () => {
        view.setEdgeFilter(byId<HTMLSelectElement>('edges').value as EdgeFilter);
        stats();
      },
    },
    {
      changed: shown.changed,
      ...(observed ? { observed } : {}),
      expanded: grouping === 'workloads' ? 'all' : new Set(before === 'all' || !before ? [] : before),
    },
  );
  state.view = view;
  view.setLabels(byId<HTMLInputElement>('labels').checked);
  view.setEdgeFilter(byId<HTMLSelectElement>('edges').value as EdgeFilter);
  stats();
  document.body.dataset['mode'] = state.mode;
  if (view.partial)
    status(
      `${graph.nodes.length} nodes: edges are drawn for the node tapped, the namespace picked or the request traced; an orange ring marks who sends out of the mesh`,
    );
  view.cy.one('render', () => {
    performance.mark('kfmesh:first-frame');
    requestAnimationFrame(() => {
      window.kfmesh = {
        view,
        ready: {
          mode: state.mode,
          interactiveMs: performance.now(),
          nodes: graph.nodes.length,
          edges: graph.edges.length,
          drawnNodes: view.cy.nodes('[kind]').length,
          drawnEdges: view.cy.edges().length,
        },
      };
      document.body.dataset['graphReady'] = state.mode;
    });
  });
}

/** The mode on the buttons and in the address (`#ambient`, so that a link opens that mode). */
function showMode(): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('.modes button'))
    button.setAttribute('aria-pressed', String(button.dataset['mode'] === state.mode));
  history.replaceState(null, '', state.mode === 'sidecar' ? location.pathname : `#${state.mode}`);
  byId('plan-bar').hidden = state.mode !== 'plan';
}

async function setMode(mode: Mode): Promise<void> {
  if (mode === state.mode) return;
  state.mode = mode;
  delete document.body.dataset['graphReady'];
  showMode();
  byId<HTMLSelectElement>('namespace').value = '';
  await drawGraph();
  if (state.lastTrace) await trace(state.lastTrace);
  if (!byId('tab-objects').hidden) void showOwner();
}

async function trace(params: Record<string, string | string[]>): Promise<void> {
  state.lastTrace = params;
  status('tracing…');
  try {
    const result = await get('/api/trace', { ...params, mode: state.mode });
    const shown = state.view?.showPath(result.path).length ?? 0;
    fill(byId('trace-out'), traceResult(result, shown));
    hopKeys(result.hops.map((h) => `${h.namespace}/${h.workload}`));
    status(`traced in ${state.mode} mode: ${result.summary}`);
  } catch (error) {
    fill(byId('trace-out'), el('p', { class: 'warning', 'data-testid': 'trace-error' }, messageOf(error)));
    failed(error);
  }
}

/**
 * The hop table by keyboard: each hop's row takes the focus (Tab, or the arrow keys from one to the next),
 * its proxy is marked on the graph, and Enter opens or closes its details.
 */
function hopKeys(nodes: readonly string[]): void {
  const rows = [...document.querySelectorAll<HTMLTableRowElement>('[data-testid="hop-table"] tbody tr')];
  rows.forEach((row, i) => {
    row.tabIndex = 0;
    row.addEventListener('focus', () => state.view?.markHop(nodes[i]));
    row.addEventListener('keydown', (event) => {
      const next =
        event.key === 'ArrowDown' ? rows[i + 1] : event.key === 'ArrowUp' ? rows[i - 1] : undefined;
      if (next) next.focus();
      else if (event.key === 'Enter') {
        const details = row.querySelector('details');
        if (details) details.open = !details.open;
      } else return;
      event.preventDefault();
    });
  });
}

function traceForm(): void {
  const form = byId<HTMLFormElement>('trace-form');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const value = (id: string) => byId<HTMLInputElement>(id).value.trim();
    const headers = byId<HTMLTextAreaElement>('trace-headers')
      .value.split('\n')
      .map((h) => h.trim())
      .filter(Boolean);
    const params: Record<string, string | string[]> = {
      from: value('trace-from'),
      url: value('trace-url'),
      method: value('trace-method'),
      header: headers,
    };
    const istio = value('trace-istio');
    if (istio) params['istio'] = istio;
    void trace(params);
  });
}

async function showOwner(): Promise<void> {
  const owner = byId<HTMLSelectElement>('owner').value;
  if (!owner) return;
  try {
    const owned = await get('/api/objects', { owner, mode: state.mode });
    fill(
      byId('objects-out'),
      yamlBlock(
        `${owned.count} objects of ${owner.replace('//', '/')} in ${owned.mode} mode`,
        owned.yaml,
        'objects-yaml',
      ),
    );
  } catch (error) {
    failed(error);
  }
}

async function showFindings(): Promise<void> {
  const findings = await get('/api/findings');
  const s = findings.summary;
  const tab = document.querySelector<HTMLButtonElement>('.tabs button[data-tab="findings"]');
  if (tab) tab.textContent = `Findings (${s.findings})`;
  fill(
    byId('findings-out'),
    el(
      'p',
      {},
      `${s.error} errors, ${s.warning} warnings, ${s.info} notes (analyzer on the platform as given)`,
    ),
    findingsList(findings.findings, {
      showInGraph: (f) => {
        if (f.traffic) {
          const shown = state.view?.showEdge(f.traffic.source, f.traffic.target) ?? false;
          status(
            shown
              ? `${f.code}: the observed edge ${f.traffic.source} → ${f.traffic.target} selected`
              : `${f.code}: the edge ${f.traffic.source} → ${f.traffic.target} is not on this graph`,
          );
          return;
        }
        const namespace = f.object.namespace ?? '';
        const n = state.view?.showNamespace(namespace) ?? 0;
        state.view?.fit();
        status(`${f.code}: ${n} nodes of namespace ${namespace || '(cluster)'} marked on the graph`);
      },
      showObject: (f) => {
        const ref = f.object;
        get('/api/object', {
          group: ref.group,
          kind: ref.kind,
          namespace: ref.namespace ?? '',
          name: ref.name,
        }).then((object) => {
          fill(
            byId('objects-out'),
            yamlBlock(
              `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}${object.location ? ` (${object.location})` : ''}`,
              object.hidden.length > 0
                ? `# not shown: ${object.hidden.join('; ')}\n${object.yaml}`
                : object.yaml,
              'object-yaml',
            ),
          );
          selectTab('objects');
        }, failed);
      },
    }),
  );
}

/** The tabs, the mode buttons and the plan's step slider. */
function controls(): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('.tabs button'))
    button.addEventListener('click', () => {
      const tab = button.dataset['tab'] ?? 'tracer';
      selectTab(tab);
      if (tab === 'objects' && !byId('objects-out').hasChildNodes()) void showOwner();
    });
  for (const button of document.querySelectorAll<HTMLButtonElement>('.modes button'))
    button.addEventListener('click', () => {
      const mode = button.dataset['mode'];
      setMode(mode === 'ambient' || mode === 'plan' ? mode : 'sidecar').catch(failed);
      if (mode === 'plan') selectTab('plan');
    });
  const slider = byId<HTMLInputElement>('plan-step');
  slider.addEventListener('input', () => void showStep(Number(slider.value)));
}

/** The graph's toolbar (search, namespace, grouping, edges, labels, fit, clear) and its keyboard. */
function graphToolbar(): void {
  const search = byId<HTMLInputElement>('search');
  search.addEventListener('input', () => {
    const found = state.view?.search(search.value) ?? 0;
    byId('search-count').textContent = search.value ? `${found} found` : '';
  });
  search.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') state.view?.fit();
  });
  byId('namespace').addEventListener('change', () =>
    state.view?.filterNamespace(byId<HTMLSelectElement>('namespace').value),
  );
  byId('grouping').addEventListener('change', () =>
    state.view?.setGrouping(
      byId<HTMLSelectElement>('grouping').value === 'workloads' ? 'workloads' : 'namespaces',
    ),
  );
  byId('widen').addEventListener('click', () => {
    const wide = document.body.classList.toggle('wide');
    byId('widen').setAttribute('aria-pressed', String(wide));
  });
  byId('edges').addEventListener('change', () =>
    state.view?.setEdgeFilter(byId<HTMLSelectElement>('edges').value as EdgeFilter),
  );
  byId('fit').addEventListener('click', () => state.view?.fit());
  byId('labels').addEventListener('change', () =>
    state.view?.setLabels(byId<HTMLInputElement>('labels').checked),
  );
  byId('graph').addEventListener('keydown', (event) => {
    const forward = event.key === 'ArrowRight' || event.key === 'ArrowDown';
    if (forward || event.key === 'ArrowLeft' || event.key === 'ArrowUp')
      state.view?.stepEdge(forward ? 1 : -1);
    else if (event.key === 'Escape') state.view?.clearFocus();
    else return;
    event.preventDefault();
  });
  byId('clear').addEventListener('click', () => {
    search.value = '';
    byId('search-count').textContent = '';
    state.view?.clearFocus();
  });
}

async function main(): Promise<void> {
  controls();
  traceForm();
  showMode();

  status('loading…');
  performance.mark('kfmesh:start');
  if (state.mode === 'plan') selectTab('plan');
  else void graphOf(state.mode);
  const summary = await get('/api/summary');
  performance.mark('kfmesh:summary');
  state.summary = summary;
  byId('source').textContent =
    `${summary.source}: ${summary.objects} objects, ${summary.inferenceServices.length} InferenceServices, ${summary.profiles.length} Profiles` +
    (summary.observed ? `; observed: ${summary.observed}` : '');
  if (summary.observed) document.body.classList.add('observing');
  const clients = byId('clients');
  fill(clients, ...['external', ...summary.clients].map((c) => el('option', { value: c })));
  const [major, newest] = summary.newestIstio.split('.').map(Number) as [number, number];
  const oldest = Number(summary.oldestIstio.split('.')[1]);
  fill(
    byId('trace-istio'),
    el('option', { value: '', title: `from ${summary.istioFrom}` }, `${summary.istio} (the console's)`),
    ...Array.from({ length: newest - oldest + 1 }, (_, i) => `${major}.${newest - i}`).map((v) =>
      el('option', { value: v }, v),
    ),
  );
  fill(
    byId('namespace'),
    el('option', { value: '' }, 'All namespaces'),
    ...summary.namespaces.map((ns) => el('option', { value: ns }, ns)),
  );
  fill(
    byId('owner'),
    ...summary.inferenceServices.map((isvc) =>
      el('option', { value: `InferenceService/${isvc}` }, `InferenceService ${isvc}`),
    ),
    ...summary.profiles.map((p) => el('option', { value: `Profile//${p}` }, `Profile ${p}`)),
  );
  byId('owner').addEventListener('change', () => void showOwner());
  byId('migration').addEventListener('click', () => {
    get('/api/migration').then((report) => fill(byId('objects-out'), migrationReport(report)), failed);
  });

  if (state.mode !== 'plan') await graphOf(state.mode);
  performance.mark('kfmesh:graph-data');
  await drawGraph();
  performance.mark('kfmesh:graph-drawn');
  graphToolbar();
  if (!state.view?.partial) status('ready');
  await showFindings();
}

main().catch(failed);

/** What a thrown value says (anything can be thrown). */
function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

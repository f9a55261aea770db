/**
 * A plan as files: for each step the objects to create (`NN-step.yaml`, for `kubectl apply --server-side`),
 * the objects to delete (`NN-step.delete.yaml`), the same for its undo, `plan.json` with every operation,
 * and `plan.md`: what each step changes, its commands, what to check before going on, how to undo it,
 * and what kfmesh found when it simulated the state after it.
 */
import { serialize, OutputFormat } from '../load/serialize.ts';
import { describeRef, refOf, type KubeObject, type ObjectRef } from '../model/object.ts';
import { Label, Group } from '../model/vocabulary.ts';
import type { MatrixRequest } from '../verify/equivalence.ts';
import { describeOutcome } from '../verify/equivalence.ts';
import type { MigrationPlan, PlanStep } from './plan.ts';
import type { Prerequisites } from './prerequisites.ts';
import { NamespaceStanding, namespaceStanding } from '../model/sidecar.ts';
import type { OrderChoice } from './order.ts';
import type { PlanCheck, StateCheck } from './simulate.ts';
import { Stage } from './stages.ts';
import type { Operation, PatchOp, WorkloadRef } from './state.ts';

/** One file of a plan: its path in the plan's folder and its text. */
export interface PlanFile {
  path: string;
  text: string;
}

/** The field manager the plan's server-side applies use. */
export const fieldManager = 'kfmesh-migration';

/** Every file of a plan, `plan.md` first. */
export function planFiles(plan: MigrationPlan, choice: OrderChoice, check: PlanCheck): PlanFile[] {
  const files: PlanFile[] = [];
  for (const step of plan.steps) {
    for (const [suffix, ops] of [
      ['', step.operations],
      ['.undo', step.undo],
    ] as const) {
      const applied = ops.flatMap((o) => (o.op === 'apply' ? [o.object] : []));
      const deleted = ops.flatMap((o) => (o.op === 'delete' ? [deletable(o.ref, o.apiVersion)] : []));
      if (applied.length > 0)
        files.push({ path: `${step.id}${suffix}.yaml`, text: serialize(applied, OutputFormat.Yaml) });
      if (deleted.length > 0)
        files.push({ path: `${step.id}${suffix}.delete.yaml`, text: serialize(deleted, OutputFormat.Yaml) });
    }
  }
  files.push({ path: 'plan.json', text: `${JSON.stringify(planJson(plan, choice, check), null, 2)}\n` });
  return [
    { path: 'plan.md', text: planMarkdown(plan, choice, check) },
    ...files.sort((a, b) => (a.path < b.path ? -1 : 1)),
  ];
}

function planJson(plan: MigrationPlan, choice: OrderChoice, check: PlanCheck) {
  return {
    groups: plan.groups,
    errors: check.errors,
    brokenFlows: check.brokenFlows,
    windows: check.windows,
    badUndos: check.badUndos,
    prerequisites: check.prerequisites,
    orderCosts: choice.costs.map((c) => ({ first: c.first, then: c.then, requests: c.requests })),
    steps: plan.steps.map((step) => {
      const state = check.states[step.number - 1];
      return {
        number: step.number,
        id: step.id,
        stage: step.stage,
        namespaces: step.namespaces,
        operations: step.operations,
        undo: step.undo,
        ...(state
          ? {
              simulated: {
                requests: state.result.requests,
                errors: state.result.errors,
                warnings: state.result.warnings,
                notes: state.result.notes,
                probesFailed: state.probes.failed,
                flowsBroken: state.probes.flows.broken,
                probesOpened: state.probes.opened,
                undoIdentical: state.undo.identical,
              },
            }
          : {}),
      };
    }),
  };
}

/** An object to delete, as `kubectl delete -f` takes it: its apiVersion, kind, name and namespace. */
function deletable(ref: ObjectRef, apiVersion: string): KubeObject {
  return {
    apiVersion,
    kind: ref.kind,
    metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) },
  };
}

// ---- plan.md ----

/** Each stage's title, as plan.md and the console show it. */
export const stageTitles: Record<Stage, string> = {
  [Stage.Prerequisites]: 'Prerequisites',
  [Stage.MeshConfig]: 'Sidecars accept HBONE',
  [Stage.Gateways]: 'New gateways beside the old ones',
  [Stage.Prepare]: 'Waypoints and policies in their new form, beside the old',
  [Stage.UseWaypoint]: 'Services use their waypoint',
  [Stage.Ambient]: 'Namespace labelled ambient',
  [Stage.Injection]: 'Sidecar injection off',
  [Stage.Restart]: 'Pods restart without sidecars',
  [Stage.Cleanup]: 'Policies in their final form, sidecar-only objects gone',
  [Stage.PlatformCleanup]: 'The old gateways and their routes go',
};

const stageAbout: Record<Stage, string> = {
  [Stage.Prerequisites]:
    'Nothing changes. Ambient mode needs ztunnel and the Istio CNI node agent on every node, and the Gateway API CRDs; check them before the first step.',
  [Stage.MeshConfig]:
    'The mesh config turns HBONE on for sidecars, and the sidecar workloads restart to get it: from then on clients that moved to ambient reach pods that still run sidecars with their identity, not in plaintext.',
  [Stage.Gateways]:
    'The new Gateway API gateways, their routes and policies, and mesh-wide objects are added; the old gateways keep serving. Identities of the new gateways are admitted by the policies that admitted the old ones. Point DNS or the load balancer at the new gateways before the last step.',
  [Stage.Prepare]:
    'Waypoints are deployed; policies that move to a waypoint (`targetRefs`) are added in their new form under a name of their own, beside the old form, so they are enforced in every state; the rules ztunnel enforces are added; pods that stay out of ambient say so now, since the CNI enrols running pods as soon as their namespace is labelled.',
  [Stage.UseWaypoint]:
    'Services (or the namespace) are labelled to use their waypoint. Clients that still run sidecars skip waypoints; ambient clients now go through them.',
  [Stage.Ambient]:
    'The namespace is labelled ambient. Pods with sidecars keep them until they restart (the sidecar takes precedence); pods without one are enrolled now.',
  [Stage.Injection]: 'Sidecar injection is turned off for the namespace; running pods keep their sidecars.',
  [Stage.Restart]:
    'The pods restart and come back without sidecars, in ambient mode. Pod templates the migration changes are patched here, which rolls them out by itself.',
  [Stage.Cleanup]:
    'Policies take their final form under their own names and the copies go; objects only sidecars read (Sidecar, EnvoyFilter, DestinationRules that only set ISTIO_MUTUAL) are deleted.',
  [Stage.PlatformCleanup]:
    'Once traffic arrives through the new gateways, the old Istio Gateways and the VirtualServices bound to them are deleted, and what else the migration changes outside the namespaces that moved.',
};

/** plan.md: the order and why, every step with its commands, checks, undo and simulated result, the windows. */
export function planMarkdown(plan: MigrationPlan, choice: OrderChoice, check: PlanCheck): string {
  const lines: string[] = ['# Migration plan to ambient mode', ''];
  const last = check.states.at(-1);
  lines.push(
    `${plan.steps.length} steps; namespaces that move: ${plan.groups.map((g) => g.join(' + ')).join(', then ') || 'none'}.`,
    '',
    `Every state between the steps was simulated and compared with the start (${last?.result.requests ?? 0} requests of the matrix and the probes of what controllers create next, per state): ` +
      `**${check.errors} ${check.errors === 1 ? 'error' : 'errors'}** (a request denied at the start and answered in some state), ` +
      `**${check.brokenFlows} broken ${check.brokenFlows === 1 ? 'flow' : 'flows'}** (a flow of the platform that works at the start and not in some state), ` +
      `**${check.windows.reduce((n, w) => n + w.count, 0)} requests in outage windows** (answered at the start, refused in some state, answered again later), ` +
      `and ${check.badUndos.length === 0 ? 'every undo gives back the state before its step' : `the undo of steps ${check.badUndos.join(', ')} does not give back the state before them`}.`,
    '',
    'Apply a step, check it, then go on. Objects to create are applied server-side; objects that exist are changed with JSON patches, which change exactly what differs (a server-side apply cannot remove what another field manager set).',
    '',
  );
  lines.push(...standingSection(plan));
  lines.push(...orderSection(plan, choice));
  if (check.windows.length > 0) lines.push(...windowsSection(check));
  for (const step of plan.steps)
    lines.push(
      ...stepSection(step, check.states[step.number - 1], check.prerequisites),
      ...(step.stage === Stage.Prerequisites ? prerequisitesFound(check) : []),
    );
  lines.push(...endSection(last));
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n')}\n`;
}

/** Where each namespace in the mesh stands at the start, and at the end. */
function standingSection(plan: MigrationPlan): string[] {
  const [start, end] = [plan.states[0], plan.states.at(-1)];
  const standing = (objects: Iterable<KubeObject> | undefined, name: string) => {
    const ns = [...(objects ?? [])].find((o) => o.kind === 'Namespace' && o.metadata.name === name);
    return namespaceStanding(ns?.metadata.labels ?? {});
  };
  const rows = [...(start?.objects.values() ?? [])]
    .filter((o) => o.kind === 'Namespace')
    .map((o) => o.metadata.name ?? '')
    .sort()
    .map((name) => ({
      name,
      was: standing(start?.objects.values(), name),
      now: standing(end?.objects.values(), name),
    }))
    .filter((r) => r.was !== NamespaceStanding.Outside || r.now !== NamespaceStanding.Outside);
  if (rows.length === 0) return [];
  return [
    '## Where each namespace stands',
    '',
    '| namespace | at the start | at the end |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${r.was} | ${r.now} |`),
    '',
  ];
}

function orderSection(plan: MigrationPlan, choice: OrderChoice): string[] {
  const lines = ['## Order', ''];
  if (plan.groups.length === 0) return [...lines, 'No namespace moves.', ''];
  lines.push(
    'The order was chosen by tracing each namespace moved alone against the start: moving one before another costs the requests between them that break until the other moves (and work again at the end).',
    '',
  );
  if (choice.costs.length === 0)
    lines.push(
      'No namespace breaks another while one has moved and the other not, so they move one at a time.',
      '',
    );
  else {
    lines.push('| first | then | requests broken in between | for example |', '|---|---|---|---|');
    for (const c of choice.costs)
      lines.push(
        `| ${c.first} | ${c.then} | ${c.requests} | ${requestText(c.example.request)}: ${describeOutcome(c.example.before)} → ${describeOutcome(c.example.after)} |`,
      );
    lines.push('');
    const together = plan.groups.filter((g) => g.length > 1);
    if (together.length > 0)
      lines.push(
        `Where both orders of two namespaces break requests, no order of them is safe, so they move together, one step per stage for all: ${together.map((g) => g.join(' + ')).join('; ')}.`,
        '',
      );
  }
  return lines;
}

function windowsSection(check: PlanCheck): string[] {
  const lines = [
    '## Outage windows',
    '',
    'Requests answered at the start that are refused (or answered by another application) from one step to another, and answered again after it:',
    '',
    '| from step | to step | requests | what happens | for example |',
    '|---|---|---|---|---|',
  ];
  for (const w of check.windows)
    lines.push(
      `| ${w.from} | ${w.to} | ${w.count} | ${w.cause} | ${w.examples[0] ? requestText(w.examples[0]) : ''} |`,
    );
  return [...lines, ''];
}

/** What the input says of the prerequisites, and what in it blocks ambient mode (the first step fails). */
function prerequisitesFound(check: PlanCheck): string[] {
  const { found, blocking } = check.prerequisites;
  const lines = ['What the input shows:', '', ...found.map((f) => `- ${f}`)];
  lines.push(
    '- kfmesh does not read CustomResourceDefinitions: the first command above checks the Gateway API ones.',
    '',
  );
  if (blocking.length > 0)
    lines.push(
      `**This step fails**: ${blocking.length === 1 ? 'one thing' : `${blocking.length} things`} in the input keep${blocking.length === 1 ? 's' : ''} ambient mode from working. Fix ${blocking.length === 1 ? 'it' : 'them'} before step 2:`,
      '',
      ...blocking.map((b) => `- ${b}`),
      '',
    );
  return lines;
}

function stepSection(step: PlanStep, state: StateCheck | undefined, prerequisites: Prerequisites): string[] {
  const where = step.namespaces.length > 0 ? ` (${step.namespaces.join(', ')})` : '';
  const lines = [
    `## Step ${step.number}: ${stageTitles[step.stage]}${where}`,
    '',
    stageAbout[step.stage],
    '',
  ];
  if (step.operations.length > 0) {
    lines.push('What changes:', '');
    for (const o of step.operations) lines.push(`- ${operationText(o)}`);
    lines.push('', '```sh', ...commands(step.id, step.operations, ''), '```', '');
  }
  lines.push('Check before going on:', '', '```sh', ...checks(step, prerequisites), '```', '');
  if (state) lines.push(...simulatedText(state));
  if (step.undo.length > 0)
    lines.push('Undo:', '', '```sh', ...commands(step.id, step.undo, '.undo'), '```', '');
  return lines;
}

function simulatedText(state: StateCheck): string[] {
  const r = state.result;
  const differ = (state.undo.result?.errors ?? 0) + (state.undo.result?.warnings ?? 0);
  const undo = state.undo.identical
    ? 'its undo gives back exactly the state before it'
    : differ === 0
      ? 'its undo gives back a state that answers every request as the one before it (restarted pods are new pods)'
      : `its undo gives back a state that answers ${differ} requests otherwise than the one before it`;
  return [
    `Simulated after this step, against the start: ${r.requests} requests, ${r.unchanged} unchanged; ${r.errors} errors, ${r.warnings} warnings, ${r.notes} notes; ` +
      `${state.probes.probes} probes, ${state.probes.failed} failed (${state.probes.opened} opening access); ${state.probes.flows.flows} flows of the platform, ${state.probes.flows.broken} broken; ${undo}.`,
    '',
  ];
}

function endSection(last: StateCheck | undefined): string[] {
  if (!last) return [];
  const lines = [
    '## At the end',
    '',
    `The last state is the migration's result (\`kfmesh migrate --to ambient\`). Against the start: ${last.result.errors} errors, ${last.result.warnings} warnings, ${last.result.notes} notes. The largest changes:`,
    '',
  ];
  for (const g of last.result.groups.slice(0, 8))
    lines.push(`- ${g.severity}: ${g.count} request(s): ${g.cause}`);
  return [...lines, ''];
}

/** An operation in words. */
export function operationText(o: Operation): string {
  if (o.op === 'apply') return `create ${describeRef(refOf(o.object))}`;
  if (o.op === 'delete') return `delete ${describeRef(o.ref)}`;
  if (o.op === 'restart') return `restart ${o.workload.kind} ${o.workload.namespace}/${o.workload.name}`;
  return `change ${describeRef(o.ref)}: ${o.patch.map((p) => `${p.op} ${p.path}`).join(', ')}`;
}

/** The commands of a list of operations: creations and deletions by file, patches and restarts one by one. */
function commands(id: string, ops: readonly Operation[], suffix: string): string[] {
  const out: string[] = [];
  let applied = false;
  let deleted = false;
  for (const o of ops) {
    if (o.op === 'apply' && !applied) {
      applied = true;
      out.push(`kubectl apply --server-side --field-manager=${fieldManager} -f ${id}${suffix}.yaml`);
    } else if (o.op === 'delete' && !deleted) {
      deleted = true;
      out.push(`kubectl delete --ignore-not-found -f ${id}${suffix}.delete.yaml`);
    } else if (o.op === 'patch') out.push(patchCommand(o.ref, o.patch));
    else if (o.op === 'restart') out.push(restartCommand(o.workload));
  }
  return out;
}

function resource(ref: ObjectRef): string {
  const kind = ref.kind.toLowerCase();
  return ref.group === '' ? kind : `${kind}.${ref.group}`;
}

function namespaceFlag(ref: ObjectRef): string {
  return ref.namespace ? `-n ${ref.namespace} ` : '';
}

/** A patch as `kubectl label` when it only sets or removes labels, else `kubectl patch --type=json`. */
function patchCommand(ref: ObjectRef, ops: readonly PatchOp[]): string {
  const prefix = '/metadata/labels/';
  // `kubectl label` creates the map of labels where there is none.
  const newMap = ops.find((p) => p.op === 'add' && p.path === '/metadata/labels');
  const patch = newMap && ops.some((p) => p.path.startsWith(prefix)) ? ops.filter((p) => p !== newMap) : ops;
  const labels = patch.every(
    (p) => p.path.startsWith(prefix) && (p.op === 'add' || p.op === 'replace' || p.op === 'remove'),
  );
  if (labels) {
    const args = patch.map((p) => {
      const key = p.path.slice(prefix.length).replaceAll('~1', '/').replaceAll('~0', '~');
      return p.op === 'remove' ? `${key}-` : `${key}=${String((p as { value: unknown }).value)}`;
    });
    return `kubectl ${namespaceFlag(ref)}label --overwrite ${resource(ref)} ${ref.name} ${args.join(' ')}`;
  }
  return `kubectl ${namespaceFlag(ref)}patch ${resource(ref)} ${ref.name} --type=json -p '${JSON.stringify(ops).replaceAll("'", "'\\''")}'`;
}

function restartCommand(w: WorkloadRef): string {
  return `kubectl -n ${w.namespace} rollout restart ${w.kind.toLowerCase()}/${w.name}`;
}

/** What to check after a step, as commands. */
function checks(step: PlanStep, prerequisites: Prerequisites): string[] {
  const out: string[] = [];
  if (step.stage === Stage.Prerequisites)
    out.push(
      'kubectl get crd gateways.gateway.networking.k8s.io httproutes.gateway.networking.k8s.io',
      // Where the input runs each node agent (Istio's namespace when it has none).
      ...prerequisites.agents.map(
        (a) => `kubectl -n ${a.namespace ?? 'istio-system'} rollout status daemonset/${a.name}`,
      ),
      'istioctl version',
    );
  for (const o of step.operations) {
    if (o.op === 'apply' && o.object.kind === 'Gateway' && o.object.apiVersion.startsWith(Group.GatewayApi))
      out.push(
        `kubectl -n ${o.object.metadata.namespace ?? 'default'} wait --for=condition=Programmed --timeout=5m gateway.gateway.networking.k8s.io/${o.object.metadata.name ?? ''}`,
      );
    if (o.op === 'restart')
      out.push(
        `kubectl -n ${o.workload.namespace} rollout status ${o.workload.kind.toLowerCase()}/${o.workload.name}`,
      );
  }
  for (const ns of step.namespaces) {
    if (step.stage === Stage.UseWaypoint) out.push(`kubectl -n ${ns} get services -L ${Label.UseWaypoint}`);
    if (step.stage === Stage.Ambient || step.stage === Stage.Injection)
      out.push(`kubectl get namespace ${ns} --show-labels`);
    if (step.stage === Stage.Restart || step.stage === Stage.Ambient)
      out.push(`istioctl ztunnel-config workloads --workload-namespace ${ns}`);
  }
  if (step.stage === Stage.Gateways)
    out.push("# then point DNS or the load balancer at the new gateways' Services (<gateway>-istio)");
  if (out.length === 0) out.push('# nothing beyond the commands above succeeding');
  return out;
}

/** A request in one line. */
export function requestText(r: MatrixRequest): string {
  return `${r.method} ${r.url}${r.pod ? ` (pod of ${r.pod})` : ''} from ${r.from}`;
}

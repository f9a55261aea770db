/** `kfmesh migrate --to ambient --plan DIR`: the migration as steps, every state simulated, written as files. */
import { GroupKind } from '../model/vocabulary.ts';
import { messageOf } from '../model/errors.ts';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Snapshot } from '../load/snapshot.ts';
import { planMigration } from '../plan/order.ts';
import { checkPlan } from '../plan/simulate.ts';
import { planFiles, type PlanFile } from '../plan/plan-files.ts';
import { ExitCode, UsageError, type Streams } from './io.ts';

export interface PlanFlags {
  plan: string;
  namespace?: string[];
  clusterDomain: string;
}

/**
 * Plans the migration, simulates every state and every undo, and writes the plan's files into DIR, which
 * must not exist or be empty; the files appear all at once (written beside it, then renamed into place).
 * Exit 1 when some state opens access.
 */
export async function writePlan(snapshot: Snapshot, flags: PlanFlags, streams: Streams): Promise<ExitCode> {
  await checkTarget(flags.plan);
  const known = new Set(snapshot.list(GroupKind.Namespace).map((n) => n.metadata.name ?? ''));
  for (const ns of flags.namespace ?? [])
    if (!known.has(ns)) throw new UsageError(`--namespace ${ns}: no such Namespace in the input`);
  const progress = (message: string) => streams.stderr(`kfmesh: ${message}\n`);
  progress('choosing the order of the namespaces (each traced alone)');
  const plan = planMigration(snapshot, {
    clusterDomain: flags.clusterDomain,
    ...(flags.namespace ? { namespaces: flags.namespace } : {}),
    onProgress: (m) => progress(`  tracing ${m}`),
  });
  const planned = new Set(plan.groups.flat());
  for (const ns of flags.namespace ?? [])
    if (!planned.has(ns))
      throw new UsageError(
        `--namespace ${ns}: the migration does not move it to ambient (it is not in the mesh, or stays in sidecar mode: see kfmesh migrate --report)`,
      );
  const check = checkPlan(plan, {
    clusterDomain: flags.clusterDomain,
    onProgress: (step, total) => progress(`simulating the state after step ${step} of ${total}`),
  });
  await writeFolder(flags.plan, planFiles(plan, plan.choice, check));
  const windowed = check.windows.reduce((n, w) => n + w.count, 0);
  const blocking = check.prerequisites.blocking.length;
  streams.stderr(
    `kfmesh: planned ${plan.steps.length} steps in ${flags.plan} (see ${join(flags.plan, 'plan.md')}): ` +
      `every state simulated: ${check.errors} errors, ${check.brokenFlows} broken flows, ${windowed} requests in outage windows, ` +
      `${check.badUndos.length} steps whose undo differs` +
      (blocking > 0
        ? `; step 1 fails: ${blocking} thing${blocking > 1 ? 's' : ''} in the input block${blocking > 1 ? '' : 's'} ambient mode`
        : '') +
      '\n',
  );
  return check.errors > 0 || check.brokenFlows > 0 || blocking > 0 ? ExitCode.CheckFailed : ExitCode.Ok;
}

/** DIR must not exist, or be an empty folder. */
async function checkTarget(dir: string): Promise<void> {
  const entries = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    if (error.code === 'ENOTDIR') throw new UsageError(`--plan ${dir}: exists and is not a folder`);
    throw new UsageError(`--plan ${dir}: ${error.message}`);
  });
  if (entries && entries.length > 0) throw new UsageError(`--plan ${dir}: exists and is not empty`);
}

/** Writes the files into a folder beside DIR, then renames it into place: DIR gets all of them or none. */
async function writeFolder(dir: string, files: readonly PlanFile[]): Promise<void> {
  const temporary = join(dirname(dir), `.${basename(dir)}.${process.pid}.tmp`);
  try {
    await mkdir(temporary, { recursive: true });
    for (const f of files) await writeFile(join(temporary, f.path), f.text);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    await rename(temporary, dir);
  } catch (error) {
    await rm(temporary, { recursive: true, force: true }).catch(() => undefined);
    throw new UsageError(`--plan ${dir}: ${messageOf(error)}`);
  }
}

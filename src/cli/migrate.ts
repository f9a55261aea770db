/** `kfmesh migrate --to ambient`: prints the converted configuration and writes the report. */
import { messageOf } from '../model/errors.ts';
import { lstat, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { OutputFormat, serialize } from '../load/serialize.ts';
import { migrateToAmbient } from '../ambient/migrate.ts';
import { writePlan } from './plan.ts';
import { reportToJson, reportToMarkdown, summarize } from '../ambient/migration-report.ts';
import {
  ExitCode,
  oneOf,
  runCommand,
  snapshotFrom,
  UsageError,
  type ClusterFlags,
  type Streams,
} from './io.ts';

/** Options of `kfmesh migrate` as parsed from the command line. */
export interface MigrateFlags extends ClusterFlags {
  to?: string;
  output: string;
  report?: string;
  plan?: string;
  namespace?: string[];
  clusterDomain: string;
}

/**
 * Runs `kfmesh migrate`. The report goes to `--report FILE` (JSON when the name ends in `.json`, Markdown
 * otherwise), whole or not at all (`writeWhole`).
 */
export function migrateCommand(paths: string[], flags: MigrateFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    if (flags.to === undefined) throw new UsageError('--to is required: kfmesh migrate --to ambient');
    oneOf('--to', flags.to, ['ambient']);
    const format = oneOf('-o', flags.output, Object.values(OutputFormat));
    if (flags.namespace !== undefined && flags.plan === undefined)
      throw new UsageError('--namespace plans one namespace at a time: give --plan DIR too');
    if (flags.plan !== undefined && flags.report !== undefined)
      throw new UsageError('--plan writes its own report (DIR/plan.md): leave out --report');
    const snapshot = await snapshotFrom(paths, streams, flags);
    if (flags.plan !== undefined)
      return writePlan(
        snapshot,
        {
          plan: flags.plan,
          clusterDomain: flags.clusterDomain,
          ...(flags.namespace ? { namespace: flags.namespace } : {}),
        },
        streams,
      );
    const { objects, report } = migrateToAmbient(snapshot, { clusterDomain: flags.clusterDomain });
    const output = serialize(objects, format);
    if (flags.report !== undefined) {
      const text = flags.report.endsWith('.json') ? reportToJson(report) : reportToMarkdown(report);
      try {
        await writeWhole(flags.report, text);
      } catch (error) {
        throw new UsageError(`--report ${flags.report}: ${messageOf(error)}`);
      }
    }
    streams.stdout(output);
    const counts = summarize(report);
    streams.stderr(
      `kfmesh: migrated ${counts['objects']} objects: ${counts['converted']} converted, ${counts['changed']} changed, ` +
        `${counts['removed']} removed, ${counts['added']} added; ${counts['dropped']} dropped fields, ` +
        `${counts['actions']} things need a person${flags.report ? ` (see ${flags.report})` : ' (--report FILE lists them)'}\n`,
    );
    return ExitCode.Ok;
  });
}

/**
 * Writes a file whole: a regular file (or a new one) through a temporary file beside it, renamed over it,
 * so a failed run leaves neither half a file nor the temporary one; anything else (a symlink, a pipe, a
 * device such as /dev/stdout) is written in place, since a rename would replace it rather than write to it.
 */
export async function writeWhole(file: string, text: string): Promise<void> {
  const info = await lstat(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (info && !info.isFile()) {
    await writeFile(file, text);
    return;
  }
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  try {
    await writeFile(temporary, text, { mode: info ? info.mode & 0o777 : 0o666 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => undefined);
    throw error;
  }
}

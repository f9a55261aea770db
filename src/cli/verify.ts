/** `kfmesh verify --equivalence BEFORE AFTER`: what a change of configuration does to every request. */
import { OutputFormat } from '../model/serialize.ts';
import { checkEquivalence, type EquivalenceResult, type MatrixRequest } from '../verify/equivalence.ts';
import { ExitCode, oneOf, runCommand, snapshotFromPath, UsageError, type Streams } from './io.ts';

/** Options of `kfmesh verify` as parsed from the command line. */
export interface VerifyFlags {
  equivalence?: boolean;
  cases?: string;
  output: string;
  clusterDomain: string;
}

/** Runs `kfmesh verify`. Exit 1 when a request denied before is allowed after. */
export function verifyCommand(paths: string[], flags: VerifyFlags, streams: Streams): Promise<ExitCode> {
  return runCommand(streams, async () => {
    const format = oneOf('-o', flags.output, ['text', 'json'] as const);
    if (!flags.equivalence) {
      if (flags.cases !== undefined)
        throw new UsageError(
          '--cases: request expectations are not supported by this version; use --equivalence',
        );
      throw new UsageError('say what to verify: --equivalence BEFORE AFTER');
    }
    if (paths.length !== 2)
      throw new UsageError(`--equivalence takes two paths, BEFORE and AFTER; got ${paths.length}`);
    const [before, after] = await Promise.all(paths.map((p) => snapshotFromPath(p, streams)));
    if (!before || !after) throw new UsageError('--equivalence takes two paths, BEFORE and AFTER');
    let lastShown = Date.now();
    const result = checkEquivalence(before, after, {
      clusterDomain: flags.clusterDomain,
      onProgress: (done, total) => {
        if (Date.now() - lastShown < 2000) return;
        lastShown = Date.now();
        streams.stderr(`kfmesh: traced ${done} of ${total} requests\n`);
      },
    });
    streams.stdout(
      format === OutputFormat.Json ? `${JSON.stringify(result, null, 2)}\n` : equivalenceText(result),
    );
    return result.errors > 0 ? ExitCode.CheckFailed : ExitCode.Ok;
  });
}

/** The text report: the verdict, then each group of changed requests with examples. */
export function equivalenceText(result: EquivalenceResult): string {
  const lines = [
    `${result.requests} requests traced on both configurations: ${result.unchanged} unchanged; ` +
      `${result.errors} errors (denied before, answered after), ${result.warnings} warnings, ${result.notes} notes.`,
  ];
  for (const g of result.groups) {
    lines.push('', `${g.severity}: ${g.count} request(s): ${g.cause}`);
    for (const e of g.examples) lines.push(`  - ${requestText(e.request)}`);
    if (g.count > g.examples.length) lines.push(`  - … and ${g.count - g.examples.length} more`);
  }
  lines.push(
    '',
    result.errors > 0
      ? 'NOT EQUIVALENT: the change opens access.'
      : 'No request denied before is allowed after.',
  );
  return `${lines.join('\n')}\n`;
}

function requestText(r: MatrixRequest): string {
  const headers = Object.entries(r.headers)
    .map(([k, v]) => ` -H '${k}: ${k === 'authorization' ? 'Bearer …' : v}'`)
    .join('');
  return `${r.method} ${r.url} from ${r.from}${headers}`;
}

#!/usr/bin/env node
/** The `kfmesh` command: parses arguments and hands each command to its module. */
import type { ServeFlags } from './serve.ts';
import { Command, CommanderError, Option } from 'commander';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { examplePlatformYaml } from '../example/platform.ts';
import { ExitCode, oneOf, printable, runCommand, type Streams } from './io.ts';
import type { AnalyzeFlags } from './analyze.ts';
import type { ExplainFlags } from './explain.ts';
import type { ControllerFlags } from './controller.ts';
import type { MigrateFlags } from './migrate.ts';
import type { RenderFlags } from './render.ts';
import type { TraceFlags } from './trace.ts';
import type { VerifyFlags } from './verify.ts';
import { version } from './version.ts';

/** `--kubeconfig` and `--context`: read a live cluster (read-only), beside or instead of files. */
function withCluster(command: Command): Command {
  return command
    .option('--kubeconfig <file>', 'read the objects of a live cluster through this kubeconfig (read-only)')
    .option('--context <name>', 'the kubeconfig context to use (default: its current context)');
}

/** The flags that give observed metrics (explain and serve). */
function withMetrics(command: Command): Command {
  return command
    .option(
      '--metrics <file>',
      "the mesh's metrics as Prometheus exposition text (/stats/prometheus, /federate)",
    )
    .option('--prometheus <url>', "a Prometheus server to ask for each series' count over --window")
    .option('--window <duration>', 'the window counted with --prometheus (a Prometheus duration)', '1h');
}

/** Builds the program; every action stores its exit code in `result`. */
// Why long: it is the table of commands and their flags, read as one surface (docs/cli.md mirrors it).
function program(streams: Streams, result: { code: ExitCode }): Command {
  const root = new Command('kfmesh')
    .description('Service-mesh control plane for Kubeflow and KServe over Istio (sidecar and ambient mode).')
    .version(version)
    .exitOverride()
    .configureOutput({ writeOut: streams.stdout, writeErr: streams.stderr })
    .showHelpAfterError('(--help shows the usage)')
    .option(
      '-v, --verbose',
      'print every note in full (each object a later file replaces, rather than their count)',
    )
    .hook('preAction', (_root, command) => {
      streams.verbose = command.optsWithGlobals<{ verbose?: boolean }>().verbose === true;
    });

  withCluster(root.command('render'))
    .description(
      'print the objects kfmesh would apply for the given state (the built-in example when no PATH)',
    )
    .argument('[paths...]', 'files or folders of YAML/JSON manifests; - reads standard input')
    .addOption(
      new Option('--mode <mode>', 'data-plane mode').choices(['sidecar', 'ambient']).default('sidecar'),
    )
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .option(
      '--no-mesh-gateway',
      'render KServe as before v0.14: InferenceService VirtualServices not bound to mesh (to compare before and after the fix)',
    )
    .action(async (paths: string[], flags: RenderFlags) => {
      const { renderCommand } = await import('./render.ts');
      result.code = await renderCommand(paths, flags, streams);
    });

  withCluster(root.command('migrate'))
    .description('convert a sidecar-mode configuration to ambient mode, and report what each object became')
    .argument('[paths...]', 'files or folders of YAML/JSON manifests; - reads standard input')
    .option('--to <mode>', 'the mode to migrate to (ambient)')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .option('--report <file>', 'write the report here: JSON when the name ends in .json, Markdown otherwise')
    .option(
      '--plan <dir>',
      'write the migration as numbered steps into this new (or empty) folder, every state between them simulated',
    )
    .option(
      '--namespace <ns>',
      'with --plan: move only this namespace (repeat for more); the others stay as they are',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .action(async (paths: string[], flags: MigrateFlags) => {
      const { migrateCommand } = await import('./migrate.ts');
      result.code = await migrateCommand(paths, flags, streams);
    });

  withCluster(root.command('analyze'))
    .description('find what is wrong: rules with stable codes, each finding located and with a fix')
    .argument('[paths...]', 'files or folders of YAML/JSON manifests; - reads standard input')
    .option('-o, --output <format>', 'text, json or sarif', 'text')
    .option(
      '--fail-on <severity>',
      'exit 1 when a finding is at or above: error, warning, info or never',
      'error',
    )
    .option('--output-threshold <severity>', 'print the findings at or above: info, warning or error', 'info')
    .option(
      '--analyzer <name>',
      'run only this rule (KFM420, or its name) or the rules answering this istioctl analyzer (repeatable)',
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option(
      '-S, --suppress <code=resource>',
      'do not report a code (KFM… or IST…) on the resources named, as in "IST0102=Namespace frod" (* matches any run; repeatable)',
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .option('--now <time>', "judge certificates' validity at this RFC 3339 time (default: the clock)")
    .option(
      '--istio-version <X.Y>',
      "the Istio version whose behaviour to simulate (default: the input's, from istiod's image)",
    )
    .action(async (paths: string[], flags: AnalyzeFlags) => {
      const { analyzeCommand } = await import('./analyze.ts');
      result.code = await analyzeCommand(paths, flags, streams);
    });

  withMetrics(withCluster(root.command('explain')))
    .description(
      'explain observed Istio metrics: each series traced back to the configuration, or reported as drift',
    )
    .argument('[paths...]', 'files or folders of YAML/JSON manifests; - reads standard input')
    .option(
      '--metrics-after <file>',
      'a later window of the same metrics: what changed, and the fix that accounts for it',
    )
    .option(
      '--istio-version <X.Y>',
      "the Istio version whose telemetry to simulate (default: the input's, from istiod's image)",
    )
    .option('-o, --output <format>', 'text or json', 'text')
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .action(async (paths: string[], flags: ExplainFlags) => {
      const { explainCommand } = await import('./explain.ts');
      result.code = await explainCommand(paths, flags, streams);
    });

  withCluster(root.command('trace'))
    .description('follow one request through the mesh: hops, rewrites, mTLS, authorization, metrics')
    .argument('[paths...]', 'files or folders of YAML/JSON manifests; - reads standard input')
    .option(
      '--from <workload>',
      'the client (required): NAMESPACE/WORKLOAD, external (through an ingress gateway), or kube-apiserver (outside the mesh, straight to the Service)',
    )
    .option('--url <url>', 'the URL the client requests (required, with --from)')
    .option('--method <method>', 'HTTP method', 'GET')
    .option(
      '-H, --header <header>',
      "a request header 'Name: value' (repeatable)",
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option(
      '--istio-version <X.Y>',
      "the Istio version whose behaviour to simulate (default: the input's, from istiod's image)",
    )
    .option('-o, --output <format>', 'text or json', 'text')
    .option(
      '--all-paths',
      'trace every destination of weighted splits, with the share of requests each takes',
    )
    .option(
      '--via <gateway>',
      'with --from external: enter through this ingress gateway (NAMESPACE/NAME of its pods or of its Gateway API Gateway)',
    )
    .option(
      '--port-forward',
      "with --from external: come in by kubectl port-forward, inside the gateway's pod, where NetworkPolicies do not apply",
    )
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .action(async (paths: string[], flags: TraceFlags) => {
      const { traceCommand } = await import('./trace.ts');
      result.code = await traceCommand(paths, flags, streams);
    });

  withCluster(root.command('verify'))
    .description(
      'check request expectations (--cases FILE), or list every outcome a change of configuration changes (--equivalence BEFORE AFTER); exit 1 when a case fails or a change opens access',
    )
    .argument(
      '[paths...]',
      'with --cases: the configuration (the built-in example when none); with --equivalence: the one before and the one after (with --kubeconfig: the cluster is before, the path after)',
    )
    .option('--equivalence', 'compare two configurations request by request')
    .option(
      '--istio-version <X.Y>',
      "the Istio version whose behaviour to simulate (default: the input's, from istiod's image)",
    )
    .option(
      '--exhaustive',
      'with --equivalence: trace every request for every client, not one client per class (slower, the same result)',
    )
    .option(
      '--no-symmetry',
      'with --equivalence: trace the requests to every namespace, not once for namespaces alike up to renaming such as Profiles (slower, the same result)',
    )
    .option(
      '--jobs <n>',
      'with --equivalence: trace the matrix in N worker threads (default: the cores available; the same report for every N)',
    )
    .option(
      '--shard <i/n>',
      'with --equivalence: trace only slice I of N (from 0) and write its part as JSON, for --merge',
    )
    .option('--part <file>', 'with --shard: write the part to FILE instead of standard output')
    .option(
      '--merge',
      'merge the parts that --shard wrote (the paths: part files, or folders of them) into the report of the whole matrix',
    )
    .option('--cases <file>', 'request expectations to check (YAML; the format is in docs/cli.md)')
    .option('-o, --output <format>', 'text or json', 'text')
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .action(async (paths: string[], flags: VerifyFlags) => {
      const { verifyCommand } = await import('./verify.ts');
      result.code = await verifyCommand(paths, flags, streams);
    });

  root
    .command('controller')
    .description(
      "keep every InferenceService's and Profile's mesh objects applied in a cluster, in the chosen mode, until SIGTERM",
    )
    .option('--kubeconfig <file>', 'the cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)')
    .option('--context <name>', 'the kubeconfig context to use')
    .addOption(
      new Option(
        '--mode <mode>',
        'the default data-plane mode (a namespace label kfmesh.io/mode overrides it)',
      )
        .choices(['sidecar', 'ambient'])
        .default('sidecar'),
    )
    .option(
      '--namespace <ns>',
      'handle only this namespace (repeatable; default: all)',
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option(
      '--metrics-bind-address <addr>',
      'serve Prometheus metrics here (HOST:PORT, :PORT, 0 = off)',
      ':8080',
    )
    .option('--health-probe-bind-address <addr>', 'serve /healthz and /readyz here (0 = off)', ':8081')
    .option('--leader-elect', 'run as one of several replicas: only the holder of a Lease reconciles')
    .option(
      '--leader-election-namespace <ns>',
      'the namespace of the Lease (default: $POD_NAMESPACE, else kfmesh-system)',
    )
    .option('--leader-election-id <name>', 'the name of the Lease', 'kfmesh-controller')
    .option(
      '--watch-timeout <seconds>',
      'how long the API server keeps a watch open before it is renewed (a stalled one is restarted after it)',
      '300',
    )
    .option('--workers <n>', 'owners reconciled at the same time', '4')
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .action(async (flags: ControllerFlags) => {
      // Loaded for this command alone (the Kubernetes client, pino and prom-client, as io.ts says).
      const { controllerCommand } = await import('./controller.ts');
      result.code = await controllerCommand(flags, streams);
    });

  withMetrics(withCluster(root.command('serve')))
    .description(
      'serve the console: the mesh as graphs of traced traffic, traces, findings, rendered objects (read-only)',
    )
    .argument(
      '[paths...]',
      'files or folders of YAML/JSON manifests, reloaded when they change (the built-in example when none)',
    )
    .option('--host <host>', 'the address to listen on', '127.0.0.1')
    .option('--port <port>', 'the port to listen on (0 picks a free one)', '8080')
    .option(
      '--istio-version <X.Y>',
      "the Istio version whose behaviour the graphs and traces simulate (default: the input's, from istiod's image)",
    )
    .option('--cluster-domain <domain>', 'the cluster domain', 'cluster.local')
    .action(async (paths: string[], flags: ServeFlags) => {
      const { serveCommand } = await import('./serve.ts');
      result.code = await serveCommand(paths, flags, streams);
    });

  root
    .command('example')
    .description('print the built-in example platform')
    .addOption(
      new Option('--mode <mode>', 'data-plane mode').choices(['sidecar', 'ambient']).default('sidecar'),
    )
    .action(async (flags: { mode: string }) => {
      result.code = await runCommand(streams, async () => {
        const mode = oneOf('--mode', flags.mode, ['sidecar', 'ambient']);
        streams.stdout(examplePlatformYaml(mode));
        return ExitCode.Ok;
      });
    });
  return root;
}

/** Runs kfmesh with the given arguments (without `node` and the script); returns the exit code. */
export async function main(argv: readonly string[], given: Streams): Promise<ExitCode> {
  const result: { code: ExitCode } = { code: ExitCode.Ok };
  // Object strings reach the terminal: their control characters are shown, not obeyed.
  const streams: Streams = {
    ...given,
    stdout: (text) => given.stdout(printable(text)),
    stderr: (text) => given.stderr(printable(text)),
  };
  try {
    await program(streams, result).parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every other parse failure is a usage error (2), as the contract says.
      return error.exitCode === 0 ? ExitCode.Ok : ExitCode.BadInput;
    }
    throw error;
  }
  return result.code;
}

/** True when this file is the program being run (also through npm's bin link). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

/**
 * Output that can't be written: a reader that went away (`kfmesh render | head -1`) ends the program
 * quietly with 141, the status of a program ended by SIGPIPE; any other failure (a full disk) is said on
 * standard error with the reason, exit 2.
 */
function onOutputError(error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') process.exit(141);
  try {
    process.stderr.write(`kfmesh: cannot write the output: ${error.message}\n`);
  } finally {
    process.exit(ExitCode.BadInput);
  }
}

if (isEntryPoint()) {
  process.stdout.on('error', onOutputError);
  process.stderr.on('error', (error: NodeJS.ErrnoException) =>
    process.exit(error.code === 'EPIPE' ? 141 : 2),
  );
  const streams: Streams = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };
  const args = process.argv.slice(2);
  main(args, streams).then(
    (code) => {
      process.exitCode = code;
      // A long-running command that has stopped ends the process: a watch connection that a library opened
      // while the command stopped must not keep it alive until the server closes it.
      if (args[0] === 'controller' || args[0] === 'serve') process.exit(code);
    },
    (error: unknown) => {
      process.stderr.write(
        `kfmesh: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 70;
    },
  );
}

/**
 * `npm start`: the console on the built-in example platform as the README's walkthrough leaves it (KServe
 * before 0.14's VirtualServices), at http://127.0.0.1:8080/ (or $PORT; a free port when that one is taken),
 * with the example's observed metrics (examples/metrics/example.prom, in a checkout) drawn over it, after a
 * few lines on what it shows. Runs until Ctrl-C, or until npm, which
 * started it, is gone: npm does not pass a SIGTERM on to the shell that runs the script, so without this
 * the console would go on serving after `kill <npm's pid>`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { serveCommand } from './serve.ts';
import { exampleBeforeKserve014, ExampleIstioVersion } from '../example/platform.ts';
import type { Streams } from './io.ts';

const streams: Streams = { stdout: (t) => process.stdout.write(t), stderr: (t) => process.stderr.write(t) };

process.stdout.write(`kfmesh — mesh networking for Kubeflow and KServe over Istio

The console, on the built-in example platform as the README's walkthrough leaves it: KServe before 0.14,
whose model VirtualServices are bound only to gateways (kfmesh example, then kfmesh render
--no-mesh-gateway), simulated with Istio \${ExampleIstioVersion}. The mesh as graphs of traced traffic in sidecar mode and migrated to ambient mode
(namespaces first: tap one to unfold it), the traffic its metrics report drawn over the edges (tap one to
see what explains it), a tracer that follows one request hop by hop, the analyzer's findings with the
observed traffic's (drift, failing edges), and the objects kfmesh renders. Try the tracer with
  From  kubeflow-user-example-com/curl-inside-mesh
  URL   http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict
(it leaves the mesh through PassthroughCluster: KFM101 in Findings says why, with the patch). For ambient
mode, trace
  From  ml-research/pipeline-step
  URL   http://iris-raw-predictor.ml-research/v1/models/iris-raw:predict   (POST)
in Sidecar, then in Ambient: ztunnel and ml-research's waypoint replace the sidecars. Namespaces that
keep their sidecars in ambient mode (kubeflow-user-example-com: its Serverless models need them) say why
on the graph. kfmesh serve FILES... shows your own platform; kfmesh --help lists the rest.
Ctrl-C stops the console.

`);

const metrics = fileURLToPath(new URL('../../../examples/metrics/example.prom', import.meta.url));

/** Resolves once the process that started this one is gone (this process is then given to another parent). */
function parentGone(): Promise<void> {
  const parent = process.ppid;
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(timer);
      process.stderr.write('kfmesh: npm, which started the console, is gone: stopping\n');
      resolve();
    }, 500);
    timer.unref();
  });
}

process.exitCode = await serveCommand(
  [],
  {
    host: '127.0.0.1',
    port: process.env['PORT'] ?? '8080',
    clusterDomain: 'cluster.local',
    window: '1h',
    ...(existsSync(metrics) ? { metrics } : {}),
    anyPortIfTaken: true,
    documents: exampleBeforeKserve014(),
    istioVersion: ExampleIstioVersion,
  },
  streams,
  parentGone(),
);

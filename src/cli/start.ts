/**
 * `npm start`: on the built-in example platform, what kfmesh renders for its InferenceServices, and what
 * the `mesh` binding changes for an in-mesh client, traced before and after; then a short guide.
 */
import { examplePlatform } from '../example/platform.ts';
import { compileMesh } from '../mesh/mesh.ts';
import { parseIstioVersion } from '../mesh/istio-version.ts';
import { traceRequest, type TraceResult } from '../mesh/trace.ts';
import { Snapshot } from '../load/snapshot.ts';
import { toYaml } from '../model/serialize.ts';
import { refOf } from '../model/object.ts';
import { desiredState } from '../render/desired-state.ts';

const platform = examplePlatform();
const snapshot = Snapshot.of(platform, '<example>');
const after = desiredState(snapshot, { mode: 'sidecar' });
const before = desiredState(snapshot, { mode: 'sidecar', meshGateway: false });
// The platform with KServe's objects as they were before the fix, for the "before" trace.
const replaced = new Set(before.objects.map((o) => JSON.stringify(refOf(o))));
const beforePlatform = [
  ...platform.filter((o) => !replaced.has(JSON.stringify(refOf(o)))),
  ...before.objects,
];

const request = {
  from: 'kubeflow-user-example-com/curl-inside-mesh',
  url: 'http://sklearn-iris.kubeflow-user-example-com.svc.cluster.local/v1/models/sklearn-iris:predict',
  method: 'POST',
};
const istioVersion = parseIstioVersion('1.20');
const traced = (objects: typeof platform): TraceResult =>
  traceRequest(compileMesh(Snapshot.of(objects), istioVersion ? { istioVersion } : {}), request);

function summary(result: TraceResult): string {
  const hops = result.hops.map((h) => `${h.kind} ${h.namespace}/${h.workload}`).join(' → ');
  const client = result.telemetry.find((t) => t.proxy === request.from)?.labels ?? {};
  return `${hops}\n    response ${result.response.code}; the client reports destination_service_name="${client['destination_service_name']}"`;
}

const models = snapshot.list('serving.kserve.io', 'InferenceService');
process.stdout.write(`kfmesh — mesh networking for Kubeflow and KServe over Istio

The built-in example platform: ${models.length} InferenceServices in ${new Set(models.map((o) => o.metadata.namespace)).size} namespaces, with KServe's,
Knative's and Istio's objects as a running cluster holds them (kfmesh example prints it).

What KServe generates for them, as kfmesh renders it (kfmesh render):

${toYaml(after.objects)}
The mesh fix, for ${request.method} ${request.url}
from ${request.from} (kfmesh trace, Istio 1.20):
  before (KServe < 0.14, VirtualService not bound to mesh):
    ${summary(traced(beforePlatform))}
  after:
    ${summary(traced(platform))}

Commands:
  kfmesh render [PATH...] [--mode sidecar|ambient] [-o yaml|json]          what kfmesh applies
  kfmesh trace [PATH...] --from NS/WORKLOAD|external --url URL [...]       one request through the mesh
  kfmesh migrate [PATH...] --to ambient [--report FILE]                    sidecar mode to ambient mode
  kfmesh verify --equivalence BEFORE AFTER                                 what a change does to every request
  kfmesh verify [PATH...] --cases FILE                                     request expectations
  kfmesh analyze [PATH...] [-o text|json|sarif]                            what is wrong, and the fix
  kfmesh example [--mode sidecar|ambient]                                  the example platform as YAML
  kfmesh --help                                                            everything else
`);

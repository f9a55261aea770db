/**
 * `npm start`: renders the built-in example platform and shows, for one InferenceService, what the
 * `mesh` binding changes, followed by a short guide to the commands.
 */
import { examplePlatformYaml } from '../example/platform.ts';
import { parseManifests } from '../load/parse.ts';
import { Snapshot } from '../load/snapshot.ts';
import { toYaml } from '../model/serialize.ts';
import { desiredState } from '../render/desired-state.ts';

const snapshot = new Snapshot(parseManifests({ name: '<example>', text: examplePlatformYaml() }));
const after = desiredState(snapshot, { mode: 'sidecar' });
const before = desiredState(snapshot, { mode: 'sidecar', meshGateway: false });
const pick = (objects: typeof after.objects) =>
  objects.find((o) => o.kind === 'VirtualService' && o.metadata.name === 'sklearn-iris');

const gatewaysOf = (o: ReturnType<typeof pick>): string =>
  JSON.stringify((o?.['spec'] as { gateways?: string[] } | undefined)?.gateways ?? []);

process.stdout.write(`kfmesh — mesh networking for Kubeflow and KServe over Istio

The built-in example platform: ${snapshot.list('serving.kserve.io', 'InferenceService').length} InferenceServices in ${
  new Set(snapshot.list('serving.kserve.io', 'InferenceService').map((o) => o.metadata.namespace)).size
} namespaces, with KServe's, Knative's and Istio's configuration objects (kfmesh example prints it).

What KServe generates for them, as kfmesh renders it (kfmesh render):

${toYaml(after.objects)}
The mesh fix, for kubeflow-user-example-com/sklearn-iris:
  before (kfmesh render --no-mesh-gateway): gateways ${gatewaysOf(pick(before.objects))}
  after  (kfmesh render):                   gateways ${gatewaysOf(pick(after.objects))}
With "mesh", a client's own sidecar applies the route (Host rewrite to the predictor) instead of sending
the request to PassthroughCluster and through the ingress gateway twice.

Commands:
  kfmesh render [PATH...] [-o yaml|json] [--no-mesh-gateway]   objects for InferenceServices
  kfmesh example                                               the example platform as YAML
  kfmesh --help                                                everything else
`);

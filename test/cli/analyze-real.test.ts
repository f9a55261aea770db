/**
 * The analyzer's Kubeflow rules on inputs derived from the real Kubeflow platform
 * (../shared/real/kubeflow-manifests/platform.yaml) the way platform teams derive them: the platform as it
 * ships (no error or warning), its `kubeflow` namespace moved to ambient as Kubeflow's `overlays/ambient`
 * patch does (the label added beside `istio-injection: enabled`), the same after kfmesh's migration, the
 * ingress Gateway renamed, a NetworkPolicy written for sidecars kept through a move to ambient, and the
 * migrated platform edited by hand: a Service's waypoint label removed, the waypoint relabelled for workload
 * traffic, ingress left to skip the waypoint (the offline ambient rules KFM211-KFM213).
 * Skipped with the reason when ../shared is absent; under CI=true that fails.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { runKfmesh, writeManifest } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';
import { partTestOptions } from '../kube-apiserver.ts';

const platform = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');
const missing = existsSync(platform) ? undefined : `${platform} is missing (../shared beside the project)`;

interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}
interface Found {
  code: string;
  severity: string;
  object: { kind: string; namespace: string; name: string };
  message: string;
  evidence?: string[];
  patch?: unknown[];
}

const objects = (): Obj[] =>
  parseAllDocuments(readFileSync(platform, 'utf8'))
    .map((d) => d.toJS() as Obj)
    .filter((o) => o !== null);

function analyze(input: Obj[]): Found[] {
  const run = runKfmesh(['analyze', writeManifest(input), '-o', 'json', '--fail-on', 'never']);
  assert.equal(run.code, 0, run.stderr);
  return (JSON.parse(run.stdout) as { findings: Found[] }).findings;
}

let migrated: string | undefined;
/** The platform as `migrate --to ambient` makes it (migrated once per run, parsed afresh each call). */
const migratedObjects = (): Obj[] => {
  if (migrated === undefined) {
    const run = runKfmesh(['migrate', platform, '--to', 'ambient']);
    assert.equal(run.code, 0, run.stderr);
    migrated = run.stdout;
  }
  return parseAllDocuments(migrated)
    .map((d) => d.toJS() as Obj)
    .filter((o) => o !== null);
};

const namespace = (all: Obj[], name: string): Obj => {
  const found = all.find((o) => o.kind === 'Namespace' && o.metadata.name === name);
  assert.ok(found, `Namespace ${name}`);
  return found;
};
const serious = (findings: Found[]) => findings.filter((f) => f.severity !== 'info');

describe(
  'analyze: the Kubeflow rules on the real platform',
  partTestOptions('the real Kubeflow platform', missing),
  () => {
    test('as it ships: no error or warning', () => {
      assert.deepEqual(serious(analyze(objects())), []);
    });

    test("kubeflow moved to ambient as Kubeflow's overlay does: KFM206 on the namespace, KFM207 on each opted-out webhook, traced", () => {
      const all = objects();
      const kubeflow = namespace(all, 'kubeflow');
      kubeflow.metadata.labels = { ...kubeflow.metadata.labels, 'istio.io/dataplane-mode': 'ambient' };
      const found = serious(analyze(all));
      const both = found.filter((f) => f.code === 'KFM206');
      assert.deepEqual(
        both.map((f) => f.object.name),
        ['kubeflow'],
      );
      assert.match(both[0]?.message ?? '', /\d+ workload\(s\) keep theirs \(.*centraldashboard/);
      const enrolled = found.filter((f) => f.code === 'KFM207');
      const refused = enrolled.filter((f) => f.severity === 'error').map((f) => f.object.name);
      // The webhooks the API server calls, refused by the mesh-wide deny-all once ztunnel takes them.
      for (const name of [
        'admission-webhook-deployment',
        'katib-controller',
        'kserve-controller-manager',
        'spark-operator-webhook',
      ])
        assert.ok(refused.includes(name), `${name} among ${refused.join(', ')}`);
      const kserve = enrolled.find((f) => f.object.name === 'kserve-controller-manager');
      assert.match(
        kserve?.evidence?.[0] ?? '',
        /^POST https:\/\/kserve-webhook-server-service\.kubeflow\.svc:443\/.* from kube-apiserver: ztunnel .* DENY/,
      );
      assert.ok(kserve?.patch, 'a patch that labels the pods out of ambient');
    });

    test("the same after kfmesh's migration: nothing", () => {
      assert.deepEqual(
        serious(analyze(migratedObjects())).map((f) => `${f.code} ${f.object.name}`),
        [],
      );
    });

    // The migrated platform's waypoint in kubeflow serves the pipelines' Services (ml-pipeline,
    // ml-pipeline-ui), whose policies target them; the mistakes below are what hand edits after a migration
    // make of it.
    const edited = (edit: (o: Obj) => void): Found[] => {
      const all = migratedObjects();
      all.forEach(edit);
      return serious(analyze(all));
    };
    const isService = (o: Obj, name: string) =>
      o.kind === 'Service' && o.metadata.namespace === 'kubeflow' && o.metadata.name === name;

    test('migrated, ml-pipeline without its use-waypoint label: KFM211 on the policies targeting it, traced', () => {
      const found = edited((o) => {
        if (isService(o, 'ml-pipeline')) delete o.metadata.labels?.['istio.io/use-waypoint'];
      }).filter((f) => f.code === 'KFM211');
      assert.deepEqual(found.map((f) => f.object.name).sort(), ['ml-pipeline', 'ml-pipeline-network-policy']);
      assert.match(
        found[0]?.message ?? '',
        /targets Service kubeflow\/ml-pipeline, which no waypoint serves/,
      );
      assert.match(
        found[0]?.evidence?.[0] ?? '',
        /^GET http:\/\/ml-pipeline\.kubeflow\.svc\.cluster\.local:8888\/ from .*ztunnel/,
      );
    });

    test('migrated, the waypoint labelled for workload traffic: KFM212 on the Services that name it, KFM211 on their policies', () => {
      const found = edited((o) => {
        if (o.kind === 'Gateway' && o.metadata.namespace === 'kubeflow' && o.metadata.name === 'waypoint')
          o.metadata.labels = { ...o.metadata.labels, 'istio.io/waypoint-for': 'workload' };
      });
      assert.deepEqual(
        found
          .filter((f) => f.code === 'KFM212')
          .map((f) => f.object.name)
          .sort(),
        ['ml-pipeline', 'ml-pipeline-ui'],
      );
      assert.equal(found.filter((f) => f.code === 'KFM211').length, 4);
      assert.ok(found.filter((f) => f.code === 'KFM212').every((f) => (f.evidence ?? []).length === 1));
    });

    test('migrated, a RequestAuthentication selecting the pipelines API pods kept from sidecar days: KFM214', () => {
      const all = migratedObjects();
      all.push({
        kind: 'RequestAuthentication',
        apiVersion: 'security.istio.io/v1',
        metadata: { name: 'ml-pipeline-jwt', namespace: 'kubeflow' },
        spec: {
          selector: { matchLabels: { app: 'ml-pipeline' } },
          jwtRules: [{ issuer: 'https://dex.example.com' }],
        },
      } as Obj);
      const found = serious(analyze(all)).filter((f) => f.code === 'KFM214');
      assert.deepEqual(
        found.map((f) => f.object.name),
        ['ml-pipeline-jwt'],
      );
      assert.match(
        found[0]?.message ?? '',
        /applies to ambient pods \(kubeflow\/ml-pipeline\), .*validates no tokens/,
      );
    });

    test('migrated, then the ambient mistakes of hand edits: KFM201, KFM202, KFM203, KFM209, KFM210, each on its object', () => {
      const all = migratedObjects();
      const kubeflow = namespace(all, 'kubeflow');
      kubeflow.metadata.labels = { ...kubeflow.metadata.labels, 'istio.io/use-waypoint': 'gone' };
      const added = (kind: string, name: string, spec: Record<string, unknown>, apiVersion: string): Obj =>
        ({ kind, apiVersion, metadata: { name, namespace: 'kubeflow' }, spec }) as Obj;
      all.push(
        // An L7 rule on the pipelines API's pods by selector: ztunnel cannot check methods.
        added(
          'AuthorizationPolicy',
          'ml-pipeline-get-only',
          {
            selector: { matchLabels: { app: 'ml-pipeline' } },
            rules: [{ to: [{ operation: { methods: ['GET'] } }] }],
          },
          'security.istio.io/v1',
        ),
        // A second waypoint nothing uses.
        added(
          'Gateway',
          'spare',
          {
            gatewayClassName: 'istio-waypoint',
            listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }],
          },
          'gateway.networking.k8s.io/v1',
        ),
        // A Sidecar resource kept from sidecar days.
        added(
          'Sidecar',
          'default',
          { egress: [{ hosts: ['./*', 'istio-system/*'] }] },
          'networking.istio.io/v1',
        ),
        // A policy picking the waypoint's pods by label instead of targetRefs.
        added(
          'AuthorizationPolicy',
          'waypoint-by-label',
          {
            selector: { matchLabels: { 'gateway.networking.k8s.io/gateway-name': 'waypoint' } },
            rules: [{}],
          },
          'security.istio.io/v1',
        ),
      );
      const found = serious(analyze(all));
      const on = (code: string) =>
        found
          .filter((f) => f.code === code)
          .map((f) => `${f.object.kind} ${f.object.namespace}/${f.object.name}`);
      assert.deepEqual(on('KFM201'), ['AuthorizationPolicy kubeflow/ml-pipeline-get-only']);
      assert.deepEqual(on('KFM202'), ['Namespace /kubeflow']);
      assert.deepEqual(on('KFM203'), ['Gateway kubeflow/spare']);
      assert.deepEqual(on('KFM209'), ['Sidecar kubeflow/default']);
      assert.deepEqual(on('KFM210'), ['AuthorizationPolicy kubeflow/waypoint-by-label']);
    });

    test('migrated, ml-pipeline-ui published without istio.io/ingress-use-waypoint: KFM213', () => {
      const found = edited((o) => {
        if (isService(o, 'ml-pipeline-ui')) delete o.metadata.labels?.['istio.io/ingress-use-waypoint'];
      }).filter((f) => f.code === 'KFM213');
      assert.deepEqual(
        found.map((f) => f.object.name),
        ['ml-pipeline-ui'],
      );
      assert.match(
        found[0]?.message ?? '',
        /routed to from ingress by VirtualService kubeflow\/ml-pipeline-ui/,
      );
    });

    test('the ingress Gateway renamed: KFM103 on KServe, Knative and the notebook controller that still name it', () => {
      const all = objects();
      const gateway = all.find((o) => o.kind === 'Gateway' && o.metadata.name === 'kubeflow-gateway');
      assert.ok(gateway);
      gateway.metadata.name = 'ingress';
      const found = serious(analyze(all)).filter((f) => f.code === 'KFM103');
      assert.deepEqual(found.map((f) => f.object.name.replace(/-[a-z0-9]{10}$/, '')).sort(), [
        'config-istio',
        'inferenceservice-config',
        'notebook-controller-config',
      ]);
    });

    test("auth moved to ambient with dex's NetworkPolicy limited to dex's port, as written for sidecars: KFM208", () => {
      const all = objects();
      const auth = namespace(all, 'auth');
      auth.metadata.labels = { ...auth.metadata.labels, 'istio.io/dataplane-mode': 'ambient' };
      const policy = all.find(
        (o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'allow-istio-and-oauth2-proxy',
      );
      assert.ok(policy?.spec);
      const rules = policy.spec['ingress'] as Record<string, unknown>[];
      policy.spec['ingress'] = rules.map((r) => ({ ...r, ports: [{ port: 5556, protocol: 'TCP' }] }));
      // Only the policy limited to 5556: the namespace's own allow-same-namespace policy admits every port.
      const found = serious(analyze(all)).filter((f) => f.code === 'KFM208');
      assert.deepEqual(
        found.map((f) => `${f.object.namespace}/${f.object.name}`),
        ['auth/allow-istio-and-oauth2-proxy'],
      );
      assert.match(found[0]?.message ?? '', /refuses HBONE \(port 15008\) to ambient pods of auth\/dex/);
    });
  },
);

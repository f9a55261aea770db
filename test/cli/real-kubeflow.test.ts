/**
 * The real Kubeflow platform (../shared/real/kubeflow-manifests/platform.yaml, as upstream's manifests
 * install it) through the command a user runs: what its controllers build on after `migrate`, the ingress
 * identity of `render --mode ambient`, and the migration's output read back by `verify`. Skipped with the
 * reason when ../shared is absent; under CI=true that fails.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { listItems, runKfmesh } from '../cli-process.ts';
import { projectRoot } from '../conformance/cases.ts';

const platform = join(projectRoot, '../shared/real/kubeflow-manifests/platform.yaml');
const missing = existsSync(platform) ? undefined : `${platform} is missing (../shared beside the project)`;
if (missing && process.env['CI'] === 'true') throw new Error(`CI=true and ${missing}`);

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: { rules?: { from?: { source: { principals?: string[] } }[] }[] };
}

interface ProbeReport {
  controllers: string[];
  opened: number;
  results: {
    name: string;
    failed: boolean;
    request: { from: string };
    asIntended: { before: boolean; after: boolean };
    before: { verdict: string; answeredBy?: string; where?: string };
    after: { verdict: string; answeredBy?: string; where?: string };
    why?: { before?: string; after?: string };
  }[];
}

const oldIngress = 'cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account';
const newIngress = 'cluster.local/ns/kubeflow/sa/kubeflow-gateway-istio';

describe('the real Kubeflow platform', { skip: missing ?? false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-real-'));
  const migratedFile = join(dir, 'migrated.json');
  const reportFile = join(dir, 'report.md');
  let migrated: Obj[] = [];
  before(() => {
    const run = runKfmesh(['migrate', platform, '--to', 'ambient', '-o', 'json', '--report', reportFile]);
    assert.equal(run.code, 0, run.stderr);
    writeFileSync(migratedFile, run.stdout);
    migrated = listItems<Obj>(run.stdout);
  });
  const find = (kind: string, namespace: string, name: string, group = '') =>
    migrated.find(
      (o) =>
        o.kind === kind &&
        (o.metadata.namespace ?? '') === namespace &&
        o.metadata.name.startsWith(name) &&
        o.apiVersion.startsWith(group),
    );

  test('migrate keeps the gateway that KServe, Knative and the notebook controller build on as the one front door, and says why', () => {
    assert.ok(
      find('Gateway', 'kubeflow', 'kubeflow-gateway', 'networking.istio.io'),
      'the Istio Gateway stays',
    );
    // Not converted: the notebook controller writes every new notebook's route for any host ("*") onto it,
    // so no host can move to a second gateway without splitting (docs/semantics.md, One front door).
    assert.equal(find('Gateway', 'kubeflow', 'kubeflow-gateway', 'gateway.networking.k8s.io'), undefined);
    const report = readFileSync(reportFile, 'utf8');
    for (const configMap of [
      'knative-serving/config-istio',
      'kubeflow/notebook-controller-config-',
      'kubeflow/inferenceservice-config',
    ])
      assert.ok(report.includes(`ConfigMap ${configMap}`), configMap);
    assert.match(
      report,
      /kept, not converted: it stays the one front door for "\*": .*what the notebook controller writes next/,
    );
  });

  test('migrate leaves the profile controller on the identity of the gateway that stays the front door', () => {
    const config = find('ConfigMap', 'kubeflow', 'profiles-config');
    assert.equal(config?.data?.['ISTIO_INGRESS_GATEWAY_PRINCIPAL'], oldIngress);
    assert.ok(!readFileSync(reportFile, 'utf8').includes(newIngress));
  });

  test('probes show what a naive migration breaks for what the controllers create next (findings 1 and 2)', () => {
    const probesOf = (items: Obj[], name: string) => {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
      const run = runKfmesh(['verify', '--equivalence', platform, file, '-o', 'json']);
      const report = (JSON.parse(run.stdout) as { probes: ProbeReport }).probes;
      return (probe: string) => report.results.find((r) => r.name === probe);
    };
    const owner = (profile: string) =>
      `the owner reaches a new notebook in the ${profile} through the ingress`;
    // Finding 1: the old gateway deleted, the controllers' ConfigMaps as they were: a new notebook's route is
    // bound to a gateway that is gone, and its owner reaches nothing.
    const originals = parseAllDocuments(readFileSync(platform, 'utf8'))
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o?.kind === 'ConfigMap');
    const naive = probesOf(
      [
        ...migrated.filter(
          (o) =>
            o.kind !== 'ConfigMap' &&
            !(o.kind === 'Gateway' && o.apiVersion.startsWith('networking.istio.io')),
        ),
        ...originals,
      ],
      'naive-gateway',
    );
    for (const profile of ['existing Profile kubeflow-user-example-com', 'new Profile kfmesh-probe']) {
      const probe = naive(owner(profile));
      assert.equal(probe?.failed, true, profile);
      assert.notEqual(probe?.after.verdict, 'allowed', profile);
    }
    // Finding 2: the gateway kept, but the profile controller naming only a Gateway API gateway's identity:
    // the new notebook's owner policy refuses its owner coming through the gateway its route is bound to.
    const renamed = probesOf(
      migrated.map((o) =>
        o.kind === 'ConfigMap' && o.metadata.name.startsWith('profiles-config')
          ? { ...o, data: { ...o.data, ISTIO_INGRESS_GATEWAY_PRINCIPAL: newIngress } }
          : o,
      ),
      'naive-principal',
    );
    const probe = renamed(owner('new Profile kfmesh-probe'));
    assert.equal(probe?.failed, true);
    assert.match(probe?.after.where ?? '', /^sidecar kfmesh-probe\/kfmesh-probe-notebook/);
  });

  test('verify finds nothing opened: the sources of the pipelines NetworkPolicies are enforced at the waypoint', () => {
    const run = runKfmesh(['verify', '--equivalence', platform, migratedFile, '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout) as { errors: number; probes: ProbeReport };
    assert.equal(result.errors, 0);
    // The probes of what the controllers create next: the owner reaches a new notebook in the existing
    // and in a new Profile through the ingress, another user is refused, as before the migration.
    const { probes } = result;
    assert.deepEqual(probes.controllers, ['profile controller', 'notebook controller', 'KServe']);
    assert.equal(probes.opened, 0);
    for (const name of [
      'the owner reaches a new notebook in the existing Profile kubeflow-user-example-com through the ingress',
      'the owner reaches a new notebook in the new Profile kfmesh-probe through the ingress',
      'another user is refused by a new notebook in the new Profile kfmesh-probe',
      'a pod of the new Profile kfmesh-probe reaches a new notebook there',
      'a pod of kubeflow-user-example-com reaches a new model in RawDeployment (kfmesh-probe-raw)',
    ]) {
      const probe = probes.results.find((r) => r.name === name);
      assert.ok(probe?.asIntended.before && probe.asIntended.after, name);
    }
    // The pipelines UI runs in ambient mode after the migration and the profile controller creates new
    // Profiles in sidecar mode: their sidecars accept HBONE (the migrated mesh config turns it on), so the UI
    // reaches them with its identity.
    assert.deepEqual(
      probes.results.filter((r) => r.failed).map((r) => r.name),
      [],
    );
    // Every probe gets the same answer on both sides; the two not as the platform means it are the
    // upstream platform's own: its istio-system NetworkPolicies refuse in-mesh calls to the local gateway
    // (Serverless), and istiod ignores KServe's Ingress without an IngressClass istio (RawDeployment).
    for (const r of probes.results)
      assert.deepEqual(
        [r.after.verdict, r.after.answeredBy],
        [r.before.verdict, r.before.answeredBy],
        r.name,
      );
    const notMeant = probes.results.filter((r) => !r.asIntended.before);
    assert.deepEqual(
      notMeant.map((r) => r.name),
      [
        'a pod of kubeflow-user-example-com reaches a new model in the default deployment mode (kfmesh-probe-default)',
        'the owner of kubeflow-user-example-com reaches a new model in RawDeployment through the ingress (kfmesh-probe-raw)',
      ],
    );
    assert.match(
      notMeant[0]?.before.where ?? '',
      /NetworkPolicy istio-system\/allow-knative-to-istio-gateways/,
    );
    assert.match(notMeant[1]?.why?.before ?? '', /no IngressClass istio .*STRICT \(KFM404\)/);
    const mesh = find('ConfigMap', 'istio-system', 'istio') as (Obj & { data: { mesh: string } }) | undefined;
    assert.match(mesh?.data.mesh ?? '', /ISTIO_META_ENABLE_HBONE: "true"/);
    const deny = find('AuthorizationPolicy', 'kubeflow', 'ml-pipeline-network-policy') as
      | (Obj & { spec: { action?: string; rules: { from?: { source: { notNamespaces?: string[] } }[] }[] } })
      | undefined;
    assert.equal(deny?.spec.action, 'DENY');
    assert.deepEqual(deny?.spec.rules[0]?.from?.[0]?.source.notNamespaces, ['istio-system', 'kubeflow']);
    // The profile namespaces ml-pipeline admits by label cannot be listed ahead: the report says so.
    assert.match(
      readFileSync(reportFile, 'utf8'),
      /selects namespaces by label; AuthorizationPolicy kubeflow\/ml-pipeline-network-policy admits/,
    );
  });

  test('without those DENY policies verify exits 1: behind the waypoint, default-allow-same-namespace admits every source', () => {
    const open = migrated.filter(
      (o) => !(o.kind === 'AuthorizationPolicy' && o.metadata.name.endsWith('-network-policy')),
    );
    const openFile = join(dir, 'open.json');
    writeFileSync(openFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: open }));
    const run = runKfmesh(['verify', '--equivalence', platform, openFile, '-o', 'json']);
    assert.equal(run.code, 1, run.stderr);
    const result = JSON.parse(run.stdout) as {
      errors: number;
      groups: { severity: string; cause: string; count: number }[];
    };
    assert.ok(result.errors > 0);
    for (const group of result.groups.filter((g) => g.severity === 'error'))
      assert.match(
        group.cause,
        /^denied at the client's sidecar \(NetworkPolicy kubeflow\/default-allow-same-namespace, NetworkPolicy kubeflow\/ml-pipeline(-ui)?\) → answered by kubeflow\/ml-pipeline(-ui)?( \(addressed to the pod\))?$/,
      );
    // One of them traced: refused by the NetworkPolicy before, at the waypoint after, answered without the DENY.
    const trace = (file: string) =>
      runKfmesh([
        'trace',
        file,
        '--from',
        'kubeflow-system/jobset-controller-manager',
        '--url',
        'http://ml-pipeline.kubeflow.svc.cluster.local:8887/',
      ]).stdout;
    assert.match(
      trace(platform),
      /response: 503 \(UF\)[^]*NetworkPolicy kubeflow\/default-allow-same-namespace, NetworkPolicy kubeflow\/ml-pipeline refuses/,
    );
    assert.match(
      trace(migratedFile),
      /response: 403[^]*DENY policy kubeflow\/ml-pipeline-network-policy matches/,
    );
    assert.match(trace(openFile), /response: 200/);
  });

  test('a ztunnel ALLOW for the pipelines API pods (behind the waypoint) added to the migration: verify exits 1 on requests to the pod, analyze reports KFM205', () => {
    const widened = join(dir, 'widened');
    mkdirSync(widened);
    writeFileSync(join(widened, 'migrated.json'), readFileSync(migratedFile));
    writeFileSync(
      join(widened, 'allow-all.yaml'),
      'apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: allow-all, namespace: kubeflow}\nspec:\n  selector: {matchLabels: {app: ml-pipeline}}\n  rules: [{}]\n',
    );
    const run = runKfmesh(['verify', '--equivalence', platform, widened, '-o', 'json']);
    assert.equal(run.code, 1, run.stderr);
    const groups = (JSON.parse(run.stdout) as { groups: { severity: string; cause: string }[] }).groups;
    assert.ok(
      groups.some(
        (g) =>
          g.severity === 'error' &&
          / → answered by kubeflow\/ml-pipeline \(addressed to the pod\)$/.test(g.cause),
      ),
    );
    const analyzed = runKfmesh(['analyze', widened]);
    assert.match(analyzed.stdout, /error KFM205: AuthorizationPolicy kubeflow\/allow-all/);
    // The migration as written has neither.
    assert.doesNotMatch(runKfmesh(['analyze', migratedFile]).stdout, /KFM205/);
  });

  test('the ingress gateway reaches dex under its NetworkPolicy (login), and the policy says so', () => {
    // istio-system's policies admit no one from outside: Kubeflow's instructions come in by port-forward.
    const trace = (...more: string[]) =>
      runKfmesh(['trace', platform, '--from', 'external', '--url', 'http://example.com/dex/auth', ...more]);
    const network = trace();
    assert.equal(network.code, 0, network.stderr);
    assert.match(
      network.stdout,
      /NetworkPolicy istio-system\/allow-knative-to-istio-gateways, NetworkPolicy istio-system\/default-allow-same-namespace-istio-system refuses the connection to istio-system\/istio-ingressgateway:8080/,
    );
    const run = trace('--port-forward');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /response: 200/);
    assert.match(run.stdout, /entered by kubectl port-forward/);
    assert.match(
      run.stdout,
      /NetworkPolicy auth\/allow-istio-and-oauth2-proxy admits the connection to auth\/dex:5556/,
    );
  });

  test('login after the migration: through the one front door to dex, as before', () => {
    const run = runKfmesh([
      'trace',
      migratedFile,
      '--from',
      'external',
      '--url',
      'http://example.com/dex/auth',
      '--port-forward',
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /response: 200/);
    assert.match(run.stdout, /1\. gateway istio-system\/istio-ingressgateway/);
    assert.match(
      run.stdout,
      /NetworkPolicy auth\/allow-istio-and-oauth2-proxy admits the connection to auth\/dex:5556/,
    );
  });

  test('render --mode ambient admits the ingress the platform has, and says its sidecar callers skip the waypoint', () => {
    const run = runKfmesh(['render', platform, '--mode', 'ambient', '-o', 'json']);
    assert.equal(run.code, 0, run.stderr);
    const owner = listItems<Obj>(run.stdout).find(
      (o) => o.kind === 'AuthorizationPolicy' && o.metadata.name === 'ns-owner-access-waypoint',
    );
    assert.deepEqual(owner?.spec?.rules?.[0]?.from?.[0]?.source.principals, [
      oldIngress,
      'cluster.local/ns/kubeflow/sa/ml-pipeline-ui',
    ]);
    assert.equal(run.stderr.match(/\[KFM303\]/g)?.length, 2);
  });
});

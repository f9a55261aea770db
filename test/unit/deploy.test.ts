/**
 * The deployment manifests: the ClusterRole and Role grant exactly what the controller uses (no verb or
 * resource more or less), and `kubectl kustomize deploy` builds the base.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { requiredPermissions } from '../../src/controller/permissions.ts';
import { projectRoot } from '../conformance/cases.ts';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
const docs = parseAllDocuments(readFileSync(join(projectRoot, 'deploy/rbac.yaml'), 'utf8')).map(
  (d) => d.toJS() as { kind: string; rules?: Rule[] },
);
const granted = (kind: string) =>
  docs
    .filter((d) => d.kind === kind)
    .flatMap((d) => d.rules ?? [])
    .flatMap((r) =>
      r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}:${v}`))),
    )
    .sort();

describe('deploy/', () => {
  test('the ClusterRole grants exactly the cluster-wide permissions the controller uses', () => {
    const needed = requiredPermissions()
      .filter((p) => !p.namespaced)
      .map((p) => `${p.group}/${p.resource}:${p.verb}`)
      .sort();
    assert.deepEqual(granted('ClusterRole'), needed);
  });

  test("the Role grants exactly the Lease permissions, in the controller's namespace", () => {
    const needed = requiredPermissions()
      .filter((p) => p.namespaced)
      .map((p) => `${p.group}/${p.resource}:${p.verb}`)
      .sort();
    assert.deepEqual(granted('Role'), needed);
  });

  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  test(
    'kubectl kustomize deploy builds it: two replicas with leader election, probes, requests, metrics Service',
    { skip: kubectl.status === 0 ? false : 'kubectl is not installed' },
    () => {
      const built = spawnSync('kubectl', ['kustomize', join(projectRoot, 'deploy')], { encoding: 'utf8' });
      assert.equal(built.status, 0, built.stderr);
      const objects = parseAllDocuments(built.stdout).map((d) => d.toJS() as Record<string, unknown>);
      const kinds = objects.map((o) => `${o['kind']}/${(o['metadata'] as { name: string }).name}`).sort();
      assert.deepEqual(kinds, [
        'ClusterRole/kfmesh-controller',
        'ClusterRoleBinding/kfmesh-controller',
        'Deployment/kfmesh-controller',
        'Namespace/kfmesh-system',
        'Role/kfmesh-controller-leader-election',
        'RoleBinding/kfmesh-controller-leader-election',
        'Service/kfmesh-controller-metrics',
        'ServiceAccount/kfmesh-controller',
      ]);
      const deployment = objects.find((o) => o['kind'] === 'Deployment') as unknown as {
        metadata: { namespace: string };
        spec: {
          replicas: number;
          template: {
            spec: {
              containers: {
                args: string[];
                readinessProbe: object;
                livenessProbe: object;
                resources: { requests: object };
              }[];
            };
          };
        };
      };
      assert.equal(deployment.metadata.namespace, 'kfmesh-system');
      assert.equal(deployment.spec.replicas, 2);
      const container = deployment.spec.template.spec.containers[0];
      assert.ok(container?.args.includes('--leader-elect'));
      assert.ok(container?.readinessProbe && container.livenessProbe && container.resources.requests);
    },
  );
});

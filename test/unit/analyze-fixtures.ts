/** Objects and helpers the analyzer's unit tests share. */
import assert from 'node:assert/strict';
import type { KubeObject } from '../../src/model/object.ts';
import type { Finding } from '../../src/model/finding.ts';
import { Snapshot } from '../../src/load/snapshot.ts';
import { analyze } from '../../src/analyze/analyze.ts';
import fastJsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';

export const ns = (name: string, labels: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, labels },
});
export const app = (namespace: string, name: string): KubeObject[] => [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { serviceAccountName: name, containers: [{ name }] },
      },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  },
];
export const policy = (namespace: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name, namespace },
  spec,
});
export const waypoint = (namespace: string, name = 'waypoint'): KubeObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace },
  spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
});

export function codes(objects: KubeObject[]): string[] {
  return analyze(Snapshot.of(objects, 'test.yaml')).map(
    (f) => `${f.code} ${f.object.kind} ${f.object.namespace}/${f.object.name}`,
  );
}

export function only(objects: KubeObject[], code: string): Finding[] {
  return analyze(Snapshot.of(objects, 'test.yaml')).filter((f) => f.code === code);
}

/** The objects with a finding's patch applied to its object (as `kubectl patch --type=json` would). */
export function patched(objects: KubeObject[], finding: Finding | undefined): KubeObject[] {
  assert.ok(finding?.patch, 'the finding has a patch');
  const { kind, namespace, name } = finding.object;
  return objects.map((o) =>
    o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name
      ? fastJsonPatch.applyPatch(structuredClone(o), finding.patch as Operation[], true, false).newDocument
      : o,
  );
}

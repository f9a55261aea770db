/** What ambient mode needs, read from the input (src/plan/prerequisites.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeObject } from '../../src/model/object.ts';
import { ambientPrerequisites } from '../../src/plan/prerequisites.ts';

const namespace = (name: string, level?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, ...(level ? { labels: { 'pod-security.kubernetes.io/enforce': level } } : {}) },
});
const daemonSet = (namespace: string, name: string): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name, namespace },
  spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } } } },
});
const istiod = (env: { name: string; value: string }[]): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'istiod', namespace: 'istio-system' },
  spec: {
    selector: { matchLabels: { app: 'istiod' } },
    template: { metadata: { labels: { app: 'istiod' } }, spec: { containers: [{ name: 'discovery', env }] } },
  },
});
const cniConfig = (namespace: string, enabled: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'istio-cni-config', namespace },
  data: { AMBIENT_ENABLED: enabled },
});

describe('ambient prerequisites from the input', () => {
  test('a sidecar install: istiod, the CNI agent and Pod Security each block ambient, named where they are', () => {
    const found = ambientPrerequisites([
      namespace('istio-system', 'restricted'),
      istiod([]),
      daemonSet('kube-system', 'istio-cni-node'),
      cniConfig('kube-system', 'false'),
    ]);
    assert.deepEqual(found.agents, [
      { name: 'ztunnel', namespace: undefined },
      { name: 'istio-cni-node', namespace: 'kube-system' },
    ]);
    assert.equal(found.blocking.length, 3);
    assert.match(
      found.blocking[0] ?? '',
      /^Deployment istio-system\/istiod runs without PILOT_ENABLE_AMBIENT=true/,
    );
    assert.match(
      found.blocking[1] ?? '',
      /^ConfigMap kube-system\/istio-cni-config has AMBIENT_ENABLED: "false"/,
    );
    assert.match(found.blocking[2] ?? '', /^Namespace istio-system enforces Pod Security "restricted"/);
    assert.ok(found.found.some((f) => /^Not in the input: DaemonSet ztunnel\./.test(f)));
  });

  test('an ambient install: nothing blocks; ztunnel in its own namespace is checked there', () => {
    const found = ambientPrerequisites([
      namespace('istio-system', 'restricted'),
      namespace('ztunnel', 'privileged'),
      istiod([{ name: 'PILOT_ENABLE_AMBIENT', value: 'true' }]),
      daemonSet('ztunnel', 'ztunnel'),
      daemonSet('kube-system', 'istio-cni-node'),
      cniConfig('kube-system', 'true'),
      // A CNI config beside another namespace's agent is not the agent's.
      cniConfig('other', 'false'),
    ]);
    assert.deepEqual(found.blocking, []);
    assert.ok(
      found.found.includes('Namespace ztunnel enforces Pod Security "privileged", which admits ztunnel.'),
    );
  });

  test('an input without Istio says what it lacks and blocks nothing it cannot see', () => {
    const found = ambientPrerequisites([namespace('apps')]);
    assert.deepEqual(found.blocking, []);
    assert.match(found.found[0] ?? '', /Not in the input: DaemonSet ztunnel, DaemonSet istio-cni-node/);
  });
});

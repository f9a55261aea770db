/**
 * Running pods for the example platform: a Deployment's pod as the cluster reports it once it runs,
 * with its sidecar (or as a gateway), and UIDs that are the same on every run.
 */
import { ProxyContainer, sidecarStatus } from '../model/sidecar.ts';
import type { KubeObject } from '../model/object.ts';
import { Annotation, Label } from '../model/vocabulary.ts';
import { placeholderImage } from './kubeflow.ts';

/** A running pod of a Deployment (through its ReplicaSet), with a sidecar unless `proxy` says otherwise. */
export function runningPod(
  ns: string,
  deployment: string,
  ip: string,
  labels: Record<string, string>,
  options: {
    serviceAccount?: string;
    containers?: Record<string, unknown>[];
    proxy?: 'sidecar' | 'gateway';
  } = {},
): KubeObject {
  const hash = '5f7c9d8b6';
  const proxy = options.proxy ?? 'sidecar';
  const podLabels: Record<string, string> = { ...labels, 'pod-template-hash': hash };
  if (proxy === 'sidecar') podLabels[Label.TlsMode] = 'istio';
  // Istio's gateway charts set injection off both ways: the deprecated annotation and the label.
  else podLabels[Label.SidecarInject] = 'false';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${deployment}-${hash}-x2k4p`,
      namespace: ns,
      labels: podLabels,
      annotations:
        proxy === 'sidecar'
          ? { [Annotation.SidecarStatus]: sidecarStatus() }
          : { [Label.SidecarInject]: 'false' },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${deployment}-${hash}`,
          uid: stableUid(`${ns}/${deployment}-${hash}`),
          controller: true,
        },
      ],
    },
    spec: {
      serviceAccountName: options.serviceAccount ?? 'default',
      containers: [
        ...(options.containers ?? [{ name: 'app', image: placeholderImage(deployment) }]),
        {
          name: ProxyContainer,
          image: 'docker.io/istio/proxyv2:1.29.1',
          args: ['proxy', proxy === 'gateway' ? 'router' : 'sidecar'],
        },
      ],
    },
    status: { phase: 'Running', podIP: ip },
  };
}

/** A UID that is the same on every run (owner references need one; the example has no real owner). */
function stableUid(name: string): string {
  // Four FNV-1a hashes of the name with different seeds: 32 hex digits.
  const h = [0x811c9dc5, 0x01000193, 0x9e3779b9, 0x85ebca6b]
    .map((seed) => {
      let x = seed;
      for (let i = 0; i < name.length; i++) x = Math.imul(x ^ name.charCodeAt(i), 0x01000193) >>> 0;
      return x.toString(16).padStart(8, '0');
    })
    .join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

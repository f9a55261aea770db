/**
 * Migration phase: what a sidecar let through or labelled that ztunnel does not (docs/semantics.md, Sidecar
 * traffic capture; The migration). A pod whose annotations leave inbound ports out of its sidecar's
 * capture (webhooks the API server calls, typically) took any caller there with nothing enforced; ztunnel
 * captures every port, so each such workload gets an ALLOW for those ports at L4. And the injector's
 * canonical labels, which NetworkPolicies may select pods by, are gone in ambient mode: where a policy
 * selects by them, the template carries them itself.
 */
import type { KubeObject } from '../model/object.ts';
import {
  podTemplateOf,
  specOf,
  workloadSpecOf,
  type LabelSelector,
  type NetworkPolicySpec,
} from '../model/specs.ts';
import { CanonicalLabelKeys, injectedLabels } from '../model/sidecar.ts';
import { portList } from '../mesh/capture.ts';
import { Annotation, Group, GroupKind } from '../model/vocabulary.ts';
import { step, type Facts, type Step } from './context.ts';
import { action, changed } from './migration-report.ts';
import type { OutputView, Phase } from './output.ts';

const templateKinds = [GroupKind.Deployment, GroupKind.StatefulSet, GroupKind.DaemonSet] as const;

export function sidecarCapture(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  const goingAmbient = new Set(
    [...m.scope.sidecarPods().values()].flat().map((w) => `${w.namespace}/${w.name}`),
  );
  for (const kind of templateKinds)
    for (const owner of m.input.snapshot.list(kind)) {
      const ns = owner.metadata.namespace ?? 'default';
      if (!goingAmbient.has(`${ns}/${owner.metadata.name ?? ''}`)) continue;
      uncapturedPorts(m, owner);
      canonicalLabels(m, owner);
    }
  return m.draft.done();
}

/** The ports a template's pods leave out of their sidecar's inbound capture, as far as the pod declares them. */
function uncaptured(owner: KubeObject): number[] {
  const template = podTemplateOf(owner);
  const annotations = template.metadata?.annotations ?? {};
  const included = annotations[Annotation.IncludeInboundPorts];
  if (included !== undefined && included.trim() !== '*') {
    const declared = (template.spec?.containers ?? []).flatMap((c) =>
      (c.ports ?? []).map((p) => p.containerPort),
    );
    const kept = portList(included);
    return [...new Set(declared.filter((p): p is number => p !== undefined && !kept.has(p)))].sort(
      (a, b) => a - b,
    );
  }
  return [...portList(annotations[Annotation.ExcludeInboundPorts])].sort((a, b) => a - b);
}

function uncapturedPorts(m: Step<'input'>, owner: KubeObject): void {
  const ports = uncaptured(owner);
  if (ports.length === 0) return;
  const ns = owner.metadata.namespace ?? 'default';
  const selector = selectorOf(owner);
  if (!selector) return;
  const name = m.draft.freeName(
    Group.IstioSecurity,
    'AuthorizationPolicy',
    ns,
    `${owner.metadata.name}-uncaptured-ports`,
  );
  const list = ports.join(', ');
  const portsText = `${ports.length > 1 ? 'ports' : 'port'} ${list}`;
  m.draft.add(
    {
      apiVersion: `${Group.IstioSecurity}/v1`,
      kind: 'AuthorizationPolicy',
      metadata: { name, namespace: ns },
      spec: {
        selector: { matchLabels: selector },
        action: 'ALLOW',
        // Callers without an identity only: a client sidecar's mTLS to the port failed before.
        rules: [
          { from: [{ source: { notPrincipals: ['*'] } }], to: [{ operation: { ports: ports.map(String) } }] },
        ],
      },
    },
    `the sidecar of ${owner.kind} ${ns}/${owner.metadata.name} did not capture ${portsText}, so nothing was enforced there for callers outside the mesh (the API server calling a webhook), while mesh clients' mTLS failed; ztunnel captures every port, and this keeps ${list} open at L4 to callers without an identity`,
  );
  m.draft.note(
    owner,
    action(
      'spec.template.metadata.annotations',
      `${portsText} ${ports.length > 1 ? 'were' : 'was'} not captured by the sidecar; in ambient mode ztunnel enforces every port: AuthorizationPolicy ${ns}/${name} admits callers without an identity there, as before (a DENY policy of these pods now applies to them too)`,
    ),
  );
}

/** The injector's labels a NetworkPolicy of the namespace selects this template's pods by, written on the template. */
function canonicalLabels(m: Step<'input'>, owner: KubeObject): void {
  const ns = owner.metadata.namespace ?? 'default';
  const template = podTemplateOf(owner);
  const own = template.metadata?.labels ?? {};
  const added = injectedLabels(own, owner.metadata.name ?? '');
  const missing = CanonicalLabelKeys.filter((key) => own[key] === undefined);
  if (missing.length === 0) return;
  const selectingBy = m.input.snapshot
    .list(GroupKind.NetworkPolicy, ns)
    .filter((p) =>
      selectorsOf(specOf(p, 'networking.k8s.io/NetworkPolicy')).some((s) => usesAny(s, missing)),
    );
  if (selectingBy.length === 0) return;
  const labels = { ...own, ...Object.fromEntries(missing.map((key) => [key, added[key] ?? ''])) };
  const current = m.draft.current(owner);
  const spec = workloadSpecOf(current);
  const currentTemplate = spec.template ?? {};
  m.draft.change(owner, {
    ...current,
    spec: {
      ...spec,
      template: {
        ...currentTemplate,
        metadata: { ...currentTemplate.metadata, labels: { ...currentTemplate.metadata?.labels, ...labels } },
      },
    },
  });
  m.draft.note(
    owner,
    changed(
      'spec.template.metadata.labels',
      `${missing.map((key) => `${key}: ${labels[key]}`).join(', ')}: the sidecar injector added them and ambient pods have none, while NetworkPolicy ${selectingBy.map((p) => `${ns}/${p.metadata.name}`).join(', ')} selects pods by them`,
    ),
  );
}

/** The label selectors of a NetworkPolicy: the pods it applies to, and the pods its peers name. */
function selectorsOf(spec: NetworkPolicySpec): LabelSelector[] {
  const peers = [
    ...(spec.ingress ?? []).flatMap((r) => r.from ?? []),
    ...(spec.egress ?? []).flatMap((r) => r.to ?? []),
  ];
  return [spec.podSelector ?? {}, ...peers.flatMap((p) => (p.podSelector ? [p.podSelector] : []))];
}

function usesAny(selector: LabelSelector, keys: readonly string[]): boolean {
  return (
    Object.keys(selector.matchLabels ?? {}).some((k) => keys.includes(k)) ||
    (selector.matchExpressions ?? []).some((e) => keys.includes(e.key ?? ''))
  );
}

/** A template owner's `spec.selector.matchLabels`. */
function selectorOf(owner: KubeObject): Record<string, string> | undefined {
  const labels = workloadSpecOf(owner).selector?.matchLabels;
  return labels && Object.keys(labels).length > 0 ? labels : undefined;
}

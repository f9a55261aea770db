/**
 * KFM702: an application container (or a whole pod) that runs as UID 1337, the sidecar proxy's own user
 * (docs/semantics.md, Sidecar outbound). The sidecar's traffic capture exempts that user's connections so
 * that the proxy's own do not loop, so such an application's traffic leaves without the sidecar: no mTLS,
 * no routing, no policy on it.
 */
import { ProxyContainer } from '../../model/sidecar.ts';
import { Severity } from '../../model/finding.ts';
import type { Finding } from '../../model/finding.ts';
import { specOf, type PodSpec } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import type { FieldPath } from '../../load/parse.ts';
import { isIstioOrSystem } from '../evidence.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

/** The sidecar proxy's user and group. */
const ProxyUid = 1337;
/** Containers that are Istio's own and run as the proxy's user on purpose. */
const istioContainers = new Set([ProxyContainer, 'istio-operator']);

export const appRunsAsProxyUid: Rule = {
  code: 'KFM702',
  name: 'app-runs-as-proxy-uid',
  severity: Severity.Warning,
  description:
    "an application runs as UID 1337, the sidecar proxy's: its traffic bypasses the sidecar (no mTLS, routing or policy)",
  reads: [GroupKind.Deployment, GroupKind.StatefulSet, GroupKind.DaemonSet, '/Pod'],
  istio: [{ analyzer: 'deployment.ApplicationUIDAnalyzer', code: 'IST0144' }],
  check(context: AnalyzeContext): Finding[] {
    const { snapshot } = context;
    const templates = (['Deployment', 'StatefulSet', 'DaemonSet'] as const).flatMap((kind) =>
      snapshot.list(`apps/${kind}`).map((o) => ({
        object: o,
        spec: specOf(o, `apps/${kind}`).template?.spec,
        at: ['spec', 'template', 'spec'] as FieldPath,
      })),
    );
    const pods = snapshot
      .list(GroupKind.Pod)
      .map((o) => ({ object: o, spec: specOf(o, '/Pod'), at: [] as FieldPath }));
    return [...templates, ...pods].flatMap(({ object, spec, at }) => {
      if (!spec || isIstioOrSystem(object)) return [];
      const field = proxyUidField(spec);
      if (!field) return [];
      return [
        findingOf(
          appRunsAsProxyUid,
          context,
          object,
          [...at, ...field, 'securityContext', 'runAsUser'],
          `runs as UID ${ProxyUid}, the sidecar proxy's user: the sidecar does not capture its traffic, which leaves without mTLS, routing or policy`,
          {
            fix: `run the application as another user (securityContext.runAsUser)`,
          },
        ),
      ];
    });
  },
};

/** Where a pod spec sets the proxy's UID for an application: the pod, or a container that is not Istio's. */
function proxyUidField(spec: PodSpec): FieldPath | undefined {
  if (spec.securityContext?.runAsUser === ProxyUid) return [];
  const index = (spec.containers ?? []).findIndex(
    (c) => !istioContainers.has(c.name ?? '') && c.securityContext?.runAsUser === ProxyUid,
  );
  return index >= 0 ? ['containers', index] : undefined;
}

/**
 * What ambient mode needs from the platform before the first namespace moves, read from the input
 * (docs/semantics.md, Ambient prerequisites): ztunnel and the CNI node agent where their DaemonSets run,
 * istiod with ambient turned on, the CNI agent with ambient turned on, and a Pod Security level that
 * admits ztunnel's privileges. What the input shows is reported; what it shows blocking ambient fails
 * the plan's first step. What the input does not hold is named, not guessed.
 */
import type { KubeObject } from '../model/object.ts';
import { dataOf, podTemplateOf } from '../model/specs.ts';
import { Label } from '../model/vocabulary.ts';

/** The node agents ambient mode runs on every node, by DaemonSet name. */
export const NodeAgents = ['ztunnel', 'istio-cni-node'] as const;

/** Where Istio installs its node agents unless told otherwise. */
const IstioNamespace = 'istio-system';

export interface Prerequisites {
  /** Each node agent and the namespace its DaemonSet runs in (undefined: not in the input). */
  agents: { name: string; namespace: string | undefined }[];
  /** What the input shows, in words. */
  found: string[];
  /** What the input shows that keeps ambient mode from working: the first step fails on these. */
  blocking: string[];
}

/** Reads the prerequisites of ambient mode from the objects of the input. */
export function ambientPrerequisites(objects: Iterable<KubeObject>): Prerequisites {
  const all = [...objects];
  const find = (kind: string, name: string) => all.filter((o) => o.kind === kind && o.metadata.name === name);
  const found: string[] = [];
  const blocking: string[] = [];
  const agents = NodeAgents.map((name) => {
    const daemonSet = find('DaemonSet', name)[0];
    if (daemonSet)
      found.push(
        `DaemonSet ${daemonSet.metadata.namespace}/${name} is in the input (check that it is rolled out).`,
      );
    return { name, namespace: daemonSet?.metadata.namespace };
  });
  const missing = agents.filter((a) => a.namespace === undefined).map((a) => `DaemonSet ${a.name}`);
  if (missing.length > 0)
    found.push(
      `Not in the input: ${missing.join(', ')}. Install ambient mode's node agents before step 2 (Istio's \`ztunnel\` and \`cni\` charts, as Istio's guide "Migrate from Sidecar to Ambient" describes).`,
    );

  for (const istiod of find('Deployment', 'istiod')) {
    const env = (podTemplateOf(istiod).spec?.containers ?? []).flatMap((c) => c.env ?? []);
    const value = env.find((e) => e.name === 'PILOT_ENABLE_AMBIENT')?.value;
    const where = `Deployment ${istiod.metadata.namespace}/istiod`;
    if (value === 'true') found.push(`${where} runs with PILOT_ENABLE_AMBIENT=true.`);
    else
      blocking.push(
        `${where} runs without PILOT_ENABLE_AMBIENT=true (${value === undefined ? 'unset, and off by default' : `"${value}"`}): istiod gives ztunnel no workloads and deploys no waypoints. Install istiod with Istio's ambient profile (\`--set profile=ambient\`).`,
      );
  }

  const cniNamespace = agents.find((a) => a.name === 'istio-cni-node')?.namespace;
  for (const config of find('ConfigMap', 'istio-cni-config')) {
    if (cniNamespace !== undefined && config.metadata.namespace !== cniNamespace) continue;
    const value = dataOf(config)['AMBIENT_ENABLED'];
    const where = `ConfigMap ${config.metadata.namespace}/istio-cni-config`;
    if (value === 'true') found.push(`${where} has AMBIENT_ENABLED: "true".`);
    else if (value !== undefined)
      blocking.push(
        `${where} has AMBIENT_ENABLED: "${value}": the CNI node agent redirects no pod to ztunnel. Install the CNI chart with ambient on (\`--set profile=ambient\`).`,
      );
  }

  const ztunnelNamespace = agents.find((a) => a.name === 'ztunnel')?.namespace ?? IstioNamespace;
  const namespace = find('Namespace', ztunnelNamespace)[0];
  const level = namespace?.metadata.labels?.[Label.PodSecurityEnforce];
  if (level !== undefined && level !== 'privileged')
    blocking.push(
      `Namespace ${ztunnelNamespace} enforces Pod Security "${level}", which refuses ztunnel's pods (they need NET_ADMIN, SYS_ADMIN and host paths): label it pod-security.kubernetes.io/enforce=privileged.`,
    );
  else if (level === 'privileged')
    found.push(`Namespace ${ztunnelNamespace} enforces Pod Security "privileged", which admits ztunnel.`);
  return { agents, found, blocking };
}

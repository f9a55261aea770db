/**
 * Migration phase: sidecars that accept HBONE (docs/semantics.md, Sidecars and ambient pods together).
 * A migration leaves sidecars running: pods keep theirs until restarted, namespaces that stay in sidecar
 * mode keep them, and the profile controller gives every namespace it creates sidecar injection. An
 * ambient client reaches a sidecar with its identity only over HBONE, which the injector turns on from
 * the mesh config's proxy metadata (as Istio's ambient profile sets it); without it the client arrives in
 * plaintext, with no identity, and every policy naming principals refuses it. So the mesh config turns
 * it on, and the report says which workloads to restart for it.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { isMap, parseDocument } from '../load/yaml.ts';
import { EnableHboneMetadata, meshConfigMap } from '../load/mesh-config.ts';
import { dataOf } from '../model/specs.ts';
import { ProxyKind } from '../mesh/workloads.ts';
import type { Migration } from './context.ts';
import { action, changed } from './migration-report.ts';

/** Turns HBONE on for sidecars where the input's sidecars do not accept it. */
export function sidecarHbone(m: Migration): void {
  if (m.mesh.config.sidecarsAcceptHbone) return;
  const sidecars = m.mesh.workloads.filter((w) => w.proxy === ProxyKind.Sidecar);
  if (sidecars.length === 0) return;
  const staying = [...m.kept.keys()].filter((ns) => sidecars.some((w) => w.namespace === ns)).sort();
  const restart =
    staying.length > 0
      ? `restart the sidecar workloads of ${staying.join(', ')} (kubectl rollout restart) once istiod has the new config, so they are injected with it`
      : 'restart any workload that keeps its sidecar once istiod has the new config, so it is injected with it';
  const field = `data.mesh: defaultConfig.proxyMetadata.${EnableHboneMetadata}`;
  const configMap = meshConfigMap(m.snapshot);
  const text = dataOf(configMap)['mesh'];
  if (!configMap || text === undefined) {
    // No mesh config in the input to change: the namespaces that keep sidecars carry the instruction.
    for (const ns of staying) {
      const namespace = m.snapshot.get(GroupKind.Namespace, '', ns);
      if (namespace)
        m.note(
          namespace,
          action(
            'metadata.labels',
            `keeps sidecars, which ambient clients reach in plaintext (no identity) unless they accept HBONE: set meshConfig.defaultConfig.proxyMetadata.${EnableHboneMetadata}: "true" (as Istio's ambient profile does), then ${restart}`,
          ),
        );
    }
    return;
  }
  const mesh = parseDocument(text);
  mesh.setIn(['defaultConfig', 'proxyMetadata', EnableHboneMetadata], 'true');
  // An empty `proxyMetadata: {}` (as Istio's charts write it) is written out in block style once it has a key.
  const metadata = mesh.getIn(['defaultConfig', 'proxyMetadata'], true);
  if (isMap(metadata)) metadata.flow = false;
  const current = m.current(configMap);
  m.change(configMap, { ...current, data: { ...dataOf(current), mesh: mesh.toString() } });
  m.note(
    configMap,
    changed(
      field,
      '"true" (as Istio\'s ambient profile sets it): sidecars injected from now on accept HBONE, so ambient clients reach them with their identity; without it they arrive in plaintext, and policies naming principals refuse them',
    ),
  );
  m.note(configMap, action(field, `${restart}; until then ambient clients reach them in plaintext`));
}

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
import { step, type Facts } from './context.ts';
import type { OutputView, Phase } from './output.ts';
import { action, changed } from './migration-report.ts';

/** Turns HBONE on for sidecars where the input's sidecars do not accept it. */
export function sidecarHbone(facts: Pick<Facts, 'input' | 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  if (m.input.mesh.config.sidecarsAcceptHbone) return m.draft.done();
  const sidecars = m.input.mesh.workloads.filter((w) => w.proxy === ProxyKind.Sidecar);
  if (sidecars.length === 0) return m.draft.done();
  const staying = [
    ...[...m.scope.kept.keys()].filter((ns) => sidecars.some((w) => w.namespace === ns)),
    ...m.scope.held.keys(),
  ].sort();
  const restart =
    staying.length > 0
      ? `restart the sidecar workloads of ${staying.join(', ')} (kubectl rollout restart) once istiod has the new config, so they are injected with it`
      : 'restart any workload that keeps its sidecar once istiod has the new config, so it is injected with it';
  const field = `data.mesh: defaultConfig.proxyMetadata.${EnableHboneMetadata}`;
  const configMap = meshConfigMap(m.input.snapshot);
  const text = dataOf(configMap)['mesh'];
  if (!configMap || text === undefined) {
    // No mesh config in the input to change: the namespaces that keep sidecars carry the instruction.
    for (const ns of staying) {
      const namespace = m.input.snapshot.get(GroupKind.Namespace, '', ns);
      if (namespace)
        m.draft.note(
          namespace,
          action(
            'metadata.labels',
            `keeps sidecars, which ambient clients reach in plaintext (no identity) unless they accept HBONE: set meshConfig.defaultConfig.proxyMetadata.${EnableHboneMetadata}: "true" (as Istio's ambient profile does), then ${restart}`,
          ),
        );
    }
    return m.draft.done();
  }
  const mesh = parseDocument(text);
  mesh.setIn(['defaultConfig', 'proxyMetadata', EnableHboneMetadata], 'true');
  // An empty `proxyMetadata: {}` (as Istio's charts write it) is written out in block style once it has a key.
  const metadata = mesh.getIn(['defaultConfig', 'proxyMetadata'], true);
  if (isMap(metadata)) metadata.flow = false;
  const current = m.draft.current(configMap);
  m.draft.change(configMap, { ...current, data: { ...dataOf(current), mesh: mesh.toString() } });
  m.draft.note(
    configMap,
    changed(
      field,
      '"true" (as Istio\'s ambient profile sets it): sidecars injected from now on accept HBONE, so ambient clients reach them with their identity; without it they arrive in plaintext, and policies naming principals refuse them',
    ),
  );
  m.draft.note(configMap, action(field, `${restart}; until then ambient clients reach them in plaintext`));
  return m.draft.done();
}

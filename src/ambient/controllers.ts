/**
 * Migration phase: what controllers write. Converting an object a controller owns is not enough, and a
 * Serverless model keeps its namespace in sidecar mode: both are reported with what to change.
 */
import { ModeName } from '../kserve/config.ts';
import { Annotation } from '../model/vocabulary.ts';
import { Label } from '../model/vocabulary.ts';
import { step, type Facts } from './context.ts';
import type { OutputView, Phase } from './output.ts';
import { NoteKind, Outcome, action } from './migration-report.ts';

/** Serverless models: their namespaces stay in sidecar mode; say what moves them. */
export function serverlessModels(facts: Pick<Facts, 'scope'>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const isvc of m.scope.serverless) {
    m.draft.note(
      isvc,
      action(
        `metadata.annotations.${Annotation.DeploymentMode}`,
        `${ModeName.Knative} has no ambient support (KEP-2676), so its namespace stays in sidecar mode: set ${ModeName.SetStandard} (with enableGatewayApi) to move it to ambient`,
      ),
    );
  }
  return m.draft.done();
}

/** Objects a controller writes: converting them is not enough, their controller must write the new form. */
export function controllerOwned(facts: Pick<Facts, 'input'>, output: OutputView): Phase {
  const m = step(facts, output);
  for (const object of m.input.snapshot.all()) {
    const outcome = output.outcomeOf(object);
    if (outcome !== Outcome.Converted && outcome !== Outcome.Removed) continue;
    const owner =
      object.metadata.ownerReferences?.find((o) => o.controller) ?? object.metadata.ownerReferences?.[0];
    const knative = object.metadata.labels?.[Label.KnativeIngress];
    if (!owner && !knative) continue;
    const who = owner ? `${owner.kind} ${owner.name}` : `Knative ingress ${knative}`;
    m.draft.note(object, {
      kind: NoteKind.Action,
      message: `written by the controller of ${who}, which will write the sidecar-mode form back: switch that controller to ambient mode (for kfmesh's own objects: kfmesh controller --mode ambient)`,
    });
  }
  return m.draft.done();
}

/**
 * The platform's flows (flows/flows.ts) traced on both sides of a change (docs/semantics.md, Flows): a
 * flow that worked before and not after is broken, which `verify` reports first, as an error, with its
 * cause and what to do.
 */
import type { Mesh } from '../mesh/compiled.ts';
import { platformFlows, type Flow } from '../flows/flows.ts';
import { outcomeOf, type RequestOutcome } from './requests.ts';

/** A flow traced on both sides. */
export interface FlowResult extends Flow {
  before: RequestOutcome;
  after: RequestOutcome;
  /** As meant before and not after. */
  broken: boolean;
  asIntended: { before: boolean; after: boolean };
  /** Why it broke, and what to do, where kfmesh can tell. */
  fix?: string;
}

export interface FlowReport {
  flows: number;
  broken: number;
  results: FlowResult[];
}

/** Traces the flows of `before` on both sides; a flow is broken when it was as meant before and not after. */
export function checkFlows(before: Mesh, after: Mesh, options: { portForward?: boolean } = {}): FlowReport {
  const results = platformFlows(before).map((flow): FlowResult => {
    const request =
      options.portForward && flow.request.from === 'external'
        ? { ...flow.request, portForward: true }
        : flow.request;
    const was = outcomeOf(before, request);
    const now = outcomeOf(after, request);
    const target = flow.target ?? (was.verdict === 'allowed' ? was.answeredBy : undefined);
    const reached = (o: RequestOutcome) =>
      o.verdict === 'allowed' && (target === undefined || o.answeredBy === target);
    const asIntended =
      flow.intent === 'answered'
        ? { before: reached(was), after: reached(now) }
        : { before: !reached(was), after: !reached(now) };
    const broken = asIntended.before && !asIntended.after;
    const fix = broken ? fixOf(flow, now) : undefined;
    return {
      ...flow,
      ...(target !== undefined ? { target } : {}),
      before: was,
      after: now,
      broken,
      asIntended,
      ...(fix ? { fix } : {}),
    };
  });
  return { flows: results.length, broken: results.filter((r) => r.broken).length, results };
}

/** What to do about a broken flow, where its outcome says. */
function fixOf(flow: Flow, now: RequestOutcome): string | undefined {
  if (now.split === true)
    return 'clients reach one address per host: keep every route of the host on one gateway until the host can move whole';
  if (flow.intent === 'refused') return 'the change opens it: restore the policy that refused it';
  if (now.verdict === 'denied' && /ztunnel/.test(now.where ?? '') && !flow.request.from.includes('/'))
    return undefined;
  if (now.verdict === 'denied' && /ztunnel/.test(now.where ?? ''))
    return `trace it (kfmesh trace --from ${flow.request.from} --url ${flow.request.url}): a client that keeps its sidecar skips waypoints, so ztunnel's guard of a destination with L7 policy refuses it; keep the destination's sidecar while such clients call it, or move the client's namespace with it`;
  return `trace it on the configuration after: kfmesh trace --from ${flow.request.from} --url ${flow.request.url}`;
}

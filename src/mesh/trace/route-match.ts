/** Picking the first route of a virtual host that a request matches, at a gateway or a waypoint. */
import { type MatchContext, matchApplies, requestMatches } from '../http-match.ts';
import { type TraceOutcome, Tracer } from './tracer.ts';
import type { HttpMatch, HttpRule, ResolvedVirtualService } from '../virtual-services.ts';
import type { Workload } from '../workloads.ts';

const admitsAll = (): boolean => true;

export const withoutSourceLabels = (m: HttpMatch): boolean => m.sourceLabels === undefined;

/** Takes the first route whose rule has no match or a match that applies here and fits the request. */
export function firstRoute(
  t: Tracer,
  w: Workload,
  hop: number,
  routes: readonly { rule: HttpRule; vs: ResolvedVirtualService }[],
  context: MatchContext,
  admits: (match: HttpMatch) => boolean = admitsAll,
): TraceOutcome | undefined {
  for (let index = 0; index < routes.length; index++) {
    const { rule, vs } = routes[index] as { rule: HttpRule; vs: ResolvedVirtualService };
    let match: HttpMatch | undefined;
    for (const m of rule.match ?? [])
      if (admits(m) && matchApplies(m, context) && requestMatches(m, t.request)) {
        match = m;
        break;
      }
    if (rule.match && rule.match.length > 0 && !match) continue;
    t.at(hop).virtualService = `${vs.namespace}/${vs.name}`;
    return t.walks.takeRoute(
      t,
      w,
      hop,
      vs,
      match ? { rule, index, match } : { rule, index },
      context.port,
      undefined,
      false,
    );
  }
  return undefined;
}

/**
 * The values in routes that the data plane cannot run, whatever their types (docs/semantics.md, Regular
 * expressions; Istio's validation): a regex RE2 does not compile (or longer than Istio takes), a
 * rewrite substitution RE2 refuses, a negative weight, a percentage outside what Istio takes. Read from a
 * file, such an object is bad input (the CLI stops at the field, exit 2); read from a cluster, the
 * analyzer reports it (KFM423 for a VirtualService, which Istio's validation refuses; KFM425 for an
 * HTTPRoute, which Envoy refuses when it loads the route).
 */
import type { FieldPath } from '../load/parse.ts';
import { regexProblem, rewriteProblem, type PatternProblem } from '../mesh/regex.ts';
import { groupOf, isPlainObject, type KubeObject } from '../model/object.ts';
import { specOf, type HTTPRouteSpec, type VirtualServiceSpec } from '../model/specs.ts';
import { GroupKind } from '../model/vocabulary.ts';

/** One value that cannot run, and where. */
export interface ValueProblem {
  field: FieldPath;
  message: string;
  /** Istio's validation takes it; Envoy refuses it when it loads the route. */
  envoyOnly?: true;
}

/** The problems of the values of an object's routes (VirtualService, HTTPRoute; none for other kinds). */
export function valueProblems(object: KubeObject): ValueProblem[] {
  switch (`${groupOf(object.apiVersion)}/${object.kind}`) {
    case GroupKind.VirtualService:
      return virtualServiceValueProblems(specOf(object, 'networking.istio.io/VirtualService'));
    case GroupKind.HTTPRoute:
      return httpRouteValueProblems(specOf(object, 'gateway.networking.k8s.io/HTTPRoute'));
    default:
      return [];
  }
}

type Collect = (field: FieldPath, problem: PatternProblem | undefined) => void;

/** A StringMatch's regex, if it has one (`regex: "*"` is a presence match only where `allowStar`). */
function stringMatch(add: Collect, value: unknown, at: FieldPath, allowStar = false): void {
  if (!isPlainObject(value) || typeof value['regex'] !== 'string') return;
  if (allowStar && value['regex'] === '*') return;
  add([...at, 'regex'], regexProblem(value['regex']));
}

function eachValue(add: Collect, map: unknown, at: FieldPath, allowStar = false): void {
  if (!isPlainObject(map)) return;
  for (const [name, value] of Object.entries(map)) stringMatch(add, value, [...at, name], allowStar);
}

/** Istio's fractional percentage: 0, or from 0.0001 to 100. */
function percentageProblem(value: number): PatternProblem | undefined {
  return value < 0 || value > 100 || (value > 0 && value < 0.0001)
    ? { message: `percentage ${value} is neither 0 nor from 0.0001 to 100` }
    : undefined;
}

type HttpRule = NonNullable<VirtualServiceSpec['http']>[number];

function virtualServiceValueProblems(spec: VirtualServiceSpec): ValueProblem[] {
  const problems: ValueProblem[] = [];
  const add: Collect = (field, problem) => {
    if (problem !== undefined) problems.push({ field, ...problem });
  };
  (spec.http ?? []).forEach((rule, r) => httpRuleValues(add, rule, ['spec', 'http', r]));
  for (const kind of ['tcp', 'tls'] as const)
    (spec[kind] ?? []).forEach((rule, r) =>
      (rule.route ?? []).forEach((d, i) => weight(add, d.weight, ['spec', kind, r, 'route', i, 'weight'])),
    );
  return problems;
}

function weight(add: Collect, value: number | undefined, at: FieldPath): void {
  if (value !== undefined && value < 0) add(at, { message: `weight ${value} is negative` });
}

function httpRuleValues(add: Collect, rule: HttpRule, at: FieldPath): void {
  (rule.match ?? []).forEach((match, m) => {
    const here = [...at, 'match', m];
    for (const field of ['uri', 'scheme', 'method', 'authority'] as const)
      stringMatch(add, match[field], [...here, field]);
    eachValue(add, match.headers, [...here, 'headers']);
    eachValue(add, match.queryParams, [...here, 'queryParams']);
    eachValue(add, match.withoutHeaders, [...here, 'withoutHeaders'], true);
  });
  (rule.corsPolicy?.allowOrigins ?? []).forEach((origin, i) =>
    stringMatch(add, origin, [...at, 'corsPolicy', 'allowOrigins', i]),
  );
  const regexRewrite = rule.rewrite?.uriRegexRewrite;
  if (regexRewrite) {
    const where = [...at, 'rewrite', 'uriRegexRewrite'];
    const problem = regexProblem(regexRewrite.match ?? '');
    add([...where, 'match'], problem);
    if (problem === undefined)
      add([...where, 'rewrite'], rewriteProblem(regexRewrite.match ?? '', regexRewrite.rewrite ?? ''));
  }
  (rule.route ?? []).forEach((d, i) => weight(add, d.weight, [...at, 'route', i, 'weight']));
  for (const fault of ['abort', 'delay'] as const) {
    const value = rule.fault?.[fault]?.percentage?.value;
    if (value !== undefined) add([...at, 'fault', fault, 'percentage', 'value'], percentageProblem(value));
  }
  const mirror = rule.mirrorPercentage?.value;
  if (mirror !== undefined && (mirror < 0 || mirror > 100))
    add([...at, 'mirrorPercentage', 'value'], {
      message: `mirror percentage ${mirror} is not from 0 to 100`,
    });
}

type RouteMatch = NonNullable<NonNullable<HTTPRouteSpec['rules']>[number]['matches']>[number];

function httpRouteValueProblems(spec: HTTPRouteSpec): ValueProblem[] {
  const problems: ValueProblem[] = [];
  const add = (field: FieldPath, problem: PatternProblem | undefined) => {
    if (problem !== undefined) problems.push({ field, message: problem.message, envoyOnly: true });
  };
  (spec.rules ?? []).forEach((rule, r) =>
    (rule.matches ?? []).forEach((match: RouteMatch, m) => {
      const at = ['spec', 'rules', r, 'matches', m];
      if (match.path?.type === 'RegularExpression')
        add([...at, 'path', 'value'], regexProblem(match.path.value ?? ''));
      for (const list of ['headers', 'queryParams'] as const)
        (match[list] ?? []).forEach((h, i) => {
          if (h.type === 'RegularExpression') add([...at, list, i, 'value'], regexProblem(h.value ?? ''));
        });
    }),
  );
  return problems;
}

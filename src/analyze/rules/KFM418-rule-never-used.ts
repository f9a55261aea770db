/**
 * KFM418: a VirtualService rule, or one match of it, that no request can ever reach (docs/semantics.md,
 * Rules that can never apply). Rules are tried in order and the first match wins, so a rule after one
 * without matches, a match that repeats an earlier one, and a match an earlier one takes every request of
 * (`/api/v1/products` after `/api/v1/product`) are dead configuration: the route a model's author meant
 * (a canary, a version pin) silently never applies.
 */
import { Severity } from '../../model/finding.ts';
import type { Finding, IstioCounterpart } from '../../model/finding.ts';
import type { KubeObject } from '../../model/object.ts';
import { canonicalJson } from '../../load/serialize.ts';
import { specOf } from '../../model/specs.ts';
import { GroupKind } from '../../model/vocabulary.ts';
import { firstMatchingRule, matchCovers, type HttpRequest } from '../../mesh/http-match.ts';
import {
  writtenAsVirtualService,
  type HttpMatch,
  type HttpRule,
  type ResolvedVirtualService,
  type StringMatch,
} from '../../mesh/virtual-services.ts';
import { findingOf, type AnalyzeContext, type Rule } from '../rule.ts';

const analyzer = 'schemaValidation.CollectionValidationAnalyzer';
const unreachable: IstioCounterpart = { analyzer, code: 'IST0130' };
const ineffective: IstioCounterpart = { analyzer, code: 'IST0131' };

export const ruleNeverUsed: Rule = {
  code: 'KFM418',
  name: 'rule-never-used',
  severity: Severity.Warning,
  description:
    'a VirtualService rule or match that no request reaches: it follows a rule without matches, repeats an earlier match, or an earlier match takes every request it would',
  reads: [GroupKind.VirtualService],
  istio: [unreachable, ineffective],
  check(context: AnalyzeContext): Finding[] {
    return context
      .mesh()
      .virtualServices.filter(writtenAsVirtualService)
      .flatMap((vs) => {
        const spec = specOf(vs.source, 'networking.istio.io/VirtualService');
        return [
          ...httpFindings(context, vs),
          ...l4Findings(context, vs.source, 'tcp', spec.tcp ?? []),
          ...l4Findings(context, vs.source, 'tls', spec.tls ?? []),
        ];
      });
  },
};

type Section = 'http' | 'tcp' | 'tls';

/** How a rule is named in messages: `http[1] ("send to v2")`. */
function ruleName(section: Section, index: number, name: string | undefined): string {
  return `${section}[${index}]${name ? ` (${JSON.stringify(name)})` : ''}`;
}

/** The findings of one VirtualService section, in the terms every section shares. */
class SectionReport {
  readonly findings: Finding[] = [];
  private readonly context: AnalyzeContext;
  private readonly object: KubeObject;
  private readonly section: Section;
  constructor(context: AnalyzeContext, object: KubeObject, section: Section) {
    this.context = context;
    this.object = object;
    this.section = section;
  }

  rule(index: number, name: string | undefined, reason: string, istio: IstioCounterpart | undefined): void {
    this.findings.push(
      findingOf(
        ruleNeverUsed,
        this.context,
        this.object,
        ['spec', this.section, index],
        `rule ${ruleName(this.section, index, name)} is never used: ${reason}`,
        { fix: 'remove the rule, or move it before the rule that takes its requests', ...withIstio(istio) },
      ),
    );
  }

  match(
    index: number,
    m: number,
    reason: string,
    istio: IstioCounterpart | undefined,
    evidence: string[] = [],
  ): void {
    this.findings.push(
      findingOf(
        ruleNeverUsed,
        this.context,
        this.object,
        ['spec', this.section, index, 'match', m],
        `match ${m} of rule ${this.section}[${index}] is never used: ${reason}`,
        {
          fix: 'remove the match, or put the narrower match in a rule before the wider one',
          evidence,
          ...withIstio(istio),
        },
      ),
    );
  }
}

/** A finding istioctl does not report carries no counterpart (rule.ts would give it the rule's first). */
function withIstio(istio: IstioCounterpart | undefined): { istio?: IstioCounterpart } {
  return istio ? { istio } : {};
}

/** A match as istioctl compares matches: everything but its name. */
function matchKey(match: object): string {
  const { name: _name, ...routing } = match as { name?: string };
  return canonicalJson(routing);
}

/**
 * TCP and TLS rules: after a rule without matches, and matches repeated exactly (their conditions, a
 * port, SNI names and subnets, are not compared further).
 */
function l4Findings(
  context: AnalyzeContext,
  object: KubeObject,
  section: 'tcp' | 'tls',
  routes: readonly { match?: readonly object[] }[],
): Finding[] {
  const report = new SectionReport(context, object, section);
  const seen = new Map<string, [number, number]>();
  let catchAll: number | undefined;
  routes.forEach((route, r) => {
    const matches = route.match ?? [];
    if (catchAll !== undefined) {
      report.rule(
        r,
        undefined,
        `rule ${section}[${catchAll}] has no match and takes every connection first`,
        unreachable,
      );
      return;
    }
    if (matches.length === 0) {
      catchAll = r;
      return;
    }
    let repeated = 0;
    matches.forEach((match, m) => {
      const key = matchKey(match);
      const first = seen.get(key);
      if (first === undefined) return void seen.set(key, [r, m]);
      repeated++;
      report.match(
        r,
        m,
        `match ${first[1]} of rule ${section}[${first[0]}] is the same and is tried first`,
        ineffective,
      );
    });
    if (repeated === matches.length)
      report.rule(r, undefined, 'every match repeats an earlier one', unreachable);
  });
  return report.findings;
}

/** An earlier match a later one is checked against. */
interface Earlier {
  match: HttpMatch;
  rule: number;
  index: number;
}

/**
 * HTTP rules: after a rule without matches, matches repeated exactly, and matches an earlier match covers
 * (http-match.ts, matchCovers); each covered match traced with a request it accepts, where one can be built.
 */
function httpFindings(context: AnalyzeContext, vs: ResolvedVirtualService): Finding[] {
  const report = new SectionReport(context, vs.source, 'http');
  const seen = new Map<string, [number, number]>();
  const earlier: Earlier[] = [];
  let catchAll: number | undefined;
  vs.http.forEach((rule, r) => {
    const matches = rule.match ?? [];
    if (catchAll !== undefined) {
      const by = ruleName('http', catchAll, vs.http[catchAll]?.name);
      report.rule(r, rule.name, `rule ${by} has no match and takes every request first`, unreachable);
      return;
    }
    if (matches.length === 0) {
      catchAll = r;
      return;
    }
    let useless = 0;
    let allRepeated = true;
    matches.forEach((match, m) => {
      const key = matchKey(match);
      const first = seen.get(key);
      if (first !== undefined) {
        useless++;
        const by = `match ${first[1]} of rule ${ruleName('http', first[0], vs.http[first[0]]?.name)}`;
        return report.match(r, m, `${by} is the same and is tried first`, ineffective);
      }
      seen.set(key, [r, m]);
      const cover = earlier.find((e) => matchCovers(e.match, match));
      if (!cover) return void earlier.push({ match, rule: r, index: m });
      useless++;
      allRepeated = false;
      const by = `match ${cover.index} of rule ${ruleName('http', cover.rule, vs.http[cover.rule]?.name)}`;
      report.match(
        r,
        m,
        `${by} takes every request it would, and is tried first`,
        istioSeesOverlap(cover.match, match) ? ineffective : undefined,
        tracedExample(vs, match, cover),
      );
    });
    if (useless === matches.length)
      report.rule(
        r,
        rule.name,
        allRepeated
          ? 'every match repeats an earlier one'
          : 'earlier matches take every request its matches would',
        allRepeated ? unreachable : undefined,
      );
  });
  return report.findings;
}

/**
 * Whether istioctl reports this covered match too (IST0131): it compares only URI prefix matches with
 * different prefixes, with the same header, query and without-header names, and takes a match without a
 * method for GET. kfmesh's own check (matchCovers) finds more; these findings carry no IST code.
 */
function istioSeesOverlap(a: HttpMatch, b: HttpMatch): boolean {
  const pa = a.uri?.prefix;
  const pb = b.uri?.prefix;
  if (pa === undefined || pb === undefined || pa === pb) return false;
  const names = (m: Record<string, StringMatch> | undefined) =>
    Object.keys(m ?? {})
      .sort()
      .join('\u0000');
  for (const field of ['headers', 'queryParams', 'withoutHeaders'] as const)
    if (names(a[field]) !== names(b[field])) return false;
  const text = (s: StringMatch | undefined, absent: string) =>
    s?.exact !== undefined ? `exact:${s.exact}` : s?.prefix !== undefined ? `prefix:${s.prefix}` : absent;
  const agree = (x: string, y: string) => x === y || x.startsWith(y);
  return (
    agree(text(a.method, 'exact:GET'), text(b.method, 'exact:GET')) &&
    agree(text(a.authority, ''), text(b.authority, ''))
  );
}

/** A value a condition accepts, where one can be written down (not for a regex). */
function sample(condition: StringMatch | undefined, absent: string): string | undefined {
  if (condition === undefined) return absent;
  return (
    condition.exact ??
    condition.prefix ??
    condition.pathSeparatedPrefix ??
    (condition.regex === '*' ? 'x' : undefined)
  );
}

/**
 * A request the covered match accepts, sent through the VirtualService's rules: the line says which rule
 * takes it (the covering one). None when the match has a regex or a header it refuses to build from.
 */
function tracedExample(vs: ResolvedVirtualService, match: HttpMatch, cover: Earlier): string[] {
  const path = sample(match.uri, '/');
  const method = sample(match.method, 'GET');
  const authority = sample(match.authority, vs.hosts[0] ?? '');
  const scheme = sample(match.scheme, 'http');
  if (path === undefined || method === undefined || authority === undefined || scheme === undefined)
    return [];
  const values = (conditions: Record<string, StringMatch> | undefined) => {
    const out: Record<string, string> = {};
    for (const [name, condition] of Object.entries(conditions ?? {})) {
      const value = sample(condition, '');
      if (value === undefined) return undefined;
      out[name.toLowerCase()] = value;
    }
    return out;
  };
  const headers = values(match.headers);
  const query = values(match.queryParams);
  if (headers === undefined || query === undefined) return [];
  const request: HttpRequest = { method, scheme, authority, path, query, headers };
  const taken = firstMatchingRule(vs.http, request, {
    gateways: match.gateways ?? vs.gateways,
    port: match.port ?? 80,
    sourceLabels: match.sourceLabels ?? {},
    sourceNamespace: match.sourceNamespace ?? vs.namespace,
  });
  // Only what the trace shows: the covering rule takes the request.
  if (!taken || taken.index !== cover.rule) return [];
  const rule: HttpRule = taken.rule;
  return [
    `${method} ${authority}${path}: takes ${ruleName('http', taken.index, rule.name)} (match ${cover.index})`,
  ];
}

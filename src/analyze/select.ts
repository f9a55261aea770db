/**
 * `kfmesh analyze --analyzer`: running a chosen part of the rules, named as kfmesh names them (a code such
 * as `KFM420`, or a rule name such as `http-deny-refuses-tcp`) or as `istioctl analyze --analyzer` names
 * its analyzers (`gateway.ConflictingGatewayAnalyzer`, `schema.ValidationAnalyzer.Sidecar`; the Go type
 * is taken too). An istioctl analyzer selects the rules that answer it, and of their findings those that
 * carry it (docs/analyzers.md).
 */
import type { Finding } from '../model/finding.ts';
import { InputError } from '../model/errors.ts';
import type { Rule } from './rule.ts';
import { istioctlNames, schemaValidation } from './istio-analyzers.ts';

/** The rules to run, and which of their findings to keep. */
export interface Selection {
  rules: readonly Rule[];
  keeps(finding: Finding): boolean;
}

/** The selection of rules the names ask for; an unknown name is an input error. */
export function selectRules(all: readonly Rule[], names: readonly string[]): Selection {
  const whole = new Set<Rule>();
  const analyzers: { type: string; kind?: string }[] = [];
  for (const name of names) {
    const rule = all.find((r) => r.code.toLowerCase() === name.toLowerCase() || r.name === name);
    if (rule) {
      whole.add(rule);
      continue;
    }
    const analyzer = analyzerOf(name);
    if (!analyzer || !all.some((r) => answers(r, analyzer.type)))
      throw new InputError(
        { field: '--analyzer' },
        `"${name}" is neither a kfmesh rule (a code such as KFM420, or its name) nor an istioctl analyzer a kfmesh rule answers (such as gateway.ConflictingGatewayAnalyzer; docs/analyzers.md lists them)`,
      );
    analyzers.push(analyzer);
  }
  const keeps = (f: Finding): boolean =>
    whole.has(all.find((r) => r.code === f.code) as Rule) ||
    analyzers.some(
      (a) =>
        (f.istio ?? []).some((c) => c.analyzer === a.type) &&
        (a.kind === undefined || f.object.kind === a.kind),
    );
  return { rules: all.filter((r) => whole.has(r) || analyzers.some((a) => answers(r, a.type))), keeps };
}

/** The Go type (and for schema validation, the kind) an istioctl analyzer name or a type stands for. */
function analyzerOf(name: string): { type: string; kind?: string } | undefined {
  if (name.startsWith(schemaValidation.prefix))
    return { type: schemaValidation.type, kind: name.slice(schemaValidation.prefix.length) };
  const byName = Object.entries(istioctlNames).find(([, n]) => n === name);
  if (byName) return { type: byName[0] };
  return name.includes('.') ? { type: name } : undefined;
}

function answers(rule: Rule, type: string): boolean {
  return (rule.istio ?? []).some((c) => c.analyzer === type);
}

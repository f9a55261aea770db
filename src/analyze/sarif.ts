/**
 * Findings as a SARIF 2.1.0 log (what GitHub code scanning takes): one run, the rules as the tool's
 * rules, each finding a result with its level, message (and fix), file position, and the object as a
 * logical location; the evidence and the JSON Patch of a fix are the result's properties. Findings from objects without a file (the built-in example, a live cluster) carry
 * only the logical location.
 */
import { istioCodes, type Finding } from '../model/finding.ts';
import { describeRef } from '../model/object.ts';
import type { Rule } from './rule.ts';

const levels = { error: 'error', warning: 'warning', info: 'note' } as const;

/** The SARIF log of a run of the analyzer. */
export function toSarif(findings: readonly Finding[], rules: readonly Rule[], version: string): object {
  const index = new Map(rules.map((r, i) => [r.code, i]));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'kfmesh',
            version,
            rules: rules.map((r) => ({
              id: r.code,
              name: r.name,
              shortDescription: { text: r.description },
              defaultConfiguration: { level: levels[r.severity] },
              ...(r.istio ? { properties: { istio: r.istio.map((c) => c.code) } } : {}),
            })),
          },
        },
        results: findings.map((f) => {
          const hasFile = f.location !== undefined && !f.location.file.startsWith('<');
          const physical = hasFile
            ? {
                physicalLocation: {
                  artifactLocation: { uri: (f.location?.file ?? '').split('\\').join('/') },
                  ...(f.location?.line !== undefined
                    ? {
                        region: {
                          startLine: f.location.line,
                          ...(f.location.column !== undefined ? { startColumn: f.location.column } : {}),
                        },
                      }
                    : {}),
                },
              }
            : {};
          const name = `${describeRef(f.object)}${f.field ? ` ${f.field}` : ''}`;
          return {
            ruleId: f.code,
            ...(index.has(f.code) ? { ruleIndex: index.get(f.code) } : {}),
            level: levels[f.severity],
            message: { text: `${f.message}${f.fix ? `. Fix: ${f.fix}` : ''}` },
            locations: [{ ...physical, logicalLocations: [{ fullyQualifiedName: name, kind: 'object' }] }],
            ...(f.evidence || f.patch || f.istio
              ? {
                  properties: {
                    ...(f.evidence ? { evidence: f.evidence } : {}),
                    ...(f.patch ? { patch: f.patch } : {}),
                    ...(f.istio ? { istio: istioCodes(f) } : {}),
                  },
                }
              : {}),
          };
        }),
      },
    ],
  };
}

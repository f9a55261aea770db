/** JSON Patches for findings whose fix is obvious, written against the object as it was loaded. */
import { fieldsOf } from '../model/specs.ts';
import type { PatchOperation } from '../model/finding.ts';
import { pointerOf, type Finding } from '../model/finding.ts';
import { isPlainObject, type KubeObject } from '../model/object.ts';
import { stringMatches } from '../mesh/http-match.ts';
import type { StringMatch } from '../mesh/virtual-services.ts';

/**
 * Binds a VirtualService's routes for `host` to `mesh`: `mesh` joins `spec.gateways`, and every match entry
 * that names its own gateways and would take a request for `host` (no authority, or one that `host`
 * matches) gets `mesh` too, so that sidecar clients calling `host` get the same route as the gateway.
 */
export function bindToMesh(virtualService: KubeObject, host: string): PatchOperation[] {
  const spec = fieldsOf(virtualService, 'spec');
  const ops: PatchOperation[] = [];
  if (Array.isArray(spec['gateways']) && !spec['gateways'].includes('mesh'))
    ops.push({ op: 'add', path: pointerOf(['spec', 'gateways', '-']), value: 'mesh' });
  const http = Array.isArray(spec['http']) ? spec['http'] : [];
  http.forEach((route, r) => {
    const matches = isPlainObject(route) && Array.isArray(route['match']) ? route['match'] : [];
    matches.forEach((match, m) => {
      if (!isPlainObject(match) || !Array.isArray(match['gateways']) || match['gateways'].length === 0)
        return;
      if (match['gateways'].includes('mesh')) return;
      const authority = isPlainObject(match['authority']) ? (match['authority'] as StringMatch) : undefined;
      if (authority && !stringMatches(authority, host)) return;
      ops.push({
        op: 'add',
        path: pointerOf(['spec', 'http', r, 'match', m, 'gateways', '-']),
        value: 'mesh',
      });
    });
  });
  return ops;
}

/**
 * Appends values to a list field; when the object has none, sets it to what was in effect (a default)
 * followed by the values.
 */
export function appendTo(
  object: KubeObject,
  field: readonly string[],
  values: readonly string[],
  inEffect: readonly string[],
): PatchOperation[] {
  let at: unknown = object;
  for (const key of field) at = isPlainObject(at) ? at[key] : undefined;
  if (!Array.isArray(at)) return [{ op: 'add', path: pointerOf(field), value: [...inEffect, ...values] }];
  return values.map((value) => ({ op: 'add', path: pointerOf([...field, '-']), value }));
}

/** The `kubectl patch` command that applies a finding's patch (quoted for a POSIX shell). */
export function kubectlPatch(finding: Finding): string {
  const { group, kind, namespace, name } = finding.object;
  const resource = `${kind.toLowerCase()}${group ? `.${group}` : ''}/${name}`;
  const json = JSON.stringify(finding.patch).replaceAll("'", "'\\''");
  return `kubectl patch ${namespace ? `-n ${namespace} ` : ''}${resource} --type=json -p '${json}'`;
}

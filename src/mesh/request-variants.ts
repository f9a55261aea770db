/**
 * The requests that tell policies apart: the methods and header sets AuthorizationPolicies mention, and a
 * bearer token from each RequestAuthentication's issuer. The equivalence check and the analyzer's traced
 * rules send each of them.
 */
import { GroupKind } from '../model/vocabulary.ts';
import { specOf } from '../model/specs.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { policySpec } from './authorization.ts';

const maxHeaderValues = 3;

/** Methods and header sets the policies mention, and a bearer token from each JWT issuer. */
export function requestVariants(
  snapshots: readonly Snapshot[],
): { method: string; headers: Record<string, string> }[] {
  const methods = new Set<string>(['GET']);
  const headers = new Map<string, Set<string>>();
  const issuers = new Set<string>();
  for (const snapshot of snapshots) {
    for (const policy of snapshot.list(GroupKind.AuthorizationPolicy))
      for (const rule of policySpec(policy).rules ?? []) {
        for (const to of rule.to ?? [])
          for (const m of to.operation?.methods ?? []) if (!m.includes('*')) methods.add(m.toUpperCase());
        for (const w of rule.when ?? []) {
          const m = /^request\.headers\[(.+)\]$/.exec(w.key ?? '');
          if (!m || !m[1]) continue;
          const name = m[1].toLowerCase();
          if (name === 'authorization') continue;
          const set = headers.get(name) ?? new Set<string>();
          for (const v of [...(w.values ?? []), ...(w.notValues ?? [])]) set.add(v.includes('*') ? 'x' : v);
          headers.set(name, set);
        }
      }
    for (const ra of snapshot.list(GroupKind.RequestAuthentication))
      for (const rule of specOf(ra, 'security.istio.io/RequestAuthentication').jwtRules ?? [])
        if (rule.issuer !== undefined) issuers.add(rule.issuer);
  }
  const sets: Record<string, string>[] = [{}];
  const names = [...headers.keys()].sort();
  for (const name of names)
    for (const value of [...(headers.get(name) ?? [])].sort().slice(0, maxHeaderValues))
      sets.push({ [name]: value });
  if (names.length > 1)
    sets.push(Object.fromEntries(names.map((n) => [n, [...(headers.get(n) ?? ['x'])].sort()[0] ?? 'x'])));
  for (const issuer of [...issuers].sort()) {
    const token = bearerToken(issuer);
    sets.push({ authorization: token });
    for (const name of names) {
      const value = [...(headers.get(name) ?? ['x'])].sort()[0] ?? 'x';
      sets.push({ authorization: token, [name]: value });
    }
  }
  return [...methods].sort().flatMap((method) => sets.map((h) => ({ method, headers: h })));
}

/** A bearer token the simulator reads as `iss/sub` (its signature is not checked offline). */
export function bearerToken(issuer: string, claims: Readonly<Record<string, string>> = {}): string {
  const part = (o: object) =>
    btoa(JSON.stringify(o)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return `Bearer ${part({ alg: 'none' })}.${part({ iss: issuer, sub: 'user', ...claims })}.c2ln`;
}

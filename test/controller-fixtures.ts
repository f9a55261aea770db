/** The controller's own parts, filled as its informers would fill them, for tests without an API server. */
import type { KubeObject } from '../src/model/object.ts';
import { ObjectCache, kindKeyOf } from '../src/controller/cache.ts';

/** A cache holding `objects` as the controller's informers would after their first lists. */
export function cacheOf(objects: readonly KubeObject[]): ObjectCache {
  const cache = new ObjectCache();
  const byKind = new Map<string, KubeObject[]>();
  for (const o of objects) byKind.set(kindKeyOf(o), [...(byKind.get(kindKeyOf(o)) ?? []), o]);
  for (const [kind, items] of byKind) {
    cache.addKind(kind);
    cache.relisted(kind, items);
  }
  return cache;
}

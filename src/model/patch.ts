/** Applying a JSON Patch (RFC 6902) to an object, with fast-json-patch. */
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import type { KubeObject } from './object.ts';

/** An object with a JSON Patch applied (a copy; the object is left as it was). */
export function patched(object: KubeObject, patch: readonly Operation[]): KubeObject {
  // The values are copied too: `add` puts its value into the document, where later operations would change it.
  return fastJsonPatch.applyPatch(structuredClone(object), structuredClone([...patch]), true, false)
    .newDocument;
}

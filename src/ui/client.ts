/** The console's JSON API, as the page reads it (GET only: the console never changes anything); its types are in console/wire.ts. */
import type { Api, ApiError, ObjectRef } from '../console/wire.ts';

/** `GET path?params`: the answer of that path, or an error with the reason the server gave. */
export async function get<P extends keyof Api>(
  path: P,
  params: Record<string, string | string[]> = {},
): Promise<Api[P]> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params))
    for (const v of Array.isArray(value) ? value : [value]) query.append(name, v);
  const url = query.size > 0 ? `${path}?${query}` : path;
  const response = await fetch(url);
  const body = (await response.json()) as Api[P] & Partial<ApiError>;
  if (!response.ok) throw new Error(body.error ?? `${url}: HTTP ${response.status}`);
  return body;
}

export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

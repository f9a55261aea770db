/** The console's JSON API, as the page reads it (GET only: the console never changes anything); its types are in console/wire.ts. */
import type { Api, ApiError, ObjectRef, PlanProgress, PlanView } from '../console/wire.ts';

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
  // 202 is the plan's progress, which only `planned` reads.
  if (response.status !== 200) throw new Error(body.error ?? `${url}: HTTP ${response.status}`);
  return body;
}

/**
 * The migration plan: the server computes it in the background and answers 202 with its progress until
 * it is done; each progress is given to `progress`, and the plan is asked for again every `every` ms.
 */
export async function planned(progress: (p: PlanProgress) => void, every = 250): Promise<PlanView> {
  for (;;) {
    const response = await fetch('/api/plan');
    // The status says which of the three the body is.
    const body = (await response.json()) as PlanView & PlanProgress & Partial<ApiError>;
    if (response.status === 202) {
      progress(body);
      await new Promise((resolve) => setTimeout(resolve, every));
      continue;
    }
    if (!response.ok) throw new Error(body.error ?? `/api/plan: HTTP ${response.status}`);
    return body;
  }
}

export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

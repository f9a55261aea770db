/** Which of a plan step's differences the page lists: of a severity (or all), holding the words typed. */
import type { PlanDifferenceView } from './wire.ts';

export function differencesShown(
  differences: readonly PlanDifferenceView[],
  severity: string,
  words: string,
): PlanDifferenceView[] {
  const wanted = words.trim().toLowerCase();
  return differences.filter(
    (d) =>
      (!severity || d.severity === severity) &&
      (!wanted || `${d.cause} ${d.example}`.toLowerCase().includes(wanted)),
  );
}

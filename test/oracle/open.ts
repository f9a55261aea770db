/** The open items of the differential tests (open-disagreements.txt): each must still occur, and nothing else may. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../conformance/cases.ts';

/** The listed open items of a list in test/oracle, one per line (`#` comments). */
export function openItems(list = 'open-disagreements.txt'): Set<string> {
  const file = join(projectRoot, 'test/oracle', list);
  if (!existsSync(file)) return new Set();
  return new Set(
    readFileSync(file, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#')),
  );
}

/** Fails on an item found but not listed, and on a listed item (of those starting with `prefix`) not found. */
export function checkAgainstOpen(prefix: string, found: readonly string[], list?: string): void {
  const open = [...openItems(list)].filter((i) => i.startsWith(prefix));
  const unexplained = [...new Set(found)].filter((d) => !open.includes(d));
  const gone = open.filter((d) => !found.includes(d));
  assert.deepEqual(unexplained, [], `not listed as open:\n${unexplained.join('\n')}`);
  assert.deepEqual(gone, [], `listed as open but no longer found (remove them):\n${gone.join('\n')}`);
}

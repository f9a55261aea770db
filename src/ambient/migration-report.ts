/**
 * The migration report: per input object, what it became (converted, kept, removed), the fields that
 * were dropped and why, and what needs a person. Written as Markdown for people and as JSON for tools.
 */
import { formatLocation, type SourceLocation } from '../model/errors.ts';
import { compareRefs, type ObjectRef } from '../model/object.ts';

/** A field or rule left out, with why. */
export function dropped(field: string, message: string): Note {
  return { kind: NoteKind.Dropped, field, message };
}

/** A change the conversion made on purpose. */
export function changed(field: string, message: string): Note {
  return { kind: NoteKind.Changed, field, message };
}

/** Something a person has to do or decide. */
export function action(field: string, message: string): Note {
  return { kind: NoteKind.Action, field, message };
}

/** What became of an input object. */
export const Outcome = {
  /** Replaced by other objects (an Istio route by HTTPRoutes, a sidecar-mode policy by ambient ones). */
  Converted: 'converted',
  /** Changed in place (labels, principals, targetRefs) and kept. */
  Changed: 'changed',
  /** Kept as it was. */
  Kept: 'kept',
  /** Left out of the output: ambient mode has no use for it, or nothing converts it. */
  Removed: 'removed',
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** What a note tells. */
export const NoteKind = {
  /** A field or rule with no ambient or Gateway API equivalent, left out. */
  Dropped: 'dropped',
  /** Something the conversion changed on purpose (a principal, a namespace, a match split). */
  Changed: 'changed',
  /** Something a person has to do or decide. */
  Action: 'action',
} as const;
export type NoteKind = (typeof NoteKind)[keyof typeof NoteKind];

/** One note about an input object. */
export interface Note {
  kind: NoteKind;
  /** The field of the input object the note is about (dot path), when it is about one. */
  field?: string;
  message: string;
}

/** What one input object became. */
export interface ReportEntry {
  object: ObjectRef;
  location?: SourceLocation;
  outcome: Outcome;
  /** The output objects made from it (itself when changed or kept). */
  became: ObjectRef[];
  notes: Note[];
}

/** The whole report: one entry per input object, and the objects the migration added on its own account. */
export interface MigrationReport {
  entries: ReportEntry[];
  /** Objects with no single input object behind them (waypoints, waypoint policies), and why each was added. */
  added: { object: ObjectRef; reason: string }[];
}

/** Counts of outcomes and notes, for the summary. */
export function summarize(report: MigrationReport): Record<string, number> {
  const counts: Record<string, number> = {
    objects: report.entries.length,
    converted: 0,
    changed: 0,
    kept: 0,
    removed: 0,
    added: report.added.length,
    dropped: 0,
    actions: 0,
  };
  for (const entry of report.entries) {
    counts[entry.outcome] = (counts[entry.outcome] ?? 0) + 1;
    for (const note of entry.notes) {
      if (note.kind === NoteKind.Dropped) counts['dropped'] = (counts['dropped'] ?? 0) + 1;
      if (note.kind === NoteKind.Action) counts['actions'] = (counts['actions'] ?? 0) + 1;
    }
  }
  return counts;
}

/** The report as one JSON object (stable key order, sorted entries). */
export function reportToJson(report: MigrationReport): string {
  return `${JSON.stringify(reportDocument(report), null, 2)}\n`;
}

/** The report as `--report FILE.json` writes it (and the console serves it): summary, entries, added objects. */
/** The report as `--report` writes it in JSON: counts, each object's outcome, and what was added. */
export interface ReportDocument {
  summary: Record<string, number>;
  entries: (Pick<ReportEntry, 'object' | 'outcome' | 'became' | 'notes'> & { location?: string })[];
  added: MigrationReport['added'];
}

export function reportDocument(report: MigrationReport): ReportDocument {
  const entries = sortedEntries(report).map((e) => ({
    object: e.object,
    ...(e.location ? { location: formatLocation(e.location) } : {}),
    outcome: e.outcome,
    became: e.became,
    notes: e.notes,
  }));
  const added = [...report.added].sort((a, b) => compareRefs(a.object, b.object));
  return { summary: summarize(report), entries, added };
}

/**
 * The report as Markdown: a summary, what needs a person, what was dropped, every object that was
 * converted, changed or removed, what was added, and the count of objects kept as they were, by kind.
 */
export function reportToMarkdown(report: MigrationReport): string {
  const counts = summarize(report);
  const describeRef = refDescriber(report);
  const objectCell = (entry: ReportEntry): string => {
    const where = entry.location ? ` (${formatLocation(entry.location)})` : '';
    return `\`${describeRef(entry.object)}\`${where}`;
  };
  const lines: string[] = ['# Migration to ambient mode', ''];
  lines.push(
    `${counts['objects']} input objects: ${counts['converted']} converted, ${counts['changed']} changed, ` +
      `${counts['kept']} kept as they were, ${counts['removed']} removed; ${counts['added']} added. ` +
      `${counts['dropped']} fields or rules dropped, ${counts['actions']} things need a person.`,
    '',
  );
  const entries = sortedEntries(report);
  const noteList = (kind: NoteKind, title: string) => {
    const items = entries.flatMap((e) =>
      e.notes
        .filter((n) => n.kind === kind)
        .map((n) => `- ${objectCell(e)}${n.field ? ` \`${n.field}\`` : ''}: ${n.message}`),
    );
    if (items.length === 0) return;
    lines.push(`## ${title}`, '', ...items, '');
  };
  noteList(NoteKind.Action, 'Needs a person');
  noteList(NoteKind.Dropped, 'Dropped');
  const notable = entries.filter((e) => e.outcome !== Outcome.Kept || e.notes.length > 0);
  if (notable.length > 0) {
    lines.push('## Objects', '', '| object | outcome | became | changes |', '|---|---|---|---|');
    for (const e of notable) {
      const became = e.became.map((r) => `\`${describeRef(r)}\``).join('<br>') || '—';
      const changes =
        e.notes
          .filter((n) => n.kind === NoteKind.Changed)
          .map((n) => escapeCell(n.field ? `\`${n.field}\`: ${n.message}` : n.message))
          .join('<br>') || '—';
      lines.push(`| ${objectCell(e)} | ${e.outcome} | ${became} | ${changes} |`);
    }
    lines.push('');
  }
  if (report.added.length > 0) {
    lines.push('## Added', '', '| object | why |', '|---|---|');
    for (const a of [...report.added].sort((x, y) => compareRefs(x.object, y.object)))
      lines.push(`| \`${describeRef(a.object)}\` | ${escapeCell(a.reason)} |`);
    lines.push('');
  }
  const kept = new Map<string, number>();
  for (const e of entries)
    if (e.outcome === Outcome.Kept && e.notes.length === 0) {
      const kind = e.object.group ? `${e.object.kind}.${e.object.group}` : e.object.kind;
      kept.set(kind, (kept.get(kind) ?? 0) + 1);
    }
  if (kept.size > 0) {
    lines.push('## Kept as they were', '', '| kind | objects |', '|---|---|');
    for (const [kind, n] of [...kept].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      lines.push(`| ${kind} | ${n} |`);
    lines.push('');
  }
  return lines.join('\n');
}

function sortedEntries(report: MigrationReport): ReportEntry[] {
  return [...report.entries].sort((a, b) => compareRefs(a.object, b.object));
}

/**
 * Describes refs as `Kind ns/name`, with the API group added to kinds the report holds in several groups
 * (an Istio Gateway and the Gateway API Gateway that replaces it).
 */
function refDescriber(report: MigrationReport): (ref: ObjectRef) => string {
  const groups = new Map<string, Set<string>>();
  const all = [
    ...report.entries.flatMap((e) => [e.object, ...e.became]),
    ...report.added.map((a) => a.object),
  ];
  for (const r of all) groups.set(r.kind, (groups.get(r.kind) ?? new Set()).add(r.group));
  return (ref) => {
    const kind = (groups.get(ref.kind)?.size ?? 0) > 1 ? `${ref.kind} (${ref.group || 'core'})` : ref.kind;
    return `${kind} ${ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name}`;
  };
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/**
 * The migration's output as values. A phase never writes the output: it returns its edits (replace,
 * change, add, note) with the facts it learnt, and migrate.ts applies them in order. While a phase runs,
 * its `Draft` shows it the output as the earlier phases left it with its own edits over it, so a phase
 * reads what it wrote (a free name, an object it changed twice) without touching anything it was given.
 * Both the draft and the output apply an edit by the one function below, so what a phase sees is what
 * the output becomes.
 */
import { type KubeObject, type ObjectRef, objectKey, refOf, compareRefs } from '../model/object.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { type MigrationReport, type Note, Outcome, type ReportEntry } from './migration-report.ts';

/** One change a phase makes to the output. */
export type Edit =
  /** The input object is replaced by these objects (none: removed). */
  | {
      readonly op: 'replace';
      readonly object: KubeObject;
      readonly by: readonly KubeObject[];
      readonly outcome?: Outcome;
    }
  /** The input object is changed in place. */
  | { readonly op: 'change'; readonly object: KubeObject; readonly next: KubeObject }
  /** An object with no input object behind it, unless one of its key is there already. */
  | { readonly op: 'add'; readonly object: KubeObject; readonly reason: string }
  /** A note on what became of an input object. */
  | { readonly op: 'note'; readonly object: KubeObject; readonly note: Note };

/** What a phase returns: its edits, in order, and what it learnt for the phases after it. */
export interface Phase<Facts = undefined> {
  readonly edits: readonly Edit[];
  readonly facts: Facts;
}

/** The result of a phase that only learns facts. */
export function learnt<Facts>(facts: Facts): Phase<Facts> {
  return { edits: [], facts };
}

/** The output as the earlier phases left it, read-only. */
export interface OutputView {
  /** The current output version of an input object (the object itself when it was replaced or removed). */
  current(object: KubeObject): KubeObject;
  /** Whether the output holds an object of this key. */
  has(key: string): boolean;
  /** What has become of an input object so far. */
  outcomeOf(object: KubeObject): Outcome;
  /** The notes on an input object so far. */
  notesOf(object: KubeObject): readonly Note[];
}

/** What applying an edit reads and writes: the output's objects, outcomes, notes and additions. */
interface Ledger extends OutputView {
  put(key: string, object: KubeObject | undefined): void;
  settle(object: KubeObject, outcome: Outcome, became?: readonly ObjectRef[]): void;
  remark(object: KubeObject, note: Note): void;
  added(object: KubeObject, reason: string): void;
}

/** Applies one edit (the only place the meaning of an edit is written). */
function applyEdit(ledger: Ledger, edit: Edit): void {
  const key = objectKey(refOf(edit.object));
  switch (edit.op) {
    case 'replace':
      ledger.put(key, undefined);
      for (const r of edit.by) ledger.put(objectKey(refOf(r)), r);
      ledger.settle(
        edit.object,
        edit.outcome ?? (edit.by.length === 0 ? Outcome.Removed : Outcome.Converted),
        edit.by.map(refOf),
      );
      return;
    case 'change':
      ledger.put(key, edit.next);
      if (ledger.outcomeOf(edit.object) === Outcome.Kept) ledger.settle(edit.object, Outcome.Changed);
      return;
    case 'add':
      if (ledger.has(key)) return;
      ledger.put(key, edit.object);
      ledger.added(edit.object, edit.reason);
      return;
    case 'note':
      ledger.remark(edit.object, edit.note);
      return;
  }
}

/** One phase's edits as it makes them, over the output the earlier phases left. Local to the phase. */
export class Draft implements OutputView {
  readonly #before: OutputView;
  readonly #edits: Edit[] = [];
  /** Objects this phase put (undefined: deleted), outcomes and notes it gave, by object key. */
  readonly #objects = new Map<string, KubeObject | undefined>();
  readonly #outcomes = new Map<string, Outcome>();
  readonly #notes = new Map<string, Note[]>();
  readonly #ledger: Ledger;

  constructor(before: OutputView) {
    this.#before = before;
    this.#ledger = {
      current: (o) => this.current(o),
      has: (k) => this.has(k),
      outcomeOf: (o) => this.outcomeOf(o),
      notesOf: (o) => this.notesOf(o),
      put: (k, o) => this.#objects.set(k, o),
      settle: (o, outcome) => this.#outcomes.set(objectKey(refOf(o)), outcome),
      remark: (o, n) => {
        const key = objectKey(refOf(o));
        this.#notes.set(key, [...(this.#notes.get(key) ?? []), n]);
      },
      added: () => undefined,
    };
  }

  current(object: KubeObject): KubeObject {
    const key = objectKey(refOf(object));
    return this.#objects.has(key) ? (this.#objects.get(key) ?? object) : this.#before.current(object);
  }

  has(key: string): boolean {
    return this.#objects.has(key) ? this.#objects.get(key) !== undefined : this.#before.has(key);
  }

  outcomeOf(object: KubeObject): Outcome {
    return this.#outcomes.get(objectKey(refOf(object))) ?? this.#before.outcomeOf(object);
  }

  notesOf(object: KubeObject): readonly Note[] {
    const own = this.#notes.get(objectKey(refOf(object)));
    return own ? [...this.#before.notesOf(object), ...own] : this.#before.notesOf(object);
  }

  /** Replaces an input object by new objects (none: removed). */
  replace(object: KubeObject, by: readonly KubeObject[], outcome?: Outcome): void {
    this.#record({ op: 'replace', object, by, ...(outcome ? { outcome } : {}) });
  }

  /** Changes an input object in place. */
  change(object: KubeObject, next: KubeObject): void {
    this.#record({ op: 'change', object, next });
  }

  /** Adds an object no input object stands behind (nothing when one of its key is there already). */
  add(object: KubeObject, reason: string): void {
    this.#record({ op: 'add', object, reason });
  }

  note(object: KubeObject, ...notes: readonly Note[]): void {
    for (const note of notes) this.#record({ op: 'note', object, note });
  }

  /** A name for a new object that no input or output object of that kind has in the namespace. */
  freeName(group: string, kind: string, namespace: string, name: string): string {
    let candidate = name;
    for (let i = 2; this.has(objectKey({ group, kind, namespace, name: candidate })); i++)
      candidate = `${name}-${i}`;
    return candidate;
  }

  /** The phase's result: its edits and the facts it learnt. */
  done(): Phase;
  done<Facts>(facts: Facts): Phase<Facts>;
  done<Facts>(facts?: Facts): Phase<Facts | undefined> {
    return { edits: [...this.#edits], facts };
  }

  #record(edit: Edit): void {
    this.#edits.push(edit);
    applyEdit(this.#ledger, edit);
  }
}

/**
 * The output being built: every input object (kept until a phase says otherwise) with its report entry,
 * and the objects added. The bookkeeping of a migration, and all of it: phases only return edits to it.
 */
export class Output implements OutputView {
  readonly #objects = new Map<string, KubeObject>();
  readonly #entries = new Map<string, ReportEntry>();
  readonly #added: MigrationReport['added'] = [];
  readonly #ledger: Ledger;

  constructor(snapshot: Snapshot) {
    for (const object of snapshot.all()) {
      const ref = refOf(object);
      this.#objects.set(objectKey(ref), object);
      const location = snapshot.locate(object);
      this.#entries.set(objectKey(ref), {
        object: ref,
        ...(location ? { location } : {}),
        outcome: Outcome.Kept,
        became: [ref],
        notes: [],
      });
    }
    this.#ledger = {
      current: (o) => this.current(o),
      has: (k) => this.has(k),
      outcomeOf: (o) => this.outcomeOf(o),
      notesOf: (o) => this.notesOf(o),
      put: (k, o) => {
        if (o) this.#objects.set(k, o);
        else this.#objects.delete(k);
      },
      settle: (o, outcome, became) => {
        const entry = this.#entry(o);
        entry.outcome = outcome;
        if (became) entry.became = [...became];
      },
      remark: (o, n) => this.#entry(o).notes.push(n),
      added: (o, reason) => this.#added.push({ object: refOf(o), reason }),
    };
  }

  /** Runs a phase over this output, applies its edits in order, and gives back the facts it learnt. */
  apply<Facts>(phase: () => Phase<Facts>): Facts {
    const { edits, facts } = phase();
    for (const edit of edits) applyEdit(this.#ledger, edit);
    return facts;
  }

  current(object: KubeObject): KubeObject {
    return this.#objects.get(objectKey(refOf(object))) ?? object;
  }

  has(key: string): boolean {
    return this.#objects.has(key);
  }

  outcomeOf(object: KubeObject): Outcome {
    return this.#entry(object).outcome;
  }

  notesOf(object: KubeObject): readonly Note[] {
    return this.#entry(object).notes;
  }

  /** The output objects (sorted like every kfmesh output) and the report. */
  result(): { objects: KubeObject[]; report: MigrationReport } {
    const objects = [...this.#objects.values()].sort((a, b) => compareRefs(refOf(a), refOf(b)));
    return { objects, report: { entries: [...this.#entries.values()], added: this.#added } };
  }

  #entry(object: KubeObject): ReportEntry {
    const entry = this.#entries.get(objectKey(refOf(object)));
    if (!entry) throw new Error(`the migration has no input object ${objectKey(refOf(object))}`);
    return entry;
  }
}

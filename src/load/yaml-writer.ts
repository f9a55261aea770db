/**
 * Writing objects as YAML fast, byte for byte as the `yaml` library writes them with kfmesh's options
 * (YAML 1.1 quoting, no line folding, sequences not indented under their key). The library builds a node
 * tree and asks every scalar which of a dozen styles it needs; this writer goes straight from the value to
 * the text for what almost every Kubernetes object holds (mappings, lists, numbers, booleans, strings
 * that need no quotes), asks the library once for each distinct string that needs quotes or a block (a
 * block's lines then moved to their depth), and hands any object holding something else (a date, a key
 * past 1,024 characters, a string starting with a document marker) to the library whole. A property test
 * holds the two to the same bytes, but where the library writes a string its own parser refuses or
 * misreads: this writer then quotes it.
 */
import { Document, parseYaml, stringifyYaml, visit } from './yaml.ts';
import { isPlainObject } from '../model/object.ts';
import { readsAsOtherThanString, yaml11Options } from './yaml.ts';

/** The options kfmesh writes YAML with; see `toYaml` in serialize.ts. */
export const yamlWriteOptions = {
  version: '1.1',
  lineWidth: 0,
  aliasDuplicateObjects: false,
  indentSeq: false,
} as const;

/** Something this writer leaves to the library: the whole object is then written by it. */
class LeftToLibrary extends Error {}

/** The YAML document of one value (a mapping, as objects are), ending in a newline. */
export function writeYaml(value: unknown): string {
  try {
    const out: string[] = [];
    if (isPlainObject(value) && Object.keys(value).length > 0) writeMap(value, '', '', out);
    else if (Array.isArray(value) && value.length > 0) writeSeq(value, '', '', out);
    else return libraryYaml(value);
    return out.join('');
  } catch (error) {
    if (error instanceof LeftToLibrary) return libraryYaml(value);
    throw error;
  }
}

/**
 * A value written whole by the library, with the multi-line string values it would write unreadably
 * double-quoted (as `libraryText` does; multi-line keys are left as the library writes them).
 */
function libraryYaml(value: unknown): string {
  const document = new Document(value, yamlWriteOptions);
  visit(document, {
    Scalar(key, node) {
      const text = node.value;
      if (key === 'key' || typeof text !== 'string' || !text.includes('\n')) return;
      try {
        if (libraryText(text, false).startsWith('"')) node.type = 'QUOTE_DOUBLE';
      } catch (error) {
        if (!(error instanceof LeftToLibrary)) throw error;
      }
    },
  });
  return document.toString(yamlWriteOptions);
}

/** A mapping's pairs, one a line (a nested collection below its key); the first line starts with `first`. */
function writeMap(map: Record<string, unknown>, indent: string, first: string, out: string[]): void {
  let prefix = first;
  for (const key of Object.keys(map)) {
    const value = map[key];
    // The library leaves out an undefined value (and may then write an empty mapping).
    if (value === undefined) throw new LeftToLibrary();
    const line = `${prefix}${keyText(key)}:`;
    prefix = indent;
    if (isPlainObject(value) && Object.keys(value).length > 0) {
      out.push(`${line}\n`);
      writeMap(value, `${indent}  `, `${indent}  `, out);
    } else if (Array.isArray(value) && value.length > 0) {
      out.push(`${line}\n`);
      writeSeq(value, indent, indent, out);
    } else out.push(`${line} ${inlineText(value, indent)}\n`);
  }
}

/** A sequence's items at `indent`, each after `- ` (a collection item starts on the dash's line). */
function writeSeq(items: readonly unknown[], indent: string, first: string, out: string[]): void {
  let prefix = first;
  for (const item of items) {
    const dash = `${prefix}- `;
    prefix = indent;
    if (isPlainObject(item) && Object.keys(item).length > 0) writeMap(item, `${indent}  `, dash, out);
    else if (Array.isArray(item) && item.length > 0) writeSeq(item, `${indent}  `, dash, out);
    else out.push(`${dash}${inlineText(item === undefined ? null : item, indent)}\n`);
  }
}

/**
 * A value written on its key's or dash's line (a scalar or an empty collection), in a collection at
 * `indent` (a multi-line string's lines go two spaces further).
 */
function inlineText(value: unknown, indent: string): string {
  if (typeof value === 'string') return valueText(value, indent);
  if (typeof value === 'number') return numberText(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value === null) return 'null';
  if (Array.isArray(value)) return '[]';
  if (isPlainObject(value)) return '{}';
  throw new LeftToLibrary();
}

function numberText(value: number): string {
  if (Number.isNaN(value)) return '.nan';
  if (!Number.isFinite(value)) return value < 0 ? '-.inf' : '.inf';
  return Object.is(value, -0) ? '-0' : JSON.stringify(value);
}

function keyText(key: string): string {
  // A key past 1,024 characters is written as an explicit key (`? `) by the library.
  if (key.length > 1024) throw new LeftToLibrary();
  if (key.includes('\n') || documentMarker.test(key)) throw new LeftToLibrary();
  return plain(key) ? key : libraryText(key, true);
}

/** A string value; a multi-line one as the library writes it at the top level, its lines moved in. */
function valueText(text: string, indent: string): string {
  if (documentMarker.test(text)) throw new LeftToLibrary();
  if (!text.includes('\n')) return plain(text) ? text : libraryText(text, false);
  const written = libraryText(text, false);
  // Each run of line breaks in a block scalar is followed by its indentation (two spaces at the top),
  // but for the last; quoted forms have no line break.
  return indent === '' ? written : written.replace(/(\n+) {2}/g, `$1${indent}  `);
}

function plain(text: string): boolean {
  return text !== '' && !notPlain.test(text) && !readsAsOtherThanString(text);
}

/**
 * Characters a plain scalar may not start with, hold or end with (the YAML 1.1 indicators), as the
 * library tests them; a string with any of them, a line break or a control character is quoted.
 */
const notPlain =
  /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$|[\x00-\x08\x0b-\x1f\x7f-\x9f\u{D800}-\u{DFFF}]/u;
/** A document marker at the start (`---`, `...`, `%`): the library's choice then depends on indentation. */
const documentMarker = /^(%|---|\.\.\.)/;

/** Quoted forms the library chose, by string (keys and values apart); bounded, as a controller runs on. */
const quoted = new Map<string, string>();
const quotedLimit = 10_000;

/**
 * How the library writes one string as a key (`"on": null`) or a top-level value (`a: "on"`), without
 * the rest; remembered.
 */
function libraryText(text: string, isKey: boolean): string {
  const memo = `${isKey ? 'k' : 'v'}${text}`;
  let found = quoted.get(memo);
  if (found === undefined) {
    found = askLibrary(text, isKey);
    if (quoted.size >= quotedLimit) quoted.clear();
    quoted.set(memo, found);
  }
  return found;
}

function askLibrary(text: string, isKey: boolean): string {
  const written = stringifyYaml(isKey ? { [text]: null } : { a: text }, yamlWriteOptions);
  const [before, after] = isKey ? ['', ': null\n'] : ['a: ', '\n'];
  const inner = written.slice(before.length, written.length - after.length);
  if (!written.startsWith(before) || !written.endsWith(after) || (isKey && inner.includes('\n')))
    throw new LeftToLibrary();
  return readsBack(written, text, isKey) ? inner : JSON.stringify(text);
}

/**
 * Whether the library reads its own writing of a string back as that string. It does not always: a block
 * scalar whose first line is only spaces is written without the indentation indicator its parser then
 * demands (`" \n\t\n"`), or reads back without those spaces (`" \n"` as `"\n"`). Such a string is
 * written double-quoted instead (JSON's escapes are YAML's).
 */
function readsBack(written: string, text: string, isKey: boolean): boolean {
  try {
    const value: unknown = parseYaml(written, yaml11Options);
    return isPlainObject(value) && (isKey ? Object.keys(value)[0] === text : value['a'] === text);
  } catch {
    return false;
  }
}

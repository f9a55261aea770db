/**
 * The fast way through a manifest: the text cut into its YAML documents, each read by js-yaml (several
 * times faster than a parser that keeps every node's position) with the YAML 1.1 scalar rules of
 * `load/yaml.ts`. Positions are not kept: a document is parsed again with positions only when an error
 * or a finding names one of its fields (see `parse.ts`). A document this reader is not sure to read
 * exactly as the full parser does, it declines, and the full parser reads that document (or, for
 * directives, the whole input).
 */
import { fastReader, type FastRead } from './yaml.ts';

/** One YAML document of an input: its text, where it starts, and its value when read the fast way. */
export interface DocumentText {
  text: string;
  /** The number of lines before the document in the input. */
  linesBefore: number;
  /** Whether js-yaml read the document (`value` is then its value); if not, the full parser reads it. */
  read: boolean;
  value?: unknown;
}

/** Inputs left whole to the full parser: directives (`%YAML`) and the document end marker (`...`). */
const declinedInput = /^%|^\.\.\.(?:[ \t\r\n]|$)/m;
/**
 * Anchors and aliases (`&a`, `*a`) where a node starts. A document where an alias names an anchor is left
 * to the full parser, which limits how far aliases expand. The patterns also match such characters in
 * ordinary text (`*bold*`); a document is declined only when a name is both, which is rare.
 */
const anchors = /(?:^|[\s[{,])&([^\s,[\]{}]+)/g;
const aliases = /(?:^|[\s[{,])\*([^\s,[\]{}]+)/g;

/**
 * Whether the full parser must read a document: an alias to an anchor (above), or a merge key (`<<`).
 * Tags need no check: js-yaml refuses every tag but the three the full parser reads alike (`!!str`,
 * `!!map`, `!!seq`).
 */
function declinedDocument(text: string): boolean {
  if (text.includes('<<')) return true;
  if (!text.includes('&')) return false;
  const anchorNames = new Set([...text.matchAll(anchors)].map((m) => m[1]));
  return anchorNames.size > 0 && [...text.matchAll(aliases)].some((m) => anchorNames.has(m[1]));
}
/** A line that starts a document: `---` at the start of a line, followed by a space or the line's end. */
const documentStart = /^---(?=[ \t\r\n]|$)/gm;

/**
 * The documents of an input, each read the fast way where it can be, or undefined when the whole input
 * needs the full parser (see `declinedInput`). A document js-yaml refuses is left to the full parser,
 * which then says where and why. Past `copyAbove` characters, documents are copied compact (below).
 */
export function splitDocuments(text: string, copyAbove = compactAbove): DocumentText[] | undefined {
  if (text.charCodeAt(0) === 0xfeff || declinedInput.test(text)) return undefined;
  const compact = text.length > copyAbove;
  const documents: DocumentText[] = [];
  let start = 0;
  let linesBefore = 0;
  const starts = [...text.matchAll(documentStart)].map((m) => m.index);
  const reader = fastReader();
  for (const end of [...starts, text.length]) {
    if (end === start && end !== text.length) continue;
    const chunk = text.slice(start, end);
    documents.push({ text: chunk, linesBefore, ...readFast(reader, chunk, compact) });
    linesBefore += countLines(chunk);
    start = end;
  }
  return documents;
}

/**
 * Inputs past this many characters have each document copied through JSON after reading: V8 lays out
 * `JSON.parse`'s objects without the spare room js-yaml's keep, which takes about 40% off a large input's
 * objects for 5–15% more reading time there (docs/benchmarks.md, Memory). Smaller inputs are not worth it.
 */
const compactAbove = 16 * 1024 * 1024;

function readFast(
  reader: { read(text: string): FastRead | undefined },
  text: string,
  compact: boolean,
): { read: boolean; value?: unknown } {
  if (declinedDocument(text)) return { read: false };
  const read = reader.read(text);
  if (!read || hasKeyReadApart(read.value)) return { read: false };
  const value: unknown = compact && !read.notJson ? JSON.parse(JSON.stringify(read.value)) : read.value;
  return { read: true, value };
}

/**
 * A key the two parsers turn into different strings: a null key (`~:`) is `null` to js-yaml and empty to
 * the full parser, and a date key is the date's `String()` to js-yaml and its YAML text to the full
 * parser. Such a document (or one with a quoted key that reads the same) is left to the full parser.
 */
const keyReadApart = /^(?:null$|[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{4} )/;

function hasKeyReadApart(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasKeyReadApart);
  if (value === null || typeof value !== 'object' || value instanceof Date) return false;
  for (const [key, inner] of Object.entries(value)) {
    if (keyReadApart.test(key) || hasKeyReadApart(inner)) return true;
  }
  return false;
}

function countLines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

/**
 * Where a document's content starts (line and column, from 1), as the full parser reports it: the first
 * character after the `---` marker that is not a space, a line break or in a comment.
 */
export function contentStart(document: Pick<DocumentText, 'text' | 'linesBefore'>): {
  line: number;
  column: number;
} {
  const text = document.text;
  let i = text.startsWith('---') ? 3 : 0;
  let line = document.linesBefore + 1;
  let lineStart = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '\n') {
      line++;
      lineStart = i + 1;
    } else if (c === '#') {
      const next = text.indexOf('\n', i);
      i = next === -1 ? text.length : next;
      continue;
    } else if (c !== ' ' && c !== '\t' && c !== '\r') break;
    i++;
  }
  return { line, column: i - lineStart + 1 };
}

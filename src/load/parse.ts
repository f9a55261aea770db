/**
 * Parsing Kubernetes manifests (YAML or JSON, multi-document, `kind: List`) into objects that remember
 * where they came from. Pure: takes text, returns objects; the file reading lives in `files.ts`.
 */
import {
  LineCounter,
  parseAllDocuments,
  isMap,
  isNode,
  isSeq,
  yaml11Options,
  type Document,
} from './yaml.ts';
import { InputError, type SourceLocation, messageOf } from '../model/errors.ts';
import { contentStart, splitDocuments, type DocumentText } from './documents.ts';
import { groupOf, isPlainObject, type KubeObject, type ObjectRef } from '../model/object.ts';

/** A path into an object: keys and list indexes. */
export type FieldPath = readonly (string | number)[];

/** An object read from input, with the means to find the position of any of its fields. */
export interface LoadedObject {
  object: KubeObject;
  /** Where the object starts. */
  location: SourceLocation;
  /** Where a field of the object is written, or the object's own position when the field is absent. */
  locate(path: FieldPath): SourceLocation;
}

/** The text of one input and the name to report it under (`-` is standard input). */
export interface InputText {
  name: string;
  text: string;
}

/** Kubernetes reads YAML with 1.1 rules (`on`, `yes` are booleans): parse the same way. */
const yamlOptions = { ...yaml11Options, prettyErrors: false, uniqueKeys: true } as const;

/** A parsed text: its documents, and the position in the input of an offset into the text. */
interface ParsedText {
  documents: Document[];
  position(offset: number): { line: number; col: number };
}

/** Parses a text that starts `linesBefore` lines into its input, with positions. */
function parseText(text: string, linesBefore = 0): ParsedText {
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, { ...yamlOptions, lineCounter: lines });
  const position = (offset: number) => {
    const pos = lines.linePos(offset);
    return { line: pos.line + linesBefore, col: pos.col };
  };
  return { documents: Array.isArray(docs) ? docs : [docs], position };
}

/**
 * Parses one input into objects; throws InputError with file:line:column on malformed input.
 * Documents are read the fast way when `documents.ts` can (no positions kept); a field's position is then
 * found by parsing that one document again with positions, on the first lookup. Otherwise the whole input
 * is parsed with positions, and its syntax trees are likewise dropped and rebuilt on the first lookup, so
 * a large input does not keep them in memory.
 */
export function parseManifests(input: InputText): LoadedObject[] {
  const documents = splitDocuments(input.text);
  if (!documents) return parseWithPositions(input);
  return documents.flatMap((d) =>
    d.read
      ? objectsOfText(input.name, d)
      : parseWithPositions({ name: input.name, text: d.text }, d.linesBefore),
  );
}

/** The objects of one document read the fast way, their positions found by parsing it again if asked. */
function objectsOfText(file: string, document: DocumentText): LoadedObject[] {
  const value = document.value;
  if (value === null || value === undefined) return [];
  const source = new FastDocument(file, document);
  if (Array.isArray(value)) return value.map((item, index) => new FastObject(item, source, [index]));
  if (!isPlainObject(value))
    throw new InputError(
      { location: source.start() },
      'expected a Kubernetes object (a mapping with apiVersion and kind)',
    );
  if (isListKind(value)) {
    const items = value['items'];
    if (items === undefined || items === null) return [];
    if (!Array.isArray(items))
      throw new InputError(
        { location: source.locate(['items']) ?? { file }, field: 'items' },
        'expected a list of objects',
      );
    return items.map((item, index) => new FastObject(item, source, ['items', index]));
  }
  return [new FastObject(value, source, [])];
}

/**
 * A document read the fast way, shared by its objects: its text is parsed again with positions, once,
 * when a position is first asked for. (A class, not closures: a large input has a hundred thousand.)
 */
class FastDocument {
  readonly #file: string;
  readonly #text: string;
  readonly #linesBefore: number;
  #parsed: ParsedText | undefined;

  constructor(file: string, document: DocumentText) {
    this.#file = file;
    this.#text = document.text;
    this.#linesBefore = document.linesBefore;
  }

  get file(): string {
    return this.#file;
  }

  /** Where the document's content starts. */
  start(): SourceLocation {
    return { file: this.#file, ...contentStart({ text: this.#text, linesBefore: this.#linesBefore }) };
  }

  /** Where a field of the document is written; undefined when it is not. */
  locate(path: FieldPath): SourceLocation | undefined {
    const text = (this.#parsed ??= parseText(this.#text, this.#linesBefore));
    const doc = text.documents.find((d) => d.contents !== null) as Document;
    return locationOf(doc.getIn(path, true), this.#file, text);
  }
}

/** An object of a document read the fast way (the document's root, or an item of a list in it). */
class FastObject implements LoadedObject {
  readonly object: KubeObject;
  readonly #document: FastDocument;
  readonly #prefix: FieldPath;
  #location: SourceLocation | undefined;

  constructor(value: unknown, document: FastDocument, prefix: FieldPath) {
    this.#document = document;
    this.#prefix = prefix;
    this.object = checkObject(
      value,
      () => this.location,
      (path) => this.locate(path),
    );
  }

  get location(): SourceLocation {
    this.#location ??= this.#prefix.length
      ? (this.#document.locate(this.#prefix) ?? { file: this.#document.file })
      : this.#document.start();
    return this.#location;
  }

  locate(path: FieldPath): SourceLocation {
    return (path.length ? this.#document.locate([...this.#prefix, ...path]) : undefined) ?? this.location;
  }
}

/**
 * An input (or one document of it, `linesBefore` lines into it) parsed with positions: the way for what
 * the fast reader declines, and for errors.
 */
export function parseWithPositions(input: InputText, linesBefore = 0): LoadedObject[] {
  const parsed = parseText(input.text, linesBefore);
  let reparsed: ParsedText | undefined;
  const trees = (): ParsedText => (reparsed ??= parseText(input.text, linesBefore));
  const objects: LoadedObject[] = [];
  parsed.documents.forEach((doc, index) => {
    const firstError = doc.errors[0];
    if (firstError) {
      const pos = parsed.position(firstError.pos[0]);
      throw new InputError(
        { location: { file: input.name, line: pos.line, column: pos.col } },
        `invalid YAML: ${firstLine(firstError.message)}`,
      );
    }
    if (doc.contents === null) return;
    const locateIn = (path: FieldPath): SourceLocation | undefined => {
      const text = trees();
      return locationOf((text.documents[index] as Document).getIn(path, true), input.name, text);
    };
    objects.push(...objectsOfDocument(doc, input.name, parsed, locateIn));
  });
  return objects;
}

function locationOf(node: unknown, file: string, text: ParsedText): SourceLocation | undefined {
  if (!isNode(node) || !node.range) return undefined;
  const pos = text.position(node.range[0]);
  return { file, line: pos.line, column: pos.col };
}

function objectsOfDocument(
  doc: Document,
  file: string,
  text: ParsedText,
  locateIn: (path: FieldPath) => SourceLocation | undefined,
): LoadedObject[] {
  const locateNode = (node: unknown): SourceLocation => locationOf(node, file, text) ?? { file };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 1000 });
  } catch (error) {
    // The yaml library refuses aliases that expand past the limit (a "billion laughs" document).
    throw new InputError({ location: locateNode(doc.contents) }, `cannot read: ${messageOf(error)}`);
  }
  if (value === null || value === undefined) return [];
  const rootLocation = locateNode(doc.contents);
  // A sequence of objects (a JSON array, as some tools print lists) is read as a List's items.
  if (Array.isArray(value) && isSeq(doc.contents))
    return value.map((item, index) => objectAt(doc, locateNode, locateIn, item, [index]));
  if (!isPlainObject(value) || !isMap(doc.contents)) {
    throw new InputError(
      { location: rootLocation },
      'expected a Kubernetes object (a mapping with apiVersion and kind)',
    );
  }
  const make = (object: unknown, prefix: FieldPath) => objectAt(doc, locateNode, locateIn, object, prefix);
  if (isListKind(value)) {
    const items = value['items'];
    if (items === undefined || items === null) return [];
    if (!Array.isArray(items)) {
      throw new InputError(
        { location: locateNode(doc.getIn(['items'], true)), field: 'items' },
        'expected a list of objects',
      );
    }
    return items.map((item, index) => make(item, ['items', index]));
  }
  return [make(value, [])];
}

/** The object at `prefix` of a document (the root, or an item of a list), with its location. */
function objectAt(
  doc: Document,
  locateNode: (node: unknown) => SourceLocation,
  locateIn: (path: FieldPath) => SourceLocation | undefined,
  object: unknown,
  prefix: FieldPath,
): LoadedObject {
  const location = locateNode(prefix.length ? doc.getIn(prefix, true) : doc.contents);
  const locate = (path: FieldPath) => (path.length ? locateIn([...prefix, ...path]) : undefined) ?? location;
  return { object: checkObject(object, () => location, locate), location, locate };
}

/** `kind: List` and the typed lists kubectl prints (`PodList`, ...) with apiVersion v1. */
function isListKind(value: Record<string, unknown>): boolean {
  const kind = value['kind'];
  return typeof kind === 'string' && kind.endsWith('List') && 'items' in value;
}

/** The longest name the API server takes (a DNS subdomain; most kinds ask for less). */
const maxNameLength = 253;

/** A name as messages show it: one too long to be a name is cut, its length said. */
function shortened(name: string): string {
  return name.length > maxNameLength ? `${name.slice(0, 40)}… (${name.length} characters)` : name;
}

function checkObject(
  value: unknown,
  location: () => SourceLocation,
  locate: (path: FieldPath) => SourceLocation,
): KubeObject {
  if (!isPlainObject(value))
    throw new InputError(
      { location: location() },
      'expected a Kubernetes object (a mapping with apiVersion and kind)',
    );
  for (const field of ['apiVersion', 'kind'] as const) {
    const v = value[field];
    if (typeof v !== 'string' || v === '')
      throw new InputError({ location: locate([field]), field }, 'expected a non-empty string');
  }
  // From here on the problem names its object (as far as its metadata can be read).
  const raw = isPlainObject(value['metadata']) ? value['metadata'] : {};
  const object: ObjectRef = {
    group: groupOf(String(value['apiVersion'])),
    kind: String(value['kind']),
    namespace: typeof raw['namespace'] === 'string' ? raw['namespace'] : '',
    name: typeof raw['name'] === 'string' ? shortened(raw['name']) : '',
  };
  const fail = (path: FieldPath, message: string): never => {
    throw new InputError({ location: locate(path), object, field: path.join('.') }, message);
  };
  const metadata = value['metadata'] ?? {};
  if (!isPlainObject(metadata))
    return fail(['metadata'], `expected a mapping, got ${describeValue(metadata)}`);
  for (const field of ['name', 'namespace'] as const) {
    const v = metadata[field];
    if (v !== undefined && typeof v !== 'string')
      fail(['metadata', field], `expected a string, got ${describeValue(v)}`);
    // The API server names every object (generateName only asks it to make a name up).
    if (field === 'name' && (v === undefined || v === ''))
      fail(['metadata'], 'the object has no metadata.name');
    if (typeof v === 'string' && v.length > maxNameLength)
      fail(['metadata', field], `expected at most ${maxNameLength} characters, got ${v.length}`);
  }
  for (const field of ['labels', 'annotations'] as const) {
    const map = metadata[field];
    if (map === undefined || map === null) continue;
    if (!isPlainObject(map))
      fail(['metadata', field], `expected a mapping of strings, got ${describeValue(map)}`);
    for (const [key, v] of Object.entries(map as Record<string, unknown>)) {
      if (typeof v !== 'string')
        fail(['metadata', field, key], `expected a string, got ${describeValue(v)} (quote it)`);
    }
  }
  // The value itself when it has its metadata: a copy by spread gets a map of its own that V8 cannot
  // share a frozen form of, and freezing 145,000 such copies cost 27 MB.
  return (value['metadata'] === metadata ? value : { ...value, metadata }) as KubeObject;
}

/** A short description of a JSON value for messages: `number 3`, `boolean true`, `a list`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}

function firstLine(message: string): string {
  const line = message.split('\n')[0] ?? message;
  return line.replace(/ at line \d+, column \d+:?$/, '');
}

/** Reading manifests from files, folders (recursively) and standard input. The only I/O of loading. */
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError, messageOf } from '../model/errors.ts';
import { compareStrings } from '../model/object.ts';
import { parseManifests, type InputText, type LoadedObject } from './parse.ts';

const manifestExtensions = ['.yaml', '.yml', '.json'];

/**
 * Files that hold something else than manifests: `why` says what a file's text is when it is not
 * manifests; such a file found in a folder is skipped and `said`, one named on its own is an error.
 */
export interface NotManifests {
  why: (text: string) => string | undefined;
  said: (file: string, why: string) => void;
}

/** Reads every path (`-` is standard input) and parses all the objects, in a stable order. */
export async function loadPaths(
  paths: readonly string[],
  readStdin: () => Promise<string> = readStandardInput,
  other?: NotManifests,
): Promise<LoadedObject[]> {
  const inputs: InputText[] = [];
  for (const path of paths) {
    if (path === '-') {
      inputs.push({ name: '<stdin>', text: await readStdin() });
      continue;
    }
    for (const file of await manifestFiles(path)) {
      const text = await readText(file);
      const why = other?.why(text);
      if (why && file === path) throw new InputError({ location: { file } }, `${why}: not read as objects`);
      if (why) other?.said(file, why);
      else inputs.push({ name: file, text });
    }
  }
  // Field types are checked where a snapshot is made of them (load/snapshot.ts), as for every source.
  return inputs.flatMap(parseManifests);
}

/**
 * The manifest files a path names: the file itself, or every .yaml/.yml/.json file below a folder, sorted.
 * Symbolic links are followed, to files and folders alike; a link that leads back into a folder being
 * read (a loop) or to nothing is an error naming it, never skipped silently.
 */
async function manifestFiles(path: string, within: readonly string[] = []): Promise<string[]> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const dangling = code === 'ENOENT' && (await lstat(path).catch(() => undefined))?.isSymbolicLink();
    if (code === 'ELOOP') throw new InputError({ location: { file: path } }, 'a symbolic link loop');
    throw new InputError(
      { location: { file: path } },
      dangling ? 'a symbolic link to nothing' : 'no such file or directory',
    );
  }
  if (!info.isDirectory()) return [path];
  const real = await realpath(path);
  if (within.includes(real))
    throw new InputError(
      { location: { file: path } },
      `a symbolic link loop: this folder is ${real}, which is already being read`,
    );
  const found: string[] = [];
  const entries = await readdir(path, { withFileTypes: true });
  entries.sort((a, b) => compareStrings(a.name, b.name));
  for (const entry of entries) {
    const full = join(path, entry.name);
    const isDirectory = entry.isDirectory() || (entry.isSymbolicLink() && (await isFolder(full)));
    if (isDirectory) found.push(...(await manifestFiles(full, [...within, real])));
    else if (manifestExtensions.some((ext) => entry.name.endsWith(ext))) {
      if (entry.isSymbolicLink()) await manifestFiles(full, within); // a link to nothing is reported
      found.push(full);
    }
  }
  return found;
}

/** Whether a path leads to a folder (a link to nothing leads nowhere: it is then read as a file name). */
async function isFolder(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

async function readText(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new InputError({ location: { file } }, `cannot read: ${messageOf(error)}`);
  }
  return utf8Text(bytes, file);
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The bytes as UTF-8 text; bytes that are not UTF-8 are bad input at their line (YAML and JSON are
 * UTF-8, and the API server refuses anything else), rather than read as U+FFFD in a name.
 */
export function utf8Text(bytes: Uint8Array, file: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    // Where: the first U+FFFD of a lenient decoding that the bytes do not spell out themselves.
    const text = Buffer.from(bytes).toString('utf8');
    for (let i = text.indexOf('\uFFFD'); i >= 0; i = text.indexOf('\uFFFD', i + 1)) {
      const offset = Buffer.byteLength(text.slice(0, i));
      if (bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd) continue;
      const lines = text.slice(0, i).split('\n');
      throw new InputError(
        { location: { file, line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 } },
        `not UTF-8 text: byte 0x${(bytes[offset] ?? 0).toString(16)} at offset ${offset}`,
      );
    }
    throw new InputError({ location: { file } }, 'not UTF-8 text');
  }
}

/** Reads all of standard input as UTF-8. */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return utf8Text(Buffer.concat(chunks), '<stdin>');
}

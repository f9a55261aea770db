/** Reading manifests from files, folders (recursively) and standard input. The only I/O of loading. */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from '../model/errors.ts';
import { compareStrings } from '../model/object.ts';
import { parseManifests, type InputText, type LoadedObject } from './parse.ts';

const manifestExtensions = ['.yaml', '.yml', '.json'];

/** Reads every path (`-` is standard input) and parses all the objects, in a stable order. */
export async function loadPaths(
  paths: readonly string[],
  readStdin: () => Promise<string> = readStandardInput,
): Promise<LoadedObject[]> {
  const inputs: InputText[] = [];
  for (const path of paths) {
    if (path === '-') {
      inputs.push({ name: '<stdin>', text: await readStdin() });
      continue;
    }
    for (const file of await manifestFiles(path)) inputs.push({ name: file, text: await readText(file) });
  }
  return inputs.flatMap(parseManifests);
}

/** The manifest files a path names: the file itself, or every .yaml/.yml/.json file below a folder, sorted. */
async function manifestFiles(path: string): Promise<string[]> {
  let info;
  try {
    info = await stat(path);
  } catch {
    throw new InputError({ location: { file: path } }, 'no such file or directory');
  }
  if (!info.isDirectory()) return [path];
  const found: string[] = [];
  const entries = await readdir(path, { withFileTypes: true });
  entries.sort((a, b) => compareStrings(a.name, b.name));
  for (const entry of entries) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) found.push(...(await manifestFiles(full)));
    else if (manifestExtensions.some((ext) => entry.name.endsWith(ext))) found.push(full);
  }
  return found;
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError({ location: { file } }, `cannot read: ${(error as Error).message}`);
  }
}

/** Reads all of standard input as UTF-8. */
export async function readStandardInput(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

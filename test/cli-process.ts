/** Runs the real `kfmesh` program (the built bin) as a child process, as tests outside the project do. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

/** The built command-line entry point. */
export const kfmeshBin = resolve(fileURLToPath(import.meta.url), '../../src/cli/main.js');

/** What a run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `kfmesh` with the arguments (and optional standard input). */
export function runKfmesh(args: readonly string[], stdin?: string): CliRun {
  const result = spawnSync(process.execPath, [kfmeshBin, ...args], {
    input: stdin ?? '',
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  return { code: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The objects of `-o json` output of render or migrate: a `v1` `List` (as `kubectl get -o json` prints);
 * throws when the output is anything else.
 */
export function listItems<T = Record<string, unknown>>(stdout: string): T[] {
  const list = JSON.parse(stdout) as { apiVersion?: unknown; kind?: unknown; items?: unknown };
  if (list.apiVersion !== 'v1' || list.kind !== 'List' || !Array.isArray(list.items))
    throw new Error(`expected a v1 List, got ${stdout.slice(0, 200)}`);
  return list.items as T[];
}

/** Writes objects as one multi-document YAML file in a fresh temporary folder; returns its path. */
export function writeManifest(objects: readonly unknown[], name = 'input.yaml'): string {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-test-'));
  const file = join(dir, name);
  writeFileSync(file, objects.map((o) => stringify(o)).join('---\n'));
  return file;
}

/** Writes raw text to a file in a fresh temporary folder; returns its path. */
export function writeText(text: string, name = 'input.yaml'): string {
  const dir = mkdtempSync(join(tmpdir(), 'kfmesh-test-'));
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

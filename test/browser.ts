/**
 * Real Chromium for the console's tests and benchmark: Debian's `chromium` (or KFMESH_CHROMIUM), driven by
 * playwright-core, with the flags that keep it from reaching for the network.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const chromiumPath = process.env['KFMESH_CHROMIUM'] ?? '/usr/bin/chromium';

/** Why the browser tests can't run here, or undefined when they can. */
export function browserMissing(): string | undefined {
  return existsSync(chromiumPath)
    ? undefined
    : `needs Chromium at ${chromiumPath} (apt-get install chromium, or set KFMESH_CHROMIUM)`;
}

/** node:test options: skipped without Chromium, except under CI=true, where they run and fail. */
export function browserTestOptions(): { skip: string | false } {
  const missing = browserMissing();
  return { skip: missing && process.env['CI'] !== 'true' ? missing : false };
}

/** Chromium, with `extraArgs` after the usual flags (for example a host resolver rule). */
export function launchBrowser(extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      ...extraArgs,
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

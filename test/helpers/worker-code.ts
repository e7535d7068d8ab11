/**
 * The worker threads' code for unit tests that run src/ (where nothing is embedded: src/fs/worker-code.ts): built
 * from src/ by the same function scripts/bundle.mjs embeds into dist/cli.js (scripts/worker-bundles.mjs), once per
 * test file. The loaded native addon for such tests: the built one in dist/, checked against its own digest.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildWorkerCode } from '../../scripts/worker-bundles.mjs';
import { loadNativeAddon, nativeAddonUrl, type LoadedNativeAddon } from '../../src/fs/native-load.js';
import type { WorkerName } from '../../src/fs/worker-code.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** dist/, where the build puts the native addon. */
export const DIST = new URL('../../dist/', import.meta.url);

let built: Promise<Record<string, string>> | null = null;

/** Worker `name`'s code, bundled from src/. */
export async function workerCode(name: WorkerName): Promise<string> {
  built ??= buildWorkerCode(ROOT).then((r) => r.code);
  const code = (await built)[name];
  if (!code) throw new Error(`no worker ${name} in src/fs`);
  return code;
}

/** The sha256 of a file (hex), or null when it cannot be read. */
export function fileSha256(url: URL): string | null {
  try {
    return createHash('sha256').update(readFileSync(url)).digest('hex');
  } catch {
    return null;
  }
}

/** The addon built into dist/, loaded as the server loads it at start-up (null where none was built). */
export function loadBuiltAddon(): LoadedNativeAddon | null {
  const url = nativeAddonUrl(DIST);
  return loadNativeAddon(url, fileSha256(url)).loaded;
}

/**
 * The start-up step for the server's own files (docs/security.md "The server's own code and token files"), run by
 * the CLI before any request is read: the state directory is checked (created when absent outside the roots), the private
 * directories a killed server left (gh token configurations, the native addon's copy) are swept, and the native
 * addon is loaded from a verified private copy — unless the process is a one-shot `call` of a tool that never reads
 * through it. After this step the server loads no file as code.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultStateDir, type Config } from '../config.js';
import { loadNativeAddonAtStart, nativeAddonUrl, type NativeReadsState } from '../fs/native-load.js';
import { sweepOwnedTempDirs } from '../fs/owned-temp.js';
import { searchReaderPool } from '../fs/search-reader.js';
import { prepareStateDir } from '../fs/state-dir.js';
import { ghTokenBases } from '../vcs/github-token.js';
import { isInsideRoots } from '../policy/containment.js';

/**
 * The tools whose calls may read files through the native addon (content search, and replace_in_files, which shares
 * its reader threads) or report whether it is in use (list_allowed_directories). A one-shot `call` of any other tool
 * does not load it: its answers are the same either way (the addon only speeds up reading), and loading it — read,
 * digest, private copy, map — was about 5 ms of such a call's start (docs/benchmarks.md).
 */
const NATIVE_READ_TOOLS: ReadonlySet<string> = new Set([
  'search_files',
  'replace_in_files',
  'list_allowed_directories',
]);

/**
 * Runs the start-up step; `log` gets one line per removed leftover and per addon that is there but not loaded.
 * @returns whether content search reads through the native addon, and if not why
 * @throws UsageError when the state directory cannot serve (exit 2)
 */
export function prepareStartupFiles(config: Config, log: (line: string) => void): NativeReadsState {
  prepareStateDir(
    config.stateDir,
    config.stateDir === defaultStateDir() ? 'the state directory (default; set --state-dir)' : '--state-dir',
    (real) => isInsideRoots(config.roots, real),
  );
  const addonDir = path.dirname(fileURLToPath(nativeAddonUrl()));
  for (const dir of sweepOwnedTempDirs([...ghTokenBases(), addonDir])) {
    log(`fs-tools: removed ${dir}, a private directory left by a server that is no longer running`);
  }
  const mode = config.mode;
  const native: NativeReadsState =
    config.native === 'off'
      ? { inUse: false, reason: '--native=off' }
      : mode.kind === 'call' && !NATIVE_READ_TOOLS.has(mode.tool)
        ? { inUse: false, reason: `not loaded for a call of ${mode.tool}` }
        : loadNativeAddonAtStart(log);
  searchReaderPool.setNativeAddon(native.inUse ? native.path : null);
  return native;
}

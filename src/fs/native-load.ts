/**
 * Loading content search's native addon at start-up (docs/security.md "The server's own code and token files").
 * The addon ships in the package (dist/native/<platform>-<arch>/fs_tools_native.node) and the package may lie inside
 * a root, where the agent can overwrite it. So the server loads it once, before it reads the first request, and only
 * bytes whose sha256 equals the digest scripts/bundle.mjs recorded in the bundle when it built them:
 *   1. read the installed file through one descriptor (a regular file of at most MAX_ADDON_BYTES) and check its digest;
 *   2. write those bytes to a new file in a private directory (src/fs/owned-temp.ts, mode 0700) and unlink the file
 *      and the directory, keeping only the descriptor: no name of the copy exists any more, no tool can reach it;
 *   3. read the copy back through the descriptor and check the digest again (nothing changed it before the unlink);
 *   4. dlopen `/proc/self/fd/N`. Reader threads attach to the same name (src/fs/native-reader.ts
 *      `attachNativeAddon`), which the dynamic loader finds already loaded.
 * The copy's directory is tried in os.tmpdir(), /dev/shm and the addon's own directory (a temporary directory
 * mounted noexec cannot map code). When no digest was recorded (a build without the addon, or src/ run by vitest),
 * nothing loads and content search uses its JavaScript path.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkedNativeAddon, type NativeAddon } from './native-reader.js';
import { makeOwnedTempDir, removeOwnedTempDir } from './owned-temp.js';
import { processSlot } from '../process-slots.js';

/** Set by scripts/bundle.mjs: the sha256 (hex) of each native file it built, by `<platform>-<arch>/<name>`. */
declare const FS_TOOLS_NATIVE_DIGESTS: Readonly<Record<string, string>> | undefined;

/** The largest addon file read, bytes (the built one is about 30 KiB). */
export const MAX_ADDON_BYTES = 16 * 1024 * 1024;

/** Where the addon of this platform lies, relative to the bundle (dist/) or to another directory URL. */
export function nativeAddonUrl(base: URL = new URL('./', import.meta.url)): URL {
  return new URL(`native/${process.platform}-${process.arch}/fs_tools_native.node`, base);
}

/**
 * The digest this build recorded for this platform's native file `name` (default: content search's addon; the
 * kernel wall's `fs_tools_landlock.node` and `fs_tools_landlock_exec` are recorded too), or null (none built, or not
 * a bundle).
 */
export function recordedNativeDigest(name = 'fs_tools_native.node'): string | null {
  if (typeof FS_TOOLS_NATIVE_DIGESTS === 'undefined') return null;
  return FS_TOOLS_NATIVE_DIGESTS[`${process.platform}-${process.arch}/${name}`] ?? null;
}

/** A loaded addon and the path it was loaded by (`/proc/self/fd/N`; reader threads attach by it). */
export interface LoadedNativeAddon<T = NativeAddon> {
  addon: T;
  path: string;
}

/**
 * What loading found. `unsupported`: not Linux; `no_digest`: no digest recorded for this platform; `missing`: no
 * readable regular file (or one over MAX_ADDON_BYTES); `digest_mismatch`: the file is not the one built;
 * `not_loadable`: the verified bytes did not load in any private directory (noexec everywhere, no /proc);
 * `wrong_interface`: they loaded but do not export what the caller checks for.
 */
export type NativeLoad<T = NativeAddon> =
  | { loaded: LoadedNativeAddon<T> }
  | {
      loaded: null;
      reason: 'unsupported' | 'no_digest' | 'missing' | 'digest_mismatch' | 'not_loadable' | 'wrong_interface';
    };

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The whole content of the regular file open at `fd` (at most MAX_ADDON_BYTES), or null. */
function readAll(fd: number): Buffer | null {
  const st = fstatSync(fd);
  if (!st.isFile() || st.size > MAX_ADDON_BYTES) return null;
  const out = Buffer.alloc(st.size);
  let at = 0;
  while (at < out.length) {
    const n = readSync(fd, out, at, out.length - at, at);
    if (n === 0) break;
    at += n;
  }
  // A file that changed size while read is not the file that was checked.
  return at === out.length && readSync(fd, Buffer.alloc(1), 0, 1, at) === 0 ? out : null;
}

/**
 * Loads the addon at `url` if its sha256 is `expectedSha256` (see the module comment). Never throws.
 * @param url the installed .node file (default: this build's, next to the bundle)
 * @param expectedSha256 hex digest (default: the one this build recorded)
 */
export function loadNativeAddon(
  url: URL = nativeAddonUrl(),
  expectedSha256: string | null = recordedNativeDigest(),
): NativeLoad {
  return loadVerifiedAddon(url, expectedSha256, checkedNativeAddon);
}

/** The bytes of the regular file at `file` read through one descriptor (at most MAX_ADDON_BYTES), or null. */
function readFileOnce(file: string): Buffer | null {
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      return readAll(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

/**
 * Loads the native addon at `url` the verified way of the module comment (steps 1–4) when its sha256 is
 * `expectedSha256`, and returns it when `check` accepts its exports (else `wrong_interface`). Used for content
 * search's addon and the kernel wall's (src/fs/kernel-wall.ts). Never throws.
 */
export function loadVerifiedAddon<T>(
  url: URL,
  expectedSha256: string | null,
  check: (exports: unknown) => T | null,
): NativeLoad<T> {
  if (process.platform !== 'linux') return { loaded: null, reason: 'unsupported' };
  if (!expectedSha256) return { loaded: null, reason: 'no_digest' };
  let file: string;
  try {
    file = fileURLToPath(url);
  } catch {
    return { loaded: null, reason: 'missing' };
  }
  const bytes = readFileOnce(file);
  if (!bytes) return { loaded: null, reason: 'missing' };
  if (sha256(bytes) !== expectedSha256) return { loaded: null, reason: 'digest_mismatch' };
  for (const base of [os.tmpdir(), '/dev/shm', path.dirname(file)]) {
    const loaded = loadPrivateCopy(base, path.basename(file), bytes, expectedSha256, check);
    if (loaded === 'wrong_interface') return { loaded: null, reason: loaded };
    if (loaded) return { loaded };
  }
  return { loaded: null, reason: 'not_loadable' };
}

/**
 * Steps 2–4 of the module comment in `base`; null when any fails (nothing is left behind), `wrong_interface` when
 * the verified bytes loaded but `check` refused their exports.
 */
function loadPrivateCopy<T>(
  base: string,
  name: string,
  bytes: Buffer,
  expectedSha256: string,
  check: (exports: unknown) => T | null,
): LoadedNativeAddon<T> | 'wrong_interface' | null {
  let dir: string;
  try {
    dir = makeOwnedTempDir(base, 'native');
  } catch {
    return null;
  }
  let fd: number | null = null;
  let loaded = false;
  try {
    const copyName = path.join(dir, name);
    fd = openSync(
      copyName,
      constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      0o700,
    );
    writeAll(fd, bytes);
    unlinkSync(copyName);
    removeOwnedTempDir(dir);
    const copy = readAll(fd);
    if (!copy || sha256(copy) !== expectedSha256) throw new Error('the copy changed');
    const loadPath = `/proc/self/fd/${fd}`;
    const module = { exports: {} as unknown };
    process.dlopen(module, loadPath);
    loaded = true;
    const addon = check(module.exports);
    // Loaded code stays mapped: keep the descriptor (and its name) for the process's life either way.
    if (!addon) return 'wrong_interface';
    // The descriptor stays open for the process's life: it is the name reader threads attach by.
    return { addon, path: loadPath };
  } catch {
    if (fd !== null && !loaded) closeSync(fd);
    removeOwnedTempDir(dir);
    return null;
  }
}

function writeAll(fd: number, bytes: Buffer): void {
  let at = 0;
  while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at, at);
}

/**
 * Copies the native file `source` to `dest` (a new file, mode `mode`, in a directory only this user can write) when
 * its sha256 is `expectedSha256`: the source is read through one descriptor and checked, written with O_EXCL and
 * O_NOFOLLOW, and the copy read back by name and checked again, so what later runs by `dest` is the file built.
 * Used for the kernel wall's exec helper (src/cli/kernel-wall.ts). Never throws; on any failure `dest` is removed.
 * @returns 'copied', or why not: `missing` (no such regular file), `no_digest`, `digest_mismatch`, `failed`
 */
export function copyVerifiedNativeFile(
  source: string,
  dest: string,
  expectedSha256: string | null,
  mode: number,
): 'copied' | 'missing' | 'no_digest' | 'digest_mismatch' | 'failed' {
  const bytes = readFileOnce(source);
  if (!bytes) return 'missing';
  if (!expectedSha256) return 'no_digest';
  if (sha256(bytes) !== expectedSha256) return 'digest_mismatch';
  let created = false;
  try {
    const fd = openSync(
      dest,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      mode,
    );
    created = true;
    try {
      writeAll(fd, bytes);
    } finally {
      closeSync(fd);
    }
    const copy = readFileOnce(dest);
    if (!copy || sha256(copy) !== expectedSha256) throw new Error('the copy changed');
    return 'copied';
  } catch {
    if (created) {
      try {
        unlinkSync(dest);
      } catch {
        // Already gone.
      }
    }
    return 'failed';
  }
}

/**
 * Whether content search reads files through the native addon (docs/security.md "The server's own code and token
 * files"): on, with the path reader threads attach by, or off and why — `--native=off`, or a NativeLoad reason in
 * words (nativeLoadReason). Shown by `--version` and list_allowed_directories.
 */
export type NativeReadsState = { inUse: true; path: string } | { inUse: false; reason: string };

/** A NativeLoad failure in words, for `--version`, list_allowed_directories and start-up lines. */
export function nativeLoadReason(reason: Extract<NativeLoad, { loaded: null }>['reason']): string {
  switch (reason) {
    case 'unsupported':
      return `no native addon on ${process.platform}`;
    case 'no_digest':
      return 'this build has no native addon (built without a C compiler)';
    case 'missing':
      return 'the native addon file is missing';
    case 'digest_mismatch':
      return 'the native addon is not the one this build recorded (sha256 differs)';
    case 'not_loadable':
      return 'the native addon could not be loaded (load error)';
    case 'wrong_interface':
      return 'the native addon loaded but does not export what this build expects (load error)';
  }
}

/** `native reads: on` or `native reads: off (why)`: one line for `--version` and list_allowed_directories. */
export function describeNativeReads(state: NativeReadsState): string {
  return state.inUse
    ? 'native reads: on (content search reads through the native addon)'
    : `native reads: off (${state.reason})`;
}

/** The addon as the main thread loaded it at start-up (`loadNativeAddonAtStart`), else null. */
const mainThread = processSlot('fs/native-load', (): { addon: NativeAddon | null } => ({ addon: null }));

/**
 * The addon the server's main thread loaded at start-up (the git view's batch stat, src/vcs/git-objects.ts), or null
 * when it did not (`--native=off`, a one-shot call of a tool that reads no files, no addon built or verified): the
 * callers then take their JavaScript path.
 */
export function mainThreadNativeAddon(): NativeAddon | null {
  return mainThread.addon;
}

/**
 * The CLI's start-up step: loads this build's addon and says whether reader threads use it. A file that is there
 * but is not the one built, or verified bytes that do not load, is also said in one line through `log`; an absent
 * addon is not (builds without a compiler have none).
 */
export function loadNativeAddonAtStart(log: (line: string) => void): NativeReadsState {
  const result = loadNativeAddon();
  if (result.loaded) {
    mainThread.addon = result.loaded.addon;
    return { inUse: true, path: result.loaded.path };
  }
  if (result.reason === 'digest_mismatch') {
    log(
      'fs-tools: the native addon next to the server is not the one this build recorded (sha256 differs); it is not loaded, content search uses its JavaScript path',
    );
  } else if (result.reason === 'not_loadable') {
    log('fs-tools: the native addon could not be loaded from a private copy; content search uses its JavaScript path');
  }
  return { inUse: false, reason: nativeLoadReason(result.reason) };
}

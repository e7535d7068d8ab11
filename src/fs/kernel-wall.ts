/**
 * The kernel wall (docs/security.md "The kernel wall"): Linux Landlock confines the server process — its main thread,
 * the libuv pool that does its file I/O, the worker threads and every child it starts (git, gh, glab) — to a list of
 * paths decided at start-up. The policy layer stays the first wall; this one makes a policy bug fail closed: a path
 * the policy wrongly let through is refused by the kernel (EACCES), reported as `FILE_POLICY_DENIED` with
 * `details.source: "kernel"`.
 *
 * The addon (native/fs_tools_landlock.c, built by scripts/build-native.mjs into
 * dist/native/<platform>-<arch>/fs_tools_landlock.node) makes the three system calls; this module loads it, turns
 * access classes into Landlock rights for the kernel's ABI, and applies a rule list once. Which paths are on the list
 * is the CLI's decision (src/cli/kernel-wall-rules.ts).
 */
import { loadVerifiedAddon, recordedNativeDigest } from './native-load.js';

/** The addon's exports (native/fs_tools_landlock.c). */
export interface KernelWallAddon {
  /** The highest Landlock ABI of this kernel, or a negative errno when it has none. */
  abi(): number;
  /**
   * The libuv pool's size exactly as libuv computes it when the pool starts (1..1024; `UV_THREADPOOL_SIZE=-1` is
   * 1024): computed by the addon with libuv's own arithmetic, so that no pool thread is left out.
   */
  poolThreads(): number;
  /**
   * Confines every thread of the process (the libuv pool's `poolThreads()` threads, then the main thread) and
   * resolves with one boolean per rule: true when that path did not exist and was skipped.
   * @throws Error synchronously for malformed arguments or a ruleset the kernel refuses (nothing confined); the
   *   promise rejects when the pool could not be confined (nothing confined either)
   */
  confineProcess(handled: number, rules: ReadonlyArray<readonly [string, number]>): Promise<boolean[]>;
}

/** Landlock's filesystem rights (uapi/linux/landlock.h), with the ABI that introduced each. */
const RIGHTS = {
  execute: { bit: 1 << 0, abi: 1 },
  writeFile: { bit: 1 << 1, abi: 1 },
  readFile: { bit: 1 << 2, abi: 1 },
  readDir: { bit: 1 << 3, abi: 1 },
  removeDir: { bit: 1 << 4, abi: 1 },
  removeFile: { bit: 1 << 5, abi: 1 },
  makeChar: { bit: 1 << 6, abi: 1 },
  makeDir: { bit: 1 << 7, abi: 1 },
  makeReg: { bit: 1 << 8, abi: 1 },
  makeSock: { bit: 1 << 9, abi: 1 },
  makeFifo: { bit: 1 << 10, abi: 1 },
  makeBlock: { bit: 1 << 11, abi: 1 },
  makeSym: { bit: 1 << 12, abi: 1 },
  refer: { bit: 1 << 13, abi: 2 },
  truncate: { bit: 1 << 14, abi: 3 },
  ioctlDev: { bit: 1 << 15, abi: 5 },
} as const;

type Right = keyof typeof RIGHTS;

/**
 * What a rule allows beneath its path:
 * - `rw`: read, list, write, create, rename, remove files, directories, links and FIFOs (never devices);
 * - `ro`: read and list;
 * - `rx`: read, list and execute (programs and their libraries);
 * - `dev`: read and write an existing file (/dev/null), nothing else.
 */
export type WallAccess = 'rw' | 'ro' | 'rx' | 'dev';

const ACCESS: Record<WallAccess, readonly Right[]> = {
  ro: ['readFile', 'readDir'],
  rx: ['readFile', 'readDir', 'execute'],
  dev: ['readFile', 'writeFile', 'truncate'],
  rw: [
    'readFile',
    'readDir',
    'writeFile',
    'removeDir',
    'removeFile',
    'makeDir',
    'makeReg',
    'makeSym',
    'makeFifo',
    'makeSock',
    'refer',
    'truncate',
  ],
};

/** One rule: `access` beneath `path` (an absolute real path; a file rule keeps only the file rights). */
export interface WallRule {
  path: string;
  access: WallAccess;
}

/** What the wall is doing in this process: enforced with an ABI, or off with the reason (one sentence). */
export type WallState = { enforced: true; mechanism: 'landlock'; abi: number } | { enforced: false; reason: string };

/** Every right an ABI knows: the ruleset handles all of them, so whatever a rule does not allow is refused. */
export function handledRights(abi: number): number {
  let mask = 0;
  for (const r of Object.values(RIGHTS)) if (r.abi <= abi) mask |= r.bit;
  return mask;
}

/** The rights of an access class under an ABI. */
export function accessRights(access: WallAccess, abi: number): number {
  let mask = 0;
  for (const name of ACCESS[access]) if (RIGHTS[name].abi <= abi) mask |= RIGHTS[name].bit;
  return mask;
}

/** Where the addon of this platform lies, relative to the bundle (dist/). */
export function kernelWallAddonUrl(base: URL = new URL('./', import.meta.url)): URL {
  return new URL(`native/${process.platform}-${process.arch}/fs_tools_landlock.node`, base);
}

/** The addon's exports if they are this version's interface, else null. */
function checkedKernelWallAddon(exports: unknown): KernelWallAddon | null {
  const addon = exports as Partial<KernelWallAddon> | null;
  return addon &&
    typeof addon.abi === 'function' &&
    typeof addon.poolThreads === 'function' &&
    typeof addon.confineProcess === 'function'
    ? (addon as KernelWallAddon)
    : null;
}

/**
 * Loads the addon, or returns the reason it cannot be used (off Linux, not built, not the file this build recorded,
 * fails to load). Loaded the verified way of src/fs/native-load.ts: only bytes whose sha256 is `expectedSha256`,
 * from a private copy (docs/security.md "The server's own code and token files"), so a file planted in the install
 * directory never runs. Never throws. Called once at start-up, before any request is read.
 * @param expectedSha256 hex digest (default: the one this build recorded; null — no addon built, or src/ run
 *   in-process — loads nothing)
 */
export function loadKernelWallAddon(
  url: URL = kernelWallAddonUrl(),
  expectedSha256: string | null = recordedNativeDigest('fs_tools_landlock.node'),
): KernelWallAddon | string {
  if (process.platform !== 'linux') return `${process.platform} has no Landlock`;
  const result = loadVerifiedAddon(url, expectedSha256, checkedKernelWallAddon);
  if (result.loaded) return result.loaded.addon;
  switch (result.reason) {
    case 'digest_mismatch':
      return 'the kernel-wall addon is not the one this build recorded (sha256 differs)';
    case 'wrong_interface':
      return 'the kernel-wall addon is not this version';
    case 'not_loadable':
      return 'the kernel-wall addon failed to load';
    default:
      return 'the kernel-wall addon was not built (no C compiler at build time)';
  }
}

/**
 * Applies the rules to the whole process, once. Resolves with the wall's state: enforced with the ABI in use, or off
 * with the reason (no addon, no Landlock in the kernel, `maxAbi` 0, or the kernel refused the ruleset).
 * @param maxAbi the highest ABI to use (the `--sandbox-abi` test flag), null: the kernel's
 */
export async function confineProcess(
  addon: KernelWallAddon | string,
  rules: readonly WallRule[],
  maxAbi: number | null,
): Promise<WallState> {
  if (typeof addon === 'string') return { enforced: false, reason: addon };
  const kernelAbi = addon.abi();
  const abi = maxAbi === null ? kernelAbi : Math.min(kernelAbi, maxAbi);
  if (abi < 1) {
    return {
      enforced: false,
      reason:
        kernelAbi < 1
          ? 'the kernel has no Landlock (Linux 5.13+ with Landlock enabled)'
          : 'Landlock ABI 0 (--sandbox-abi)',
    };
  }
  try {
    await addon.confineProcess(
      handledRights(abi),
      rules.map((r) => [r.path, accessRights(r.access, abi)] as const),
    );
  } catch (error) {
    return { enforced: false, reason: `the kernel refused the ruleset (${(error as Error).message})` };
  }
  return { enforced: true, mechanism: 'landlock', abi };
}

/** The one-line description used on stderr, by `--version` and by list_allowed_directories. */
export function describeWall(state: WallState): string {
  return state.enforced ? `kernel wall: landlock ABI ${state.abi}, enforced` : `kernel wall: off (${state.reason})`;
}

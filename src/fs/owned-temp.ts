/**
 * The server's private temporary directories outside the roots (docs/security.md "The server's own code and token
 * files"): a gh configuration holding the enterprise token for one gh run (`ghtoken`, src/vcs/github-token.ts) and the
 * native addon's copy while it is loaded at start-up (`native`, src/fs/native-load.ts).
 *
 * Each is created by mkdtemp (mode 0700) under a name that records its owner:
 * `fs-tools-<kind>-<pid namespace>-<pid>-<start time>-XXXXXX` (src/fs/process-identity.ts: the start time tells a
 * live owner from a reused pid). The owner removes it when done, and on every exit path it can see: process exit
 * (including `process.exit` from any shutdown path), an uncaught error, and SIGTERM/SIGINT/SIGHUP. A SIGKILL (or an
 * OOM kill) leaves it; `sweepOwnedTempDirs` at the next start removes every one whose owner is proven gone, and
 * never one of a live server (or of another pid namespace, which it cannot judge).
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ownerState, selfIdentity } from './process-identity.js';
import { processSlot } from '../process-slots.js';

/** What a private directory holds. */
export type OwnedTempKind = 'ghtoken' | 'native';

/** A marked name: kind, pid namespace inode (0: unknown), pid, start time (0: unknown), mkdtemp's six characters. */
const MARKED = /^fs-tools-(ghtoken|native)-(\d{1,20})-(\d{1,10})-(\d{1,20})-[A-Za-z0-9]{6}$/;
/** A gh token directory of versions before the owner was recorded in the name. */
const LEGACY_GHTOKEN = /^fs-tools-ghtoken-[A-Za-z0-9]{6}$/;
/**
 * A legacy directory older than this is removed, ms. Its owner cannot be told; a gh run lasts at most
 * --forge-timeout-ms (default 30 s), so an hour-old one belongs to no run in progress.
 */
export const LEGACY_MAX_AGE_MS = 60 * 60 * 1000;

/**
 * This process's temporaries (src/process-slots.ts): `live`, the directories it created and has not removed yet;
 * `cleanupInstalled`, set once the exit hooks are installed.
 */
const temps = processSlot('fs/owned-temp', () => ({ live: new Set<string>(), cleanupInstalled: false }));

/** This process's mark: `<pid namespace>-<pid>-<start>` (0 where unknown). */
function mark(): string {
  const me = selfIdentity();
  const ns = /^pid:\[(\d+)\]$/.exec(me.pidns ?? '')?.[1] ?? '0';
  return `${ns}-${me.pid}-${me.start ?? '0'}`;
}

/**
 * Creates a private directory (0700) of `kind` in `base`, marked with this process's identity, and arms the exit
 * cleanup. The caller removes it with `removeOwnedTempDir` when done.
 * @param base an existing directory outside the roots (the caller chose it)
 * @returns the directory's absolute path
 * @throws Node errno errors from mkdtemp
 */
export function makeOwnedTempDir(base: string, kind: OwnedTempKind): string {
  installCleanup();
  const dir = mkdtempSync(path.join(base, `fs-tools-${kind}-${mark()}-`));
  temps.live.add(dir);
  return dir;
}

/** Removes a directory made by `makeOwnedTempDir` (and everything in it). Never throws. */
export function removeOwnedTempDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
    temps.live.delete(dir);
  } catch {
    /* retried at exit; else the next start's sweep */
  }
}

/** Removes every directory this process still holds (synchronously: it runs in exit and signal handlers). */
export function removeAllOwnedTempDirs(): void {
  for (const dir of [...temps.live]) removeOwnedTempDir(dir);
}

/**
 * Signal listeners of signal-exit (the subprocess runner's exit hook, src/vcs/run-command.ts): one per loaded instance,
 * counted in its shared emitter (v4: globalThis[Symbol.for('signal-exit emitter')]; v3:
 * process.__signal_exit_emitter__). It re-raises a signal only when its own listeners are the only ones, so they must
 * not count as "another handler" here — else each would wait for the other and the process would never end.
 */
function signalExitListeners(): number {
  const count = (emitter: unknown): number => {
    const n = (emitter as { count?: unknown } | undefined)?.count;
    return typeof n === 'number' ? n : 0;
  };
  const g = globalThis as Record<symbol, unknown>;
  const p = process as unknown as { __signal_exit_emitter__?: unknown };
  return count(g[Symbol.for('signal-exit emitter')]) + count(p.__signal_exit_emitter__);
}

/**
 * The exit paths: 'exit' (normal end, `process.exit`), 'uncaughtExceptionMonitor' (an uncaught error or rejection,
 * before Node ends the process), and SIGTERM/SIGINT/SIGHUP. When another handler of that signal exists (the graceful
 * shutdown of src/server/shutdown.ts; signal-exit's do not count) it decides when to exit and the directories stay
 * until then — a gh call still draining keeps its token directory — and go on 'exit'. Otherwise they are removed at
 * once and the process ends by the signal as it would have without this handler.
 */
function installCleanup(): void {
  if (temps.cleanupInstalled) return;
  temps.cleanupInstalled = true;
  process.on('exit', removeAllOwnedTempDirs);
  process.on('uncaughtExceptionMonitor', removeAllOwnedTempDirs);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      if (process.listenerCount(signal) - 1 - signalExitListeners() > 0) return;
      removeAllOwnedTempDirs();
      // Re-raised without this listener: signal-exit's (if loaded) now sees only its own and ends the process.
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/**
 * Removes the private directories in `bases` left by servers that are gone (killed by SIGKILL, OOM, a power loss):
 * a marked one whose owner is proven gone (no such pid, or a pid with another start time), and a legacy gh token
 * directory older than LEGACY_MAX_AGE_MS. Only directories (lstat: a link is never followed) owned by this user.
 * Never one of a live process, of this process, or of another pid namespace. Never throws.
 * @param bases directories to look in (the temporary directories' real paths)
 * @returns the removed directories' paths
 */
export function sweepOwnedTempDirs(bases: readonly string[], now: number = Date.now()): string[] {
  const removed: string[] = [];
  const me = selfIdentity();
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  for (const base of new Set(bases)) {
    let names: string[];
    try {
      names = readdirSync(base);
    } catch {
      continue;
    }
    for (const name of names) {
      const m = MARKED.exec(name);
      if (!m && !LEGACY_GHTOKEN.test(name)) continue;
      const dir = path.join(base, name);
      let st: import('node:fs').Stats;
      try {
        st = lstatSync(dir);
      } catch {
        continue;
      }
      if (!st.isDirectory() || (uid !== null && st.uid !== uid) || temps.live.has(dir)) continue;
      if (m) {
        const owner = {
          pid: Number(m[3]),
          start: m[4] === '0' ? null : m[4],
          boot: me.boot,
          pidns: m[2] === '0' ? null : `pid:[${m[2]}]`,
          host: me.host,
        };
        if (ownerState(owner) !== 'gone') continue;
      } else if (now - st.mtimeMs < LEGACY_MAX_AGE_MS) continue;
      try {
        rmSync(dir, { recursive: true, force: true });
        removed.push(dir);
      } catch {
        /* not removable by us: left */
      }
    }
  }
  return removed;
}

/**
 * Who owns a lock or a journal entry, and whether that process is still running. A pid alone is
 * not an identity: pids are reused. An owner is recorded as pid + the process's start time (field 22 of
 * /proc/PID/stat, clock ticks since boot) + the boot id (/proc/sys/kernel/random/boot_id) + the pid namespace
 * (/proc/self/ns/pid) + the host name. An owner is judged `gone` only on proof: another boot, no such pid, or a pid
 * whose start time differs (reused). An owner this process cannot judge (another host, another pid namespace —
 * containers sharing a volume) is `unknown`, which callers treat as alive: locks are never broken by age alone.
 * Outside Linux (no /proc) start time, boot id and namespace are null and liveness rests on the pid alone.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import os from 'node:os';

/** A process as recorded in a lock file or a journal entry. */
export interface ProcessIdentity {
  pid: number;
  /** Start time in clock ticks since boot (Linux), or null. */
  start: string | null;
  /** Kernel boot id (Linux), or null. */
  boot: string | null;
  /** Pid namespace, e.g. `pid:[4026531836]` (Linux), or null. */
  pidns: string | null;
  host: string;
}

/** Liveness verdict. `unknown` means this process cannot tell (another host or pid namespace): treat as alive. */
export type OwnerState = 'alive' | 'gone' | 'unknown';

function readOrNull(read: () => string): string | null {
  try {
    return read().trim() || null;
  } catch {
    return null;
  }
}

/**
 * The start time of `pid` from /proc/PID/stat (field 22), or null when unreadable (no such process, not Linux).
 * The command name (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
 */
export function startTimeOf(pid: number): string | null {
  const stat = readOrNull(() => readFileSync(`/proc/${pid}/stat`, 'latin1'));
  if (!stat) return null;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null; // fields[0] is field 3 (state)
}

// Not process state (test/architecture.test.ts allow list): a lazy constant, computed on first use, never changed.
let self: ProcessIdentity | null = null;

/** This process's identity (computed once). */
export function selfIdentity(): ProcessIdentity {
  self ??= {
    pid: process.pid,
    start: startTimeOf(process.pid),
    boot: readOrNull(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidns: readOrNull(() => readlinkSync('/proc/self/ns/pid')),
    host: os.hostname(),
  };
  return self;
}

/**
 * Whether the recorded owner still runs. `gone` only on proof (see the module comment); never by age.
 * @param owner a recorded identity; fields missing from old records are null
 */
export function ownerState(owner: ProcessIdentity): OwnerState {
  const me = selfIdentity();
  if (owner.host !== me.host) return 'unknown';
  if (owner.boot && me.boot && owner.boot !== me.boot) return 'gone'; // the machine rebooted since
  if ((owner.pidns ?? null) !== me.pidns) return 'unknown';
  if (owner.pid === me.pid) return owner.start === me.start ? 'alive' : 'gone';
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    // EPERM: the pid exists (another user's process); fall through to the start-time check.
  }
  if (owner.start) {
    const now = startTimeOf(owner.pid);
    // Unreadable (hidepid, or it exited just now): not proof of absence, so it stays alive until kill() says ESRCH.
    if (now !== null && now !== owner.start) return 'gone'; // the pid was reused by another process
  }
  return 'alive';
}

/**
 * Parses a recorded identity from untrusted JSON (a lock file or journal entry another process wrote).
 * @returns null when the record is not of the expected shape
 */
export function parseIdentity(value: unknown): ProcessIdentity | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  const str = (x: unknown) =>
    typeof x === 'string' && x.length <= 256 ? x : x === null || x === undefined ? null : undefined;
  const start = str(v.start);
  const boot = str(v.boot);
  const pidns = str(v.pidns);
  if (
    !Number.isSafeInteger(v.pid) ||
    (v.pid as number) <= 0 ||
    typeof v.host !== 'string' ||
    v.host.length > 256 ||
    start === undefined ||
    boot === undefined ||
    pidns === undefined
  )
    return null;
  return { pid: v.pid as number, start, boot, pidns, host: v.host };
}

/**
 * The server's own files inside the roots (docs/security.md "Locks, temporaries and shutdown"): path locks
 * (src/fs/path-lock.ts), temporary files (src/fs/atomic-write.ts, copy_path's file and link temporaries) and copy
 * trees (copy_path). They are one built-in class, recognised by name in every path component, whatever they hold:
 * the tools never read, list, search, create, move or delete them (src/policy/builtin-guards.ts), so a temporary of
 * `.env` is never readable as anything but the secret it became, and an agent cannot plant a lock.
 *
 * The in-flight register: every own file is noted in a per-process log under `<state-dir>/inflight/` BEFORE it is
 * created, and dropped from it once renamed into place or removed. The log is a plain append-only file (one JSON line
 * per note; write(2) only — a killed process's page cache survives it, a machine crash may lose the tail); its first
 * line is the owner record (src/fs/process-identity.ts). It is truncated back to that line whenever nothing is in
 * flight, so it never grows with the number of calls. At start-up `sweepOwnLeftovers` reads the logs of owners proved
 * gone and removes what they left inside the roots: that is the bound of the sweep (what was in flight, not a walk of
 * the roots). Nothing here follows a link: every removal goes through a verified parent directory.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ownerState, parseIdentity, selfIdentity } from './process-identity.js';
import { inspectTree, removeTree } from './tree-ops.js';
import { VerifiedDir, withVerifiedDir } from './verified-dir.js';
import { processSlot } from '../process-slots.js';

/** Prefix of every lock-related file name (lock, its temporary, its break lock). */
export const LOCK_FILE_PREFIX = '.fs-tools-lock-';
const LOCK_PATTERN = /^\.fs-tools-lock-[0-9a-f]{32}(?:\.break)?(?:\.[0-9a-f]{16}\.tmp)?$/;
/** `.NAME.fs-tools-<12 hex>.tmp`: a file's temporary (atomic-write.ts `temporaryPrefix`). */
const TEMPORARY_PATTERN = /^\..*\.fs-tools-[0-9a-f]{12}\.tmp$/s;
/** `.NAME.fs-tools-copy-<12 hex>` / `-link-`: copy_path's temporary tree or link. */
const TREE_PATTERN = /^\..*\.fs-tools-(?:copy|link)-[0-9a-f]{12}$/s;

/** The kinds of own files. */
export type OwnFileKind = 'lock' | 'temporary' | 'tree';

/**
 * `name` in every spelling a file system may take for the same entry: case-folded the way case-insensitive file
 * systems fold (upper then lower case, so a KELVIN SIGN is a `k` and a long s an `s`), NFC-normalized, and without
 * the trailing dots and spaces Windows drops. The server only ever creates lower-case ASCII own names; any spelling
 * that folds to one is of the class too, so no tool creates an entry that a case-insensitive mount (macOS, Windows, a
 * vfat or casefold ext4 directory on Linux) resolves to a lock's name. Pure ASCII lower case (the common case) is
 * returned as is.
 */
function folded(name: string): string {
  // eslint-disable-next-line no-control-regex
  if (!/[^\x00-\x7f]|[A-Z]|[. ]$/.test(name)) return name;
  return name
    .normalize('NFC')
    .toUpperCase()
    .toLowerCase()
    .replace(/[. ]+$/, '');
}

/** True for a name this module's class covers: a lock (or its temporary / break lock), in any spelling. */
export function isLockFileName(name: string): boolean {
  return LOCK_PATTERN.test(folded(name));
}

/** The private temporary a lock is written to before it is linked in (src/fs/path-lock.ts tryCreate). */
const LOCK_TEMPORARY = /\.[0-9a-f]{16}\.tmp$/;

/** The class of an entry name (in any spelling, see `folded`), or null when it is not one of the server's own files. */
export function ownFileKind(name: string): OwnFileKind | null {
  if (name.charCodeAt(0) !== 0x2e) return null; // every own name starts with '.'
  const n = folded(name);
  if (LOCK_PATTERN.test(n)) return 'lock';
  if (TEMPORARY_PATTERN.test(n)) return 'temporary';
  if (TREE_PATTERN.test(n)) return 'tree';
  return null;
}

/** True when the entry name is one of the server's own files. */
export function isOwnFileName(name: string): boolean {
  return ownFileKind(name) !== null;
}

/**
 * The first component of `absolute` (split on `/` and the platform separator) that is an own file's name, or null.
 * Every component counts: a lock-named directory anywhere on a path is still a lock name.
 */
export function ownComponentOf(absolute: string): string | null {
  for (const part of absolute.split(/[\\/]/)) if (part && ownFileKind(part) !== null) return part;
  return null;
}

// ---- the in-flight register ----

interface Register {
  dir: string;
  file: string;
  fd: number;
  headerBytes: number;
}

/**
 * The register's state (src/process-slots.ts): `stateDir`, the state directory configured at start-up; `register`,
 * this process's open register file; `registerFailed`, set once it could not be kept; `files`, what this process has
 * in flight: absolute path → kind.
 */
const inflight = processSlot('fs/own-files', () => ({
  stateDir: null as string | null,
  register: null as Register | null,
  registerFailed: false,
  files: new Map<string, OwnFileKind>(),
}));

/**
 * Sets the state directory whose `inflight/` holds this process's register (cli.ts, once at start-up). Without it
 * (in-process unit tests) own files are tracked in memory only.
 */
export function configureOwnFiles(dir: string | null): void {
  inflight.stateDir = dir;
}

function openRegister(): Register | null {
  if (inflight.register || inflight.registerFailed || inflight.stateDir === null) return inflight.register;
  try {
    const dir = path.join(inflight.stateDir, 'inflight');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const me = selfIdentity();
    const file = path.join(dir, `${me.pid}-${me.start ?? '0'}.log`);
    const fd = openSync(
      file,
      constants.O_WRONLY |
        constants.O_CREAT |
        constants.O_TRUNC |
        constants.O_APPEND |
        (constants.O_NOFOLLOW ?? 0) |
        (constants.O_NONBLOCK ?? 0),
      0o600,
    );
    const header = `${JSON.stringify(me)}\n`;
    writeSync(fd, header);
    inflight.register = { dir, file, fd, headerBytes: Buffer.byteLength(header) };
  } catch (error) {
    // The register is best effort (like the undo history): a mutation never fails because it cannot be noted. The
    // leftover is still of the hidden class, and the next writer of that path breaks a dead owner's lock.
    inflight.registerFailed = true;
    process.stderr.write(
      `fs-tools: cannot keep the in-flight register in the state directory (${(error as NodeJS.ErrnoException).code ?? 'error'}); leftovers of a crash will not be swept\n`,
    );
  }
  return inflight.register;
}

function append(line: object): void {
  const r = openRegister();
  if (!r) return;
  try {
    writeSync(r.fd, `${JSON.stringify(line)}\n`);
  } catch {
    /* best effort, see openRegister */
  }
}

/** Notes `absolute` (an own file about to be created) in the register. Call BEFORE creating it. */
export function noteOwnFile(absolute: string, kind: OwnFileKind): void {
  inflight.files.set(absolute, kind);
  append({ add: absolute, kind });
}

/** Drops `absolute` from the register (it was renamed into place or removed). */
export function dropOwnFile(absolute: string): void {
  if (!inflight.files.delete(absolute)) return;
  if (inflight.files.size === 0 && inflight.register) {
    try {
      // Nothing in flight: back to the owner line, so the log never grows with the number of calls.
      ftruncateSync(inflight.register.fd, inflight.register.headerBytes);
      return;
    } catch {
      /* fall through to a drop line */
    }
  }
  append({ drop: absolute });
}

/** What this process has in flight now (shutdown clean-up, tests). */
export function ownFilesInFlight(): ReadonlyMap<string, OwnFileKind> {
  return inflight.files;
}

/**
 * Removes what this process still has in flight (exit after the shutdown grace): temporaries and lock files are
 * unlinked (a lock only while it is still this process's record), copy trees are left to the next start's sweep
 * (a recursive removal is not done on the way out). Synchronous; best effort. The register is closed and removed
 * when nothing is left in it.
 */
export function removeOwnFilesOnExit(): void {
  for (const [p, kind] of [...inflight.files]) {
    if (kind === 'tree') continue;
    try {
      if (kind === 'lock' && !lockIsMine(p)) {
        inflight.files.delete(p); // another process's lock at that name: not ours to remove, nor to keep noted
        continue;
      }
      unlinkSync(p); // unlink never follows a link at the last component
      inflight.files.delete(p);
    } catch {
      inflight.files.delete(p);
    }
  }
  if (!inflight.register) return;
  try {
    closeSync(inflight.register.fd);
    if (inflight.files.size === 0) unlinkSync(inflight.register.file);
  } catch {
    /* best effort */
  }
  inflight.register = null;
}

function lockIsMine(p: string): boolean {
  try {
    const fd = openSync(p, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
    try {
      if (!fstatSync(fd).isFile()) return false;
      const buf = Buffer.alloc(2048);
      const n = readSync(fd, buf, 0, buf.length, 0);
      const owner = parseIdentity(JSON.parse(buf.subarray(0, n).toString('utf8')));
      const me = selfIdentity();
      return owner !== null && owner.pid === me.pid && owner.start === me.start && owner.host === me.host;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** Largest register read at start-up; a larger one is not ours to trust and is left alone. */
const MAX_REGISTER_BYTES = 4 * 1024 * 1024;

/** One leftover the sweep found. */
export interface SweptFile {
  path: string;
  kind: OwnFileKind;
  outcome: 'removed' | 'gone' | 'kept';
}

/**
 * Start-up sweep: for every register under `<state-dir>/inflight/` whose owner is proved gone (not this process, not
 * a live one, not one on another host or pid namespace), removes the own files it noted and did not drop — only
 * inside the roots (`isInside`), only names of the recorded class, only through a verified parent directory, a lock
 * only while it still holds that dead owner's record. Entries outside the current roots are kept in the register for
 * a later start. Under `readonly` nothing is removed.
 * @returns what was found, for the stderr line
 */
export async function sweepOwnLeftovers(
  dir: string,
  isInside: (p: string) => boolean,
  options: { readonly?: boolean } = {},
): Promise<SweptFile[]> {
  const inflightDir = path.join(dir, 'inflight');
  let names: string[];
  try {
    names = readdirSync(inflightDir);
  } catch {
    return [];
  }
  const out: SweptFile[] = [];
  const me = selfIdentity();
  for (const name of names.sort()) {
    if (!/^\d+-\d+\.log$/.test(name)) continue;
    const file = path.join(inflightDir, name);
    if (inflight.register && file === inflight.register.file) continue;
    let text: string;
    try {
      const buf = await readFile(file, {
        flag: constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0),
      });
      if (buf.length > MAX_REGISTER_BYTES) continue;
      text = buf.toString('utf8');
    } catch {
      continue;
    }
    const lines = text.split('\n').filter((l) => l.length > 0);
    let owner: ReturnType<typeof parseIdentity>;
    try {
      owner = parseIdentity(JSON.parse(lines[0] ?? ''));
    } catch {
      owner = null;
    }
    if (!owner) {
      // Not a register this program wrote (a torn first line of a killed process is never seen: the header is one
      // write before any note). Removed: it names nothing we may act on.
      if (!options.readonly) await rm(file, { force: true }).catch(() => undefined);
      continue;
    }
    if ((owner.pid === me.pid && owner.start === me.start) || ownerState(owner) !== 'gone') continue;
    const pending = new Map<string, OwnFileKind>();
    for (const line of lines.slice(1)) {
      try {
        const v = JSON.parse(line) as { add?: unknown; kind?: unknown; drop?: unknown };
        if (typeof v.add === 'string' && (v.kind === 'lock' || v.kind === 'temporary' || v.kind === 'tree'))
          pending.set(v.add, v.kind);
        else if (typeof v.drop === 'string') pending.delete(v.drop);
      } catch {
        /* a torn last line: the note of a file that was never created */
      }
    }
    const keep: Array<[string, OwnFileKind]> = [];
    for (const [p, kind] of pending) {
      const valid = path.isAbsolute(p) && path.normalize(p) === p && ownFileKind(path.basename(p)) === kind;
      if (!valid) continue; // not a name of the recorded class: never acted on, and dropped
      if (!isInside(p) || options.readonly) {
        keep.push([p, kind]);
        if (isInside(p)) out.push({ path: p, kind, outcome: 'kept' });
        continue;
      }
      out.push({ path: p, kind, outcome: await removeLeftover(p, kind, owner, isInside) });
    }
    if (options.readonly) continue;
    if (keep.length === 0) await rm(file, { force: true }).catch(() => undefined);
    else
      await writeFile(
        file,
        [lines[0], ...keep.map(([p, kind]) => JSON.stringify({ add: p, kind }))].join('\n') + '\n',
        {
          mode: 0o600,
          flag:
            constants.O_WRONLY |
            constants.O_CREAT |
            constants.O_TRUNC |
            (constants.O_NOFOLLOW ?? 0) |
            (constants.O_NONBLOCK ?? 0),
        },
      ).catch(() => undefined);
  }
  return out;
}

async function removeLeftover(
  p: string,
  kind: OwnFileKind,
  owner: NonNullable<ReturnType<typeof parseIdentity>>,
  isInside: (p: string) => boolean,
): Promise<SweptFile['outcome']> {
  const name = path.basename(p);
  try {
    return await withVerifiedDir(path.dirname(p), isInside, async (dir) => {
      const st = dir.lstat(name);
      if (!st) return 'gone';
      if (kind === 'tree' && st.isDirectory()) {
        await removeOwnTree(dir, name);
        return dir.lstat(name) ? 'kept' : 'removed';
      }
      if (kind === 'tree') {
        if (!st.isSymbolicLink()) return 'kept'; // copy_path's link temporary
        dir.unlink(name);
        return 'removed';
      }
      if (!st.isFile()) return 'kept';
      // A lock's private temporary (NAME.<16 hex>.tmp) is never a live lock, and may be empty (its owner died between
      // creating and writing it): the dead owner's register entry is enough. A lock itself goes only while it still
      // holds that owner's record.
      if (kind === 'lock' && !LOCK_TEMPORARY.test(name) && !recordNames(dir, name, owner)) return 'kept';
      dir.unlink(name);
      return 'removed';
    });
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'gone' : 'kept';
  }
}

/** True when lock `name` of `dir` holds `owner`'s record (a later writer's lock there is never removed). */
function recordNames(dir: VerifiedDir, name: string, owner: NonNullable<ReturnType<typeof parseIdentity>>): boolean {
  try {
    const fd = dir.openFileSync(name, { flags: constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) });
    try {
      const buf = Buffer.alloc(2048);
      const n = readSync(fd, buf, 0, buf.length, 0);
      const rec = parseIdentity(JSON.parse(buf.subarray(0, n).toString('utf8')));
      return rec !== null && rec.pid === owner.pid && rec.start === owner.start && rec.host === owner.host;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** Entries at most in a copy tree removed by the sweep or by copy_path's own clean-up. */
const MAX_TREE_ENTRIES = 100_000;

/**
 * Removes the own tree `name` of `parent` (a copy tree): made writable, inspected, removed post-order through
 * descriptors (src/fs/tree-ops.ts). Best effort: a failure leaves it where it is, still of the hidden class.
 */
export async function removeOwnTree(parent: VerifiedDir, name: string): Promise<void> {
  try {
    try {
      parent.chmod(name, 0o700);
    } catch {
      /* gone or not ours */
    }
    const top = parent.openDir(name);
    try {
      const inspected = await inspectTree(top, () => undefined, MAX_TREE_ENTRIES);
      await removeTree(parent, name, inspected);
    } finally {
      top.close();
    }
  } catch {
    // Left behind as a hidden `.NAME.fs-tools-copy-*` directory; a later sweep tries again.
  }
}

/**
 * Recognising git directories by what they are (docs/security.md "Execution-bearing files and git directories"): a
 * directory holding two or more of `HEAD`, `objects`, `refs`, `commondir` (looked up through the directory's verified
 * descriptor), the `.git` entry of a work tree, and the git directory a `.git` file names.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { VerifiedDir } from '../fs/verified-dir.js';
import { CACHE_MAX, gitDirState, isRacy, type DirFacts } from './git-dirs-state.js';
import { realPathOf } from './resolve-path.js';

/** The entries that make a directory a git directory when two of them are present. */
export const REPOSITORY_ENTRY_NAMES: readonly string[] = ['HEAD', 'objects', 'refs', 'commondir'];

export const REPOSITORY_NAMES_LOWER = new Set(REPOSITORY_ENTRY_NAMES.map((n) => n.toLowerCase()));

/** Largest configuration or `.git` / `commondir` file read for a decision; a larger one fails closed. */
export const MAX_GIT_METADATA_BYTES = 4 * 1024 * 1024;

export const bitCount = (m: number): number => (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1) + ((m >> 3) & 1);

/** An entry looked up through the directory: present (any kind), absent; an error other than absence counts as present. */
function present(dir: VerifiedDir, name: string): boolean {
  try {
    return dir.lstat(name) !== null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isPermissionError(error)) throw error; // fails the call as the OS (or the kernel wall) refused it
    return !(code === 'ENOENT' || code === 'ENOTDIR');
  }
}

/**
 * EACCES or EPERM: the OS or the kernel wall refused to let the server look. Such an error fails the call as is
 * (FILE_POLICY_DENIED, source os or kernel, from the one envelope mapper) — closed, and saying who refused — rather
 * than being turned into a built-in refusal.
 */
export function isPermissionError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EACCES' || code === 'EPERM';
}

/** The cached facts of the directory `st` describes, when its version is unchanged. */
function cachedFacts(st: Stats): DirFacts | undefined {
  const cached = gitDirState.dirs.get(`${st.dev}:${st.ino}`);
  return cached && cached.mtimeMs === st.mtimeMs && cached.ctimeMs === st.ctimeMs ? cached : undefined;
}

/** The facts of an open verified directory (cached by identity and version). */
export function factsOf(dir: VerifiedDir): DirFacts {
  const st = fstatSync(dir.fd);
  const hit = cachedFacts(st);
  if (hit) return hit;
  let members = 0;
  REPOSITORY_ENTRY_NAMES.forEach((name, i) => {
    if (present(dir, name)) members |= 1 << i;
  });
  let dotGit: DirFacts['dotGit'] = 'none';
  try {
    const g = dir.lstat('.git');
    if (g) dotGit = g.isDirectory() ? 'dir' : g.isSymbolicLink() ? 'link' : g.isFile() ? 'file' : 'other';
  } catch {
    dotGit = 'other';
  }
  const facts: DirFacts = { members, dotGit };
  if (!isRacy(st.mtimeMs, st.ctimeMs)) {
    if (gitDirState.dirs.size >= CACHE_MAX) gitDirState.dirs.clear();
    gitDirState.dirs.set(`${st.dev}:${st.ino}`, { ...facts, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs });
  }
  return facts;
}

/** Reads a small file by path (git metadata; never revealed). null when it does not exist. @throws on other errors */
export function readSmall(file: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    if ((code === 'EACCES' || code === 'EPERM') && !gitDirState.readableScope(path.resolve(file))) return null;
    throw error;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) {
      if (st.isDirectory()) return null; // git ignores a directory where a config file would be
      throw new Error('not a regular file');
    }
    if (st.size > MAX_GIT_METADATA_BYTES) throw new Error('too large');
    const buf = Buffer.alloc(st.size);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } finally {
    closeSync(fd);
  }
}

/**
 * The real path of `p`, or `p` itself when it (or part of it) does not exist: its nearest existing ancestor's real path
 * with the missing rest appended. `p` comes from repository content (a config's `core.hooksPath`, `include.path`, a
 * `gitdir:` file) and may lead through a link to a deep directory: each ancestor is resolved by the kernel in one
 * linear walk (`realPathOf`), and the nearest existing one is found by bisection — existence is monotone along the
 * ancestors — so a missing tail of n components costs log n resolutions, not n quadratic ones (60 missing components
 * behind a link to a 1,900-level directory held the event loop for 20 s; docs/security.md "Bounded work").
 */
export function realOrLexical(p: string): string {
  const real = (q: string): string | null => {
    try {
      return realPathOf(q);
    } catch {
      return null;
    }
  };
  const whole = real(p);
  if (whole !== null) return whole;
  const { root } = path.parse(p);
  const parts = p
    .slice(root.length)
    .split(SEPARATORS)
    .filter((c) => c !== '');
  // (A relative `p` climbs to `.`, as path.dirname does.)
  const prefix = (i: number) => root + parts.slice(0, i).join(path.sep) || '.';
  // The longest prefix (fewer than all parts: the whole is missing) that resolves; none: `p` as it is.
  let lo = 0;
  let hi = parts.length - 1;
  let found: { at: number; real: string } | null = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = real(prefix(mid));
    if (r === null) hi = mid - 1;
    else {
      found = { at: mid, real: r };
      lo = mid + 1;
    }
  }
  return found === null ? p : path.join(found.real, ...parts.slice(found.at));
}

/** Path separators of this platform (a backslash is one only on Windows). */
const SEPARATORS = path.sep === '\\' ? /[\\/]+/ : /\/+/;

/** `gitdir: X` of a `.git` file, as git's read_gitfile takes it (trailing CRs and LFs trimmed, nothing else); null if malformed. */
function gitfileTarget(text: string, base: string): string | null {
  const m = /^gitdir: (.*)$/s.exec(text.replace(/[\r\n]+$/, ''));
  if (!m || m[1] === '' || m[1].includes('\n')) return null;
  return path.resolve(base, m[1]);
}

/** The git directory a work tree top `top` names through its `.git` entry (null: none usable). */
export function gitDirOf(top: string, kind: DirFacts['dotGit']): string | null {
  const dotGit = path.join(top, '.git');
  if (kind === 'dir' || kind === 'link') return realOrLexical(dotGit);
  if (kind !== 'file') return null;
  const text = readSmall(dotGit);
  if (!text) return null;
  const target = gitfileTarget(text.toString('utf8'), top);
  return target === null ? null : realOrLexical(target);
}

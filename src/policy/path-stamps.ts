/**
 * Stamps of the paths an answer was read from, so the answer can be reused while nothing it depends on changed: for
 * each path, every component from the first below `/` down to the path itself (or to its first missing component),
 * as `lstat` sees it (links not followed). Used by the git-directory guard to reuse what it read of the user's and the
 * system's git configuration (src/policy/git-hooks-config.ts `userHooks`), which it otherwise reads on every check.
 *
 * What the stamps cover: a component's identity (device, inode), type and mode, size, mtime and ctime (ms with the
 * sub-millisecond fraction). A file's content changes its mtime and ctime; an entry created, removed or renamed
 * changes its directory's; a chmod, chown or link count changes ctime; a mount over a component changes its device
 * and inode. With no link on the way and every component unchanged, the kernel resolves each path to the same file
 * by the same names, so its real path and its readability are the same too. No stamp is taken (null) where that
 * reasoning does not hold: a link or a non-directory on the way, a path not absolute and normal (`..` is resolved by
 * the kernel, not lexically), an error other than absence, or a component changed within RACY_MS (a coarse timestamp
 * could hide a second change in the same tick).
 */
import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { isRacy } from './git-dirs-state.js';

/** Path → stamp (`dev:ino:mode:size:mtimeMs:ctimeMs`) or `absent`, in the order taken. */
export type PathStamps = ReadonlyMap<string, string>;

const ABSENT = 'absent';

const stampOf = (st: Stats): string => `${st.dev}:${st.ino}:${st.mode}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;

/** `lstat` of `p`, undefined when absent. @throws errno errors other than ENOENT */
const lstatOrAbsent = (p: string): Stats | undefined => lstatSync(p, { throwIfNoEntry: false });

/**
 * Stamps of every component of each of `files` (see the module comment), or null when they cannot vouch for an answer
 * read from those files (a link or a non-directory on the way, a path not absolute and normal, a racy component, an
 * error other than absence). Take them BEFORE reading: a change while the reads run then shows at the next check.
 */
export function stampPaths(files: readonly string[]): Map<string, string> | null {
  const stamps = new Map<string, string>();
  try {
    for (const file of files) {
      if (!path.isAbsolute(file) || path.normalize(file) !== file || file.endsWith(path.sep)) return null;
      const parts = file.split(path.sep).filter((c) => c !== '');
      for (let i = 1; i <= parts.length; i++) {
        const p = path.sep + parts.slice(0, i).join(path.sep);
        const known = stamps.get(p);
        if (known === ABSENT) break;
        if (known !== undefined) continue;
        const st = lstatOrAbsent(p);
        if (st === undefined) {
          stamps.set(p, ABSENT);
          break;
        }
        if (st.isSymbolicLink() || (i < parts.length && !st.isDirectory())) return null;
        if (isRacy(st.mtimeMs, st.ctimeMs)) return null;
        stamps.set(p, stampOf(st));
      }
    }
  } catch {
    return null;
  }
  return stamps;
}

/** True while every path of `stamps` lstats to its stamp (absent ones still absent); false on any difference or error. */
export function stampsHold(stamps: PathStamps): boolean {
  try {
    for (const [p, stamp] of stamps) {
      const st = lstatOrAbsent(p);
      if ((st === undefined ? ABSENT : stampOf(st)) !== stamp) return false;
    }
    return true;
  } catch {
    return false;
  }
}

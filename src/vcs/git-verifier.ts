/**
 * The verified reads of git metadata a sanitized view is built from (docs/security.md "What git may read"): every
 * location is resolved to a real path that must lie inside the roots and outside what the file policy withholds; a
 * link leading outside is NOT_ALLOWED naming the link, never its target; a link to a secret file is SECRET_DENIED;
 * every file is read whole from a descriptor opened and proven here, under a size cap (VIEW_CAPS), or refused.
 */

import { closeSync, lstatSync, read, readlinkSync, readSync, realpathSync, type Stats } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { openForReadSync, readWholeSync } from '../fs/open-file.js';

/** Caps (bytes) on the metadata files the view reads; a larger file fails closed (unsupported_repository). */
export const VIEW_CAPS = {
  /** `.git` file, HEAD, a loose ref, commondir. */
  small: 64 * 1024,
  /** The repository's config (git itself has no limit; 4 MiB is far beyond any real one). */
  config: 4 * 1024 * 1024,
  /** packed-refs (100,000 refs are about 6 MiB). */
  packedRefs: 64 * 1024 * 1024,
  /** info/exclude, objects/info/alternates. */
  list: 1024 * 1024,
  /** shallow (one object id per line). */
  shallow: 16 * 1024 * 1024,
  /** The index (a million entries are about 100 MiB; held in memory while it is validated and rebuilt). */
  index: 128 * 1024 * 1024,
} as const;

/** Files up to this size (bytes) `readLarge` reads synchronously; larger ones off the event loop, 1 MiB at a time. */
const SYNC_READ_BYTES = 64 * 1024;

/**
 * The policy decisions a view needs, handed in by policy (src/policy/git-access.ts): primitives act, policy decides
 * (the layering rule, test/layering.test.ts).
 */
export interface ViewAccess {
  /** True when absolute real path `p` lies inside the roots in force. */
  isInside: (p: string) => boolean;
  /** The secret rule `p` matches (docs/security.md), or null. */
  secretRule: (p: string) => string | null;
  /**
   * True when the file policy withholds absolute real path `p` (hidden, denied, or a built-in guarded path): no git
   * location may lie there, so it counts as outside the roots for every location the view verifies.
   */
  isWithheld: (p: string) => boolean;
}

/** The failure to build a view, classified (details.reason) with the path concerned and no file content. */
export function repoError(
  kind: 'corrupt_repository' | 'unsupported_repository',
  file: string,
  message: string,
  suggestion?: string,
  facts: Record<string, string | number> = {},
): ToolError {
  return new ToolError(kind === 'corrupt_repository' ? 'IO_ERROR' : 'VALIDATION', message, {
    path: file,
    details: { ...facts, reason: kind, file, ...(kind === 'corrupt_repository' ? { errno: 'EGIT' } : {}) },
    suggestion:
      suggestion ??
      (kind === 'corrupt_repository'
        ? 'Run `git status` (or `git fsck`) in the repository to see what git reports, repair it, then call again.'
        : 'Use git directly for this repository; the server reads only repositories it can verify.'),
  });
}

/**
 * NOT_ALLOWED for a metadata link (or `.git` file) whose target lies outside the roots or where the file policy
 * withholds it (one message for both: it tells neither which nor whether the target exists); names the link only.
 */
export function outsideError(link: string, what: string): ToolError {
  return new ToolError(
    'NOT_ALLOWED',
    `${link} (${what}) leads outside the allowed roots, or to a path the file policy withholds; the git tools do not follow it.`,
    {
      path: link,
      details: { reason: 'git_location_outside_roots', link },
      suggestion: 'Call list_allowed_directories, or use a repository whose git metadata lies inside the roots.',
    },
  );
}

export const lstatOrNull = (p: string): Stats | null => {
  try {
    return lstatSync(p);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
};

/** The verifier of one view: containment against the roots, secrets, size caps. */
export class Verifier {
  constructor(private readonly access: ViewAccess) {}

  /** Inside the roots (the private directory must not be). */
  readonly insideRoots = (p: string): boolean => this.access.isInside(p);
  /** Where a git location may lie: inside the roots, and not withheld by the file policy. */
  readonly isInside = (p: string): boolean => this.access.isInside(p) && !this.access.isWithheld(p);

  /**
   * The real path of metadata entry `p` (whose parent is already a verified real path), or null when absent. A link
   * is followed only to a target inside the roots that is not a secret file.
   * @throws ToolError NOT_ALLOWED (target outside), SECRET_DENIED (target is a secret)
   */
  locate(p: string, what: string): { real: string; stats: Stats } | null {
    // The parent first: a linked directory above `p` leading outside must not be probed through (nor reported as
    // "absent" when the outside lacks the entry).
    let parentReal: string;
    try {
      parentReal = realpathSync(path.dirname(p));
    } catch {
      // Missing: decide on its nearest existing ancestor, so a link above cannot make outside absence observable.
      for (let d = path.dirname(p); ; d = path.dirname(d)) {
        // A dangling link leading outside is refused too: whether the outside target exists must not matter.
        if (lstatOrNull(d)?.isSymbolicLink() && !this.isInside(path.resolve(path.dirname(d), lstatLinkTarget(d)))) {
          throw outsideError(d, what);
        }
        let real: string | null = null;
        try {
          real = realpathSync(d);
        } catch {
          /* keep going up */
        }
        if (real !== null) {
          if (!this.isInside(real)) throw outsideError(path.dirname(p), what);
          return null;
        }
        if (path.dirname(d) === d) return null;
      }
    }
    if (!this.isInside(parentReal)) throw outsideError(path.dirname(p), what);
    const st = lstatOrNull(path.join(parentReal, path.basename(p)));
    if (!st) return null;
    // realpath also catches a symlinked directory above `p` (e.g. refs/ or info/ leading elsewhere).
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      // A dangling link or a loop: decide on where it would lead, lexically, so nothing outside is probed.
      const lexical = st.isSymbolicLink() ? path.resolve(path.dirname(p), lstatLinkTarget(p)) : p;
      if (!this.isInside(lexical)) throw outsideError(p, what);
      return null;
    }
    if (!this.isInside(real)) throw outsideError(p, what);
    if (real !== p) {
      const rule = this.access.secretRule(real);
      if (rule !== null) {
        throw new ToolError(
          'SECRET_DENIED',
          `${p} (${what}) is a link to a secret file; the git tools do not read it.`,
          {
            path: p,
            details: { pattern: rule, link: p },
          },
        );
      }
    }
    return { real, stats: st.isSymbolicLink() ? lstatSync(real) : st };
  }

  /**
   * The whole content of the regular metadata file `p` (verified as `locate` does), or null when absent.
   * @throws ToolError NOT_ALLOWED, SECRET_DENIED, unsupported_repository (over `max` bytes, or not a regular file)
   */
  read(p: string, what: string, max: number): Buffer | null {
    const found = this.locate(p, what);
    if (!found) return null;
    if (!found.stats.isFile()) {
      if (found.stats.isDirectory()) return null;
      throw repoError('unsupported_repository', p, `${p} (${what}) is not a regular file.`);
    }
    const { fd, stats } = openForReadSync(found.real, this.isInside);
    try {
      if (stats.size > max) {
        throw repoError(
          'unsupported_repository',
          p,
          `${p} (${what}) is larger than ${max} bytes; the git tools refuse it rather than read part of it.`,
        );
      }
      const bytes = readWholeSync(fd, stats.size);
      if (bytes.length > max) {
        throw repoError(
          'unsupported_repository',
          p,
          `${p} (${what}) is larger than ${max} bytes; the git tools refuse it rather than read part of it.`,
        );
      }
      return bytes;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * `read` for the larger metadata files (config, packed-refs, shallow, info/exclude, alternates, the index): the same
   * checks, the bytes read off the event loop in 1 MiB slices (a file up to SYNC_READ_BYTES in one synchronous
   * read) from the descriptor opened and proven here.
   * @returns the bytes and the file's fstat, or null when absent
   * @throws as `read`
   */
  async readLarge(p: string, what: string, max: number): Promise<{ bytes: Buffer; stats: Stats } | null> {
    const found = this.locate(p, what);
    if (!found) return null;
    if (!found.stats.isFile()) {
      if (found.stats.isDirectory()) return null;
      throw repoError('unsupported_repository', p, `${p} (${what}) is not a regular file.`);
    }
    const tooLarge = () =>
      repoError(
        'unsupported_repository',
        p,
        `${p} (${what}) is larger than ${max} bytes; the git tools refuse it rather than read part of it.`,
      );
    const { fd, stats } = openForReadSync(found.real, this.isInside);
    try {
      if (stats.size > max) throw tooLarge();
      // One byte more than fstat said: a file that grew since is seen, and refused when over the cap.
      const bytes = Buffer.allocUnsafe(Math.min(stats.size, max) + 1);
      let filled = 0;
      while (filled < bytes.length) {
        const want = Math.min(1 << 20, bytes.length - filled);
        // A small file (the usual config, exclude, packed-refs) in synchronous reads: a trip through the thread pool
        // costs more than the read.
        const n =
          bytes.length <= SYNC_READ_BYTES
            ? readSync(fd, bytes, filled, want, filled)
            : await new Promise<number>((resolve, reject) =>
                read(fd, bytes, filled, want, filled, (error, count) => (error ? reject(error) : resolve(count))),
              );
        if (n === 0) break;
        filled += n;
      }
      if (filled > max) throw tooLarge();
      return { bytes: bytes.subarray(0, filled), stats };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The real path of directory `p`, verified as `locate` does.
   * @throws ToolError NOT_ALLOWED, corrupt_repository (missing or not a directory)
   */
  directory(p: string, what: string): string {
    const found = this.locate(p, what);
    if (!found || !found.stats.isDirectory())
      throw repoError('corrupt_repository', p, `${p} (${what}) is missing or not a directory.`);
    return found.real;
  }
}

/** A link's own text ('/' when unreadable, which no root contains unless `/` is one). */
function lstatLinkTarget(p: string): string {
  try {
    return readlinkSync(p);
  } catch {
    return '/';
  }
}

/**
 * The real path that `value`, read from the repository file `file` (`what` in errors), names relative to `base`,
 * checked to lie inside the roots; null when nothing exists there (a missing target is refused only when its lexical
 * path lies outside).
 * @throws ToolError NOT_ALLOWED (outside the roots)
 */
export function realPathInside(
  base: string,
  value: string,
  file: string,
  what: string,
  verify: Verifier,
): string | null {
  const lexical = path.resolve(base, value);
  let real: string;
  try {
    real = realpathSync(lexical);
  } catch {
    if (!verify.isInside(lexical)) throw outsideError(file, what);
    return null;
  }
  if (!verify.isInside(real)) throw outsideError(file, what);
  return real;
}

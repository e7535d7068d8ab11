/**
 * The verified directories one mutation works in (opened inside the path lock, closed when the mutation ends) and the
 * containment predicate they are opened with.
 */
import path from 'node:path';
import { readCurrentIn, type CurrentFile, type ReadCurrentOptions } from '../fs/read-current.js';
import { VerifiedDir } from '../fs/verified-dir.js';
import { ToolError } from '../errors/tool-error.js';
import { isInsideRoots } from '../policy/containment.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import type { ToolContext } from './context.js';

/** A containment predicate over the roots of this call. */
export function insideRoots(ctx: ToolContext): (p: string) => boolean {
  return (p) => isInsideRoots(ctx.policy.roots, p);
}

/**
 * The verified directories of one mutation, opened inside the path lock and closed when the mutation ends.
 */
export class MutationScope {
  private readonly dirs = new Map<string, VerifiedDir>();

  constructor(readonly isInside: (p: string) => boolean) {}

  /**
   * The verified parent directory of `real` and the entry name, or null when the parent does not exist.
   * @throws ToolError NOT_ALLOWED (a link on the way; outside), VALIDATION not_a_directory (a file on the way);
   *   errno errors other than a missing parent
   */
  parent(real: AllowedPath): { dir: VerifiedDir; name: string } | null {
    const dirPath = path.dirname(real);
    let dir = this.dirs.get(dirPath);
    if (!dir) {
      try {
        dir = VerifiedDir.open(dirPath, this.isInside);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return null;
        if (code === 'ENOTDIR') {
          throw new ToolError('VALIDATION', `A component of ${dirPath} exists and is not a directory.`, {
            path: dirPath,
            details: { reason: 'not_a_directory' },
          });
        }
        throw error;
      }
      this.dirs.set(dirPath, dir);
    }
    return { dir, name: path.basename(real) };
  }

  /**
   * Like `parent`, but a missing parent is NOT_FOUND.
   * @throws ToolError NOT_FOUND reason parent_missing, and as `parent`
   */
  existingParent(real: AllowedPath, absolute: string, suggestion?: string): { dir: VerifiedDir; name: string } {
    const p = this.parent(real);
    if (!p) throw parentMissing(absolute, suggestion);
    return p;
  }

  /** The current state of the file `real` (absent when it or its parent does not exist). */
  async current(real: AllowedPath, options: ReadCurrentOptions): Promise<CurrentFile> {
    const p = this.parent(real);
    if (!p) return { exists: false, hash: null, bytes: null, stats: null };
    return await readCurrentIn(p.dir, p.name, options);
  }

  /** Keeps a directory opened elsewhere (e.g. just created) to be closed with the scope. */
  adopt(dir: VerifiedDir): VerifiedDir {
    const old = this.dirs.get(dir.path);
    if (old && old !== dir) old.close();
    this.dirs.set(dir.path, dir);
    return dir;
  }

  /** Closes every directory. */
  close(): void {
    for (const d of this.dirs.values()) d.close();
    this.dirs.clear();
  }
}

/** NOT_FOUND reason parent_missing. */
export function parentMissing(
  absolute: string,
  suggestion = 'Pass create_dirs: true, or call create_directory first.',
): ToolError {
  return new ToolError('NOT_FOUND', `The parent directory of ${absolute} does not exist.`, {
    path: absolute,
    details: { reason: 'parent_missing' },
    suggestion,
  });
}

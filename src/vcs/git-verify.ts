/**
 * The checks of a view's work-tree side and of its larger metadata files (docs/security.md "What git may read"): the
 * shallow file, the index (parsed, validated and rebuilt by git-index.ts) with the work-tree directories its entries
 * pass through, and the untracked nested repositories a status names.
 */

import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { IndexRejection, validateIndex } from './git-index.js';
import type { RepositoryLocations } from './git-locate.js';
import { isOidBytes } from './git-refs.js';
import { lstatOrNull, realPathInside, repoError, VIEW_CAPS, type Verifier } from './git-verifier.js';
import type { Slicer } from './slicer.js';

/**
 * The checks of `verifyNestedRepositories` for one `.git` (absolute path in the work tree): the `.git` itself (a link
 * must lead inside the roots), the git dir a `.git` file names, and the entries git probes there — HEAD, objects,
 * refs, and the common dir a `commondir` file names with its objects and refs.
 */
export function verifyNestedDotGit(dotGit: string, verify: Verifier): void {
  const found = verify.locate(dotGit, 'nested repository .git');
  if (!found) return;
  let gitDir: string | null = null;
  if (found.stats.isDirectory()) gitDir = found.real;
  else if (found.stats.isFile()) {
    const text = (verify.read(dotGit, 'nested repository .git', VIEW_CAPS.small) ?? Buffer.alloc(0))
      .toString('utf8')
      .replace(/[\r\n]+$/, '');
    if (!text.startsWith('gitdir: ')) return;
    gitDir = realPathInside(path.dirname(dotGit), text.slice('gitdir: '.length), dotGit, 'nested .git file', verify);
  }
  if (gitDir === null || !lstatOrNull(gitDir)?.isDirectory()) return;
  for (const name of ['HEAD', 'objects', 'refs', 'commondir']) verify.locate(path.join(gitDir, name), 'nested git dir');
  const commondir = verify.read(path.join(gitDir, 'commondir'), 'nested commondir', VIEW_CAPS.small);
  if (commondir) {
    const value = commondir.toString('utf8').replace(/[\r\n]+$/, '');
    const common = realPathInside(gitDir, value, path.join(gitDir, 'commondir'), 'nested commondir', verify);
    if (common !== null)
      for (const name of ['objects', 'refs']) verify.locate(path.join(common, name), 'nested common dir');
  }
}

/**
 * Checks the work-tree directories git passes through for each index entry (`a` and `a/b` for `a/b/c`). git opens an
 * entry's file by its path (lstat, then open for a content comparison or a diff, and `.gitattributes` beside it), so a
 * directory in that path that is a link leading outside the roots would let git read, or tell the existence of, an
 * outside file. Each directory is looked at once; a missing one (git finds the entry deleted) is fine.
 * @throws ToolError NOT_ALLOWED git_location_outside_roots naming the link (never its target); unsupported_repository
 *   for a link whose name is not UTF-8
 */
export async function checkEntryDirectories(
  top: string,
  names: Buffer[],
  verify: Verifier,
  slicer: Slicer,
): Promise<void> {
  const topBytes = Buffer.from(`${top}/`, 'utf8');
  const checked = new Set<string>();
  for (const name of names) {
    for (let slash = name.indexOf(0x2f); slash >= 0; slash = name.indexOf(0x2f, slash + 1)) {
      const key = name.toString('latin1', 0, slash);
      if (checked.has(key)) continue;
      checked.add(key);
      const wait = slicer.check();
      if (wait) await wait;
      let st: Stats;
      try {
        st = lstatSync(Buffer.concat([topBytes, name.subarray(0, slash)]));
      } catch {
        continue; // missing (or not reachable): git finds nothing there either
      }
      if (!st.isSymbolicLink()) continue;
      const text = name.toString('utf8', 0, slash);
      if (!Buffer.from(text, 'utf8').equals(name.subarray(0, slash)))
        throw repoError(
          'unsupported_repository',
          top,
          `A directory link in the work tree ${top} has a name that is not UTF-8; the git tools do not follow it.`,
        );
      verify.locate(path.join(top, text), 'work-tree directory link');
    }
  }
}

/**
 * A shallow file is object ids, one per line (git-shallow(5)); anything else fails closed (git would refuse it).
 * @throws ToolError corrupt_repository
 */
export async function checkShallow(bytes: Buffer, file: string, slicer: Slicer): Promise<void> {
  for (let at = 0; at < bytes.length;) {
    const wait = slicer.check();
    if (wait) await wait;
    let end = bytes.indexOf(0x0a, at);
    if (end < 0) end = bytes.length;
    if (!isOidBytes(bytes, at, end))
      throw repoError('corrupt_repository', file, `${file} is not a list of object ids; it was not used.`);
    at = end + 1;
  }
}

/** The rebuilt index a view hands git (git-index.ts), and the repository index's modification time. */
export interface ViewIndex {
  parts: Buffer[];
  mtimeMs: number;
}

/**
 * The repository's index, read through the verifier, parsed and validated by the server, and every entry's
 * directories in the work tree checked; null when there is none. git reads the rebuilt copy, never the repository's
 * file.
 * @throws ToolError corrupt_repository / unsupported_repository (git-index.ts' rejections), NOT_ALLOWED (a work-tree
 *   directory link leading outside), and the verifier's errors
 */
export async function readViewIndex(
  locations: RepositoryLocations,
  objectFormat: 'sha1' | 'sha256',
  verify: Verifier,
  slicer: Slicer,
): Promise<ViewIndex | null> {
  if (!locations.index) return null;
  const indexFile = path.join(locations.gitDir, 'index');
  const found = await verify.readLarge(indexFile, 'index', VIEW_CAPS.index);
  if (!found) return null;
  let validated: Awaited<ReturnType<typeof validateIndex>>;
  try {
    validated = await validateIndex(found.bytes, objectFormat === 'sha256' ? 32 : 20, slicer);
  } catch (error) {
    if (!(error instanceof IndexRejection)) throw error;
    throw repoError(
      error.kind === 'corrupt' ? 'corrupt_repository' : 'unsupported_repository',
      indexFile,
      `${indexFile} ${error.message}; the git tools do not read this repository.`,
      error.kind === 'corrupt'
        ? undefined
        : 'Use git directly for this repository; the server reads only indexes whose every entry it can verify.',
      error.facts,
    );
  }
  await checkEntryDirectories(locations.workTree, validated.names, verify, slicer);
  return { parts: validated.parts, mtimeMs: found.stats.mtimeMs };
}

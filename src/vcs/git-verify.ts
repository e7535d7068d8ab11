/**
 * The checks of a view's work-tree side and of its larger metadata files (docs/security.md "What git may read"): the
 * shallow file, the index (parsed, validated and rebuilt by git-index.ts) with the work-tree directories its entries
 * pass through, and the untracked nested repositories a status names.
 */

import { lstatSync, type Stats } from 'node:fs';
import path from 'node:path';
import { IndexRejection, validateIndex, type ValidatedIndex } from './git-index.js';
import type { RepositoryLocations } from './git-locate.js';
import {
  closeDirectory,
  ENTRY_KINDS,
  entryKinds,
  entryKindsChunkEnd,
  openVerifiedDirectory,
} from './git-native-stat.js';
import { isOidBytes } from './git-refs.js';
import { rememberIndex, viewCaches } from './git-view-cache.js';
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
 * The work-tree directories git passes through for the index entries `names` (`a` and `a/b` for `a/b/c`), each once,
 * in the order the entries first name them: what `checkEntryDirectories` looks at (a pure function of the names, so
 * it is kept with a reused index).
 */
export async function entryDirectories(names: readonly Buffer[], slicer: Slicer): Promise<Buffer[]> {
  const seen = new Set<string>();
  const out: Buffer[] = [];
  for (let i = 0; i < names.length; i++) {
    if ((i & 1023) === 1023) {
      const wait = slicer.check();
      if (wait) await wait;
    }
    const name = names[i];
    for (let slash = name.indexOf(0x2f); slash >= 0; slash = name.indexOf(0x2f, slash + 1)) {
      const key = name.toString('latin1', 0, slash);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(name.subarray(0, slash));
    }
  }
  return out;
}

/**
 * Checks the work-tree directories git passes through for the index entries (`directories`, from `entryDirectories`).
 * git opens an entry's file by its path (lstat, then open for a content comparison or a diff, and `.gitattributes`
 * beside it), so a directory in that path that is a link leading outside the roots would let git read, or tell the
 * existence of, an outside file. Each directory is looked at on every call; a missing one (git finds the entry
 * deleted) is fine. With the native addon their kinds come from batch statx calls through a descriptor of `top`
 * (`batchKinds`), all taken before the first is judged; else one lstat each.
 * @throws ToolError NOT_ALLOWED git_location_outside_roots naming the link (never its target); unsupported_repository
 *   for a link whose name is not UTF-8
 */
export async function checkEntryDirectories(
  top: string,
  directories: readonly Buffer[],
  verify: Verifier,
  slicer: Slicer,
): Promise<void> {
  const topBytes = Buffer.from(`${top}/`, 'utf8');
  const kinds = await batchKinds(top, directories, slicer);
  for (const [i, dir] of directories.entries()) {
    const wait = slicer.check();
    if (wait) await wait;
    if (kinds !== null) {
      if (kinds[i] !== ENTRY_KINDS.link) continue; // missing or not reachable: git finds nothing there either
    } else {
      let st: Stats;
      try {
        st = lstatSync(Buffer.concat([topBytes, dir]));
      } catch {
        continue;
      }
      if (!st.isSymbolicLink()) continue;
    }
    const text = dir.toString('utf8');
    if (!Buffer.from(text, 'utf8').equals(dir))
      throw repoError(
        'unsupported_repository',
        top,
        `A directory link in the work tree ${top} has a name that is not UTF-8; the git tools do not follow it.`,
      );
    verify.locate(path.join(top, text), 'work-tree directory link');
  }
}

/**
 * The kinds (ENTRY_KINDS) of work-tree directories `directories` relative to `top` (a verified real path), from
 * `entryKinds` batches (at most ENTRY_KINDS_CHUNK paths and bytes each) through one descriptor of `top`, a slice check
 * between batches and the descriptor's location re-checked after each, so no batch holds the event loop long and each
 * answer is as sound as one batch's; null when a batch cannot answer (no addon, a path it refuses, `top` found
 * elsewhere after it): the caller then lstats each by path.
 */
async function batchKinds(top: string, directories: readonly Buffer[], slicer: Slicer): Promise<Uint8Array | null> {
  const fd = directories.length > 0 ? openVerifiedDirectory(top) : null;
  if (fd === null) return null;
  const kinds = new Uint8Array(directories.length);
  try {
    for (let from = 0, to = 0; from < directories.length; from = to) {
      const wait = slicer.check();
      if (wait) await wait;
      to = entryKindsChunkEnd(directories, from);
      if (!entryKinds(fd, top, directories, from, to, kinds)) return null;
    }
  } finally {
    closeDirectory(fd);
  }
  return kinds;
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
  const hashBytes = objectFormat === 'sha256' ? 32 : 20;
  // Read on every call, never skipped by the file's stamp: a write through a shared mapping of the file moves neither
  // its mtime nor its ctime once the page is dirty (docs/security.md "What git may read").
  const found = await verify.readLarge(indexFile, 'index', VIEW_CAPS.index);
  if (!found) return null;
  // An index equal byte for byte to one validated before is not validated again (validation depends on nothing else).
  let entry = viewCaches.indexes.get(indexFile);
  if (!entry || entry.hashBytes !== hashBytes || !(await sameBytes(entry.bytes, found.bytes, slicer))) {
    const validated = await validatedIndex(indexFile, found.bytes, hashBytes, slicer);
    entry = { bytes: found.bytes, hashBytes, validated, directories: await entryDirectories(validated.names, slicer) };
  }
  rememberIndex(indexFile, entry);
  await checkEntryDirectories(locations.workTree, entry.directories, verify, slicer);
  return { parts: entry.validated.parts, mtimeMs: found.stats.mtimeMs };
}

/** True when `a` and `b` hold the same bytes (compared in 4 MiB windows, a slice check after each). */
async function sameBytes(a: Buffer, b: Buffer, slicer: Slicer): Promise<boolean> {
  if (a.length !== b.length) return false;
  for (let at = 0; at < a.length; at += 4 << 20) {
    const end = Math.min(a.length, at + (4 << 20));
    if (a.compare(b, at, end, at, end) !== 0) return false;
    const wait = slicer.check();
    if (wait) await wait;
  }
  return true;
}

/** `validateIndex` of index file `indexFile`, its rejections as envelopes. @throws ToolError corrupt/unsupported_repository */
async function validatedIndex(
  indexFile: string,
  bytes: Buffer,
  hashBytes: 20 | 32,
  slicer: Slicer,
): Promise<ValidatedIndex> {
  try {
    return await validateIndex(bytes, hashBytes, slicer);
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
}

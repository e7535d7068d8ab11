/**
 * copy_path: copy a file, a symlink (as a link, never its target) or a directory tree (`recursive: true`)
 * inside the roots. Never overwrites unless `overwrite: true`, and then only a file or link destination, under OCC
 * (`expected_hash` is the destination's, as for move_path; a link destination is replaced as the link itself, its
 * target never touched: src/mutation/destination-checks.ts `checkReplacedDestination`). Permission bits are kept; times and owners are not.
 *
 * Every path the copy touches passes policy: the source and destination up front (authorizeCopy), and every entry of
 * a tree on both sides (src/policy/tree-authorize.ts) while the tree is inspected inside the path lock — one refused
 * entry refuses the whole copy before anything is written.
 *
 * All-or-nothing: a file is written to a temporary name in the destination's verified parent and renamed into place;
 * a tree is built in a temporary sibling directory there (`.NAME.fs-tools-copy-XXXX`) and renamed into place in one
 * rename(2) once complete. A failure part-way removes the temporary tree, so the destination never holds a partial
 * copy; a crash part-way can leave only that hidden temporary directory (never the destination name) — see README.
 */
import { constants, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { historyEntriesOfTree, historyEntryOf, type HistoryFile, type PathState } from '../fs/history.js';
import { ToolError } from '../errors/tool-error.js';
import { temporaryPrefix } from '../fs/atomic-write.js';
import { dropOwnFile, noteOwnFile, removeOwnTree } from '../fs/own-files.js';
import { createContentHasher } from '../fs/hash.js';
import { isDirectory } from '../fs/read-current.js';
import { inspectTree, loopSlicer, type SnapshotEntry } from '../fs/tree-ops.js';
import {
  changedError,
  identityOf,
  sameNode,
  sameVersion,
  type FileIdentity,
  type VerifiedDir,
} from '../fs/verified-dir.js';
import { authorizeCopy, kindOf } from '../policy/authorize.js';
import { authorizeTreeEntries } from '../policy/tree-authorize.js';
import { isWithin } from '../policy/containment.js';
import { linkTargetInside } from '../policy/link-target.js';
import { parentOf } from '../policy/resolve-path.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { checkReplacedDestination } from '../mutation/destination-checks.js';
import { runMutation } from '../mutation/pipeline.js';
import { parentMissing } from '../mutation/scope.js';
import { heavyClasses } from './heavy-calls.js';

/** Most entries one tree copy holds (files, links and directories beneath the source). */
export const MAX_COPY_ENTRIES = 10_000;
/**
 * Most levels of a tree copy below its top (docs/security.md "Bounded work"): past it VALIDATION too_deep, before
 * anything is written. Deeper paths outgrow what a path can name (PATH_MAX, 4096 bytes, at about 2,000 levels of
 * one-letter names) and the copy's per-entry paths grow with the depth.
 */
export const MAX_COPY_DEPTH = 1024;
/** Most bytes of file content one copy writes (a single file or the sum over a tree). */
export const MAX_COPY_BYTES = 256 * 1024 * 1024;

export const CopyPathInput = z.strictObject({
  source: PathArg.describe('From'),
  destination: PathArg.describe('New path; its parent must exist'),
  recursive: z.boolean().default(false).describe('Needed to copy a directory'),
  overwrite: z.boolean().default(false).describe('Replace an existing destination file'),
  expected_hash: ExpectedHash.optional().describe("The destination's content_hash when overwriting"),
  expected_status_hash: ExpectedStatusHash.optional(),
  dry_run: DryRun,
});

export const CopyPathOutput = z.object({
  source: z.string(),
  destination: z.string(),
  type: KindSchema,
  dry_run: z.boolean(),
  overwritten: z.boolean(),
  entries: z.number().int().describe('Entries copied beneath a directory (0 for a file or link)'),
  bytes: z.number().int().describe('File bytes copied'),
  previous_destination_hash: ContentHash.nullable(),
  content_hash: ContentHash.nullable().describe('Hash of a copied file (null for directories and links)'),
  status_hash: z.string().optional(),
});

/** One entry of a source tree, in pre-order (a directory before what it holds). */
interface PlannedEntry {
  relative: string;
  name: string;
  depth: number;
  stats: Stats;
}

/** A link that would point outside the roots at its new place (the target itself is never echoed: it may be outside). */
const linkOutsideError = (link: string): ToolError =>
  new ToolError(
    'NOT_ALLOWED',
    `The link ${link} would point outside the roots where it is copied; nothing was copied.`,
    {
      path: link,
      details: { reason: 'link_target_outside' },
      suggestion: 'Copy what the link points to instead, or place the copy where its relative target stays inside.',
    },
  );

const tooLarge = (absolute: string, what: string, limit: number, reason: string): ToolError =>
  new ToolError('VALIDATION', `${absolute} is too large to copy in one call (${what}); nothing was copied.`, {
    path: absolute,
    details: { reason, limit },
    suggestion: 'Copy a smaller subtree per call.',
  });

export const copyPath = defineTool({
  name: 'copy_path',
  title: 'Copy path',
  description:
    'Copy a file, symlink (as a link) or directory (recursive: true; ≤ 10000 entries, 256 MiB), ' +
    'keeping modes; all or nothing. An existing destination fails (destination_exists) unless overwrite: ' +
    'true on a file, with its hash.',
  group: 'fs-write',
  input: CopyPathInput,
  output: CopyPathOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.source, a.destination],
  heavy: (a) => heavyClasses('walk', a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    const { source, destination } = await authorizeCopy(args.source, args.destination, ctx.policy);
    // docs/errors.md "Order of checks" step 7 on what authorization saw (refusals only); every one is decided again inside the lock.
    assertCopyable(source.stats, destination.stats, args, source, destination);
    const missingParent = 'Call create_directory for the parent first.';
    if (!(await isDirectory(parentOf(destination.real)))) throw parentMissing(destination.absolute, missingParent);
    const { result, statusHash } = await runMutation(ctx, {
      lockPaths: [source.real, destination.real],
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [destination.real],
      dryRun: args.dry_run,
      decide: async (scope) => {
        const src = scope.existingParent(source.real, source.absolute);
        const dst = scope.existingParent(destination.real, destination.absolute, missingParent);
        const srcNow = src.dir.lstat(src.name);
        const dstNow = dst.dir.lstat(dst.name);
        assertCopyable(srcNow, dstNow, args, source, destination);
        const s = srcNow!;
        // The destination as it is now: a file being replaced is a mutation under OCC (docs/errors.md "Optimistic concurrency").
        const { file: dstFile, identity: expectDst } = await checkReplacedDestination(
          ctx,
          scope,
          destination,
          dstNow,
          args.expected_hash,
        );
        const base = { type: kindOf(s), overwritten: dstNow !== null, previousDestinationHash: dstFile?.hash ?? null };
        const forgetDst = () => ctx.hashes.forget(destination.real);
        // The undo record of a file or link copy: the destination from nothing (or the file it replaced,
        // when its bytes were loaded: up to 256 KiB) to the copy.
        const replaced: PathState | null = !dstNow
          ? { kind: 'absent' }
          : dstNow.isFile() && dstFile?.bytes
            ? { kind: 'file', bytes: dstFile.bytes, mode: dstNow.mode }
            : dstNow.isSymbolicLink()
              ? { kind: 'symlink', target: dst.dir.readlink(dst.name) }
              : null;
        const copyHistory = (after: { kind: 'file'; hash: string } | { kind: 'symlink'; target: string }) =>
          replaced ? { tool: 'copy_path', files: [historyEntryOf(destination.real, replaced, after)] } : undefined;

        if (s.isFile()) {
          if (s.size > MAX_COPY_BYTES)
            throw tooLarge(source.absolute, `${s.size} bytes`, MAX_COPY_BYTES, 'too_many_bytes');
          // Hashed here (streamed, never held whole); the effect streams the same file again and must see the same
          // node at the same version with the same hash.
          const current = await scope.current(source.real, { wantBytes: false, maxBytes: MAX_COPY_BYTES });
          const node = current.stats ?? s;
          return {
            result: { ...base, entries: 0, bytes: node.size, contentHash: current.hash },
            done: `copied ${source.real} to ${destination.real}`,
            effect: async () => {
              await copyFileAtomic(src.dir, src.name, node, current.hash!, dst.dir, dst.name, expectDst);
            },
            remember: () => ctx.hashes.remember(destination.real, current.hash!),
            history: copyHistory({ kind: 'file', hash: current.hash! }),
          };
        }
        if (s.isSymbolicLink()) {
          const target = src.dir.readlink(src.name);
          if (!(await linkTargetInside(ctx.policy.roots, destination.real, target)))
            throw linkOutsideError(destination.real);
          return {
            result: { ...base, entries: 0, bytes: 0, contentHash: null },
            done: `copied the link ${source.real} to ${destination.real}`,
            effect: async () => {
              await placeLink(dst.dir, dst.name, target, expectDst);
            },
            remember: forgetDst,
            history: copyHistory({ kind: 'symlink', target }),
          };
        }
        // A directory tree: inspected (and every entry authorized on both sides) before anything is written.
        const top = src.dir.openDir(src.name);
        const plan: PlannedEntry[] = [];
        let total = 0;
        try {
          if (!sameNode(top.identity, s)) throw changedError(source.absolute);
          // Every entry is judged as a read at its old place and a write at its new one. The copy's own refusals
          // (a special file, too many bytes) wait until every entry was judged: thrown mid-walk, they would tell
          // whether a hidden entry sorts before or after the special or the largest file, which the agent can
          // rename (docs/security.md, "Whole-tree operations").
          const judge = authorizeTreeEntries(ctx.policy, 'copy', source, destination);
          const deferred: { refusal: ToolError | null } = { refusal: null };
          await inspectTree(
            top,
            (e) => {
              if (!judge.entry({ relative: e.relative, isDirectory: e.stats.isDirectory() })) return false;
              if (deferred.refusal) return true;
              if (!e.stats.isFile() && !e.stats.isDirectory() && !e.stats.isSymbolicLink()) {
                deferred.refusal = new ToolError(
                  'FILE_POLICY_DENIED',
                  `${e.absolute} is a special file (${kindOf(e.stats)}); nothing is copied.`,
                  {
                    path: e.absolute,
                    details: { source: 'builtin', rule: 'special_file' },
                  },
                );
                return true;
              }
              if (e.stats.isFile()) {
                total += e.stats.size;
                if (total > MAX_COPY_BYTES) {
                  deferred.refusal = tooLarge(
                    source.absolute,
                    `over ${MAX_COPY_BYTES} bytes`,
                    MAX_COPY_BYTES,
                    'too_many_bytes',
                  );
                  return true;
                }
              }
              plan.push({ relative: e.relative, name: e.name, depth: e.depth, stats: e.stats });
              return true;
            },
            MAX_COPY_ENTRIES,
            ctx.signal,
            MAX_COPY_DEPTH,
          ).catch((error: unknown) => {
            if (error instanceof ToolError && error.details.reason === 'too_many_entries') {
              throw tooLarge(
                source.absolute,
                `more than ${MAX_COPY_ENTRIES} entries`,
                MAX_COPY_ENTRIES,
                'too_many_entries',
              );
            }
            throw error;
          });
          judge.assertAllowed();
          if (deferred.refusal) throw deferred.refusal;
        } finally {
          top.close();
        }
        const treeHistory = { tool: 'copy_path', files: [] as HistoryFile[] };
        return {
          result: { ...base, entries: plan.length, bytes: total, contentHash: null },
          done: `copied ${source.real} to ${destination.real}`,
          effect: async () => {
            const copied: SnapshotEntry[] = [];
            await copyTree(
              src.dir,
              src.name,
              s,
              plan,
              dst.dir,
              dst.name,
              copied,
              (relative, target) => linkTargetInside(ctx.policy.roots, `${destination.real}/${relative}`, target),
              ctx.signal,
            );
            treeHistory.files = historyEntriesOfTree(destination.real, s.mode, copied, 'created');
          },
          remember: () => ctx.hashes.forgetUnder(destination.real),
          // The undo record of a tree copy: every entry the copy wrote, each file with the hash of the bytes
          // it wrote; a revert removes exactly these, refused if any changed since.
          history: treeHistory,
        };
      },
    });
    return {
      structured: {
        source: source.real,
        destination: destination.real,
        type: result.type,
        dry_run: args.dry_run,
        overwritten: result.overwritten,
        entries: result.entries,
        bytes: result.bytes,
        previous_destination_hash: result.previousDestinationHash,
        content_hash: result.contentHash,
        ...(statusHash ? { status_hash: statusHash } : {}),
      },
      text:
        `${args.dry_run ? 'Would copy' : 'Copied'} ${result.type} ${source.real} -> ${destination.real}` +
        `${result.entries ? ` (${result.entries} entries, ${result.bytes} bytes)` : ''}` +
        `${result.overwritten ? ' (overwrote the destination)' : ''}` +
        `${result.contentHash ? `; content_hash ${result.contentHash}` : ''}${statusHash ? `; status_hash ${statusHash}` : ''}`,
      audit: {
        paths: [source.real, destination.real],
        hash_before: result.previousDestinationHash,
        hash_after: result.contentHash,
      },
    };
  },
});

/**
 * The refusals of a copy on the given facts (authorization's, then the current ones inside the lock).
 * @throws ToolError NOT_FOUND, VALIDATION (same_path, recursive_required, destination_inside_source,
 *   destination_exists, destination_is_directory), FILE_POLICY_DENIED (a special file)
 */
function assertCopyable(
  src: Stats | null,
  dst: Stats | null,
  args: { recursive: boolean; overwrite: boolean },
  source: { real: string; absolute: string },
  destination: { real: string; absolute: string },
): void {
  if (!src) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: source.absolute });
  if (source.real === destination.real) {
    throw new ToolError('VALIDATION', 'source and destination are the same path.', {
      path: source.absolute,
      details: { reason: 'same_path' },
    });
  }
  if (!src.isFile() && !src.isDirectory() && !src.isSymbolicLink()) {
    throw new ToolError(
      'FILE_POLICY_DENIED',
      `${source.absolute} is a special file (${kindOf(src)}); it is not copied.`,
      {
        path: source.absolute,
        details: { source: 'builtin', rule: 'special_file' },
      },
    );
  }
  if (src.isDirectory() && !args.recursive) {
    throw new ToolError('VALIDATION', `${source.absolute} is a directory; copying it needs recursive: true.`, {
      path: source.absolute,
      details: { reason: 'recursive_required' },
    });
  }
  if (src.isDirectory() && isWithin(source.real, destination.real)) {
    throw new ToolError('VALIDATION', 'A directory cannot be copied inside itself.', {
      path: destination.absolute,
      details: { reason: 'destination_inside_source' },
    });
  }
  if (dst && !args.overwrite) {
    throw new ToolError('VALIDATION', `${destination.absolute} already exists; nothing was copied.`, {
      path: destination.absolute,
      details: { reason: 'destination_exists' },
      suggestion:
        "Pass overwrite: true (with the destination's expected_hash) to replace a file, or choose another destination.",
    });
  }
  if (dst && (dst.isDirectory() || src.isDirectory())) {
    throw new ToolError(
      'VALIDATION',
      `${destination.absolute} exists; only a file can be overwritten, and only by a file or link.`,
      {
        path: destination.absolute,
        details: { reason: 'destination_is_directory' },
      },
    );
  }
}

const tempName = (name: string, what: string): string => {
  let cut = name;
  while (Buffer.byteLength(cut) > 200) cut = cut.slice(0, -1);
  return `.${cut}.fs-tools-${what}-${randomBytes(6).toString('hex')}`;
};

/** Places a symlink holding `target` at `name` of `dir`: atomically new, or replacing the file `expected` by rename. */
async function placeLink(dir: VerifiedDir, name: string, target: string, expected: FileIdentity | null): Promise<void> {
  dir.assertInside();
  if (expected === null) {
    try {
      dir.symlink(target, name); // EEXIST if anything appeared: never replaces
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw changedError(dir.pathOf(name));
      throw error;
    }
    await dir.sync();
    return;
  }
  const tmp = tempName(name, 'link');
  noteOwnFile(dir.pathOf(tmp), 'tree');
  dir.symlink(target, tmp);
  await commitTemporary(dir, tmp, name, () => {
    const now = dir.lstat(name);
    if (!now || !sameNode(now, expected) || now.mtimeMs !== expected.mtimeMs || now.size !== expected.size)
      throw changedError(dir.pathOf(name));
  });
}

/**
 * Renames the temporary entry `tmp` of `dir` over `name` once `prepare` (which fills or checks it) has passed; on any
 * failure the temporary entry is removed and the error rethrown. The directory is synced after the rename.
 * @throws whatever `prepare` or the rename throws
 */
async function commitTemporary(
  dir: VerifiedDir,
  tmp: string,
  name: string,
  prepare: () => Promise<void> | void,
): Promise<void> {
  try {
    await prepare();
    dir.rename(tmp, dir, name);
  } catch (error) {
    dir.unlinkOwnTemporary(tmp);
    throw error;
  } finally {
    dropOwnFile(dir.pathOf(tmp));
  }
  await dir.sync();
}

/**
 * Test seam: called before each planned entry is copied; it may throw to simulate a failure part-way.
 * Set only by tests (in-process) or by `--test-seams=copy-fault:ENTRY` (src/cli.ts); never from the environment.
 */
let copyFault: ((relative: string) => void | Promise<void>) | null = null;

/** An EACCES before `entry` is copied (the `--test-seams=copy-fault:ENTRY` seam; the suite runs as root). */
export function failCopyAt(entry: string): (relative: string) => void {
  return (relative) => {
    if (relative === entry)
      throw Object.assign(new Error(`EACCES: permission denied, open '${relative}'`), { code: 'EACCES' });
  };
}

/** A pause of `ms` before each entry is copied (the `--test-seams=copy-delay:MS` seam: a copy that takes a while). */
export function delayCopy(ms: number): (relative: string) => Promise<void> {
  return () => new Promise((r) => setTimeout(r, ms));
}

/** Sets the copy fault seam (tests only). */
export function setCopyFault(fn: typeof copyFault): void {
  copyFault = fn;
}

/**
 * Copies the inspected tree `plan` of directory `srcName` of `srcParent` to `dstName` of `dstParent`: built in a
 * temporary sibling directory, then renamed into place. Every source entry must still be the node inspected.
 * `copied` receives each entry written (pre-order; a file with the hash of the bytes written) for the undo history.
 * `linkAllowed` decides each link's target at its new place (src/policy/link-target.ts: a link inside at its source
 * must stay inside); a link it refuses fails the copy. On failure the temporary tree is removed and nothing is at the destination.
 * @throws ToolError NOT_ALLOWED changed_during_call or link_target_outside, VALIDATION destination_exists (it
 *   appeared); errno errors
 */
async function copyTree(
  srcParent: VerifiedDir,
  srcName: string,
  srcStats: Stats,
  plan: readonly PlannedEntry[],
  dstParent: VerifiedDir,
  dstName: string,
  copied: SnapshotEntry[],
  linkAllowed: (relative: string, target: string) => Promise<boolean>,
  signal?: AbortSignal,
): Promise<void> {
  const tmpName = tempName(dstName, 'copy');
  dstParent.assertInside();
  // Noted before it exists (src/fs/own-files.ts): a copy killed part-way leaves a tree the next start sweeps.
  noteOwnFile(dstParent.pathOf(tmpName), 'tree');
  dstParent.mkdir(tmpName, 0o700);
  const tmpTop = dstParent.openDir(tmpName);
  // Directories as they are walked: [source, copy, mode] per level. A directory's mode is set as the walk leaves it
  // (its copy is complete then, and its parent is still being filled at 0700), through its own descriptor: each
  // directory once, so the copy stays linear in entries and depth (re-opening every directory from the top to set its
  // mode made a 1,000-level copy hold the server for half a minute).
  const stack: Array<[VerifiedDir, VerifiedDir, number]> = [];
  const leave = (): void => {
    const [a, b, mode] = stack.pop()!;
    a.close();
    try {
      b.chmodSelf(mode);
    } finally {
      b.close();
    }
  };
  const slice = loopSlicer();
  let placed = false;
  try {
    const srcTop = srcParent.openDir(srcName);
    stack.push([srcTop, tmpTop, srcStats.mode & 0o7777]);
    if (!sameNode(srcTop.identity, srcStats)) throw changedError(srcTop.path);
    for (const e of plan) {
      // A cancelled call (the client's cancellation, or the shutdown grace ran out) stops here; the temporary tree
      // is removed below and nothing appears at the destination.
      if (signal?.aborted)
        throw new ToolError('VALIDATION', 'The call was cancelled; nothing was copied.', {
          details: { reason: 'cancelled' },
        });
      await copyFault?.(e.relative);
      const due = slice();
      if (due) await due;
      while (stack.length > e.depth) {
        leave();
        const up = slice();
        if (up) await up;
      }
      const [from, to] = stack[stack.length - 1];
      const now = from.lstat(e.name);
      if (!now || !sameNode(now, e.stats) || kindOf(now) !== kindOf(e.stats)) throw changedError(from.pathOf(e.name));
      if (now.isDirectory()) {
        to.mkdir(e.name, 0o700);
        const a = from.openDir(e.name);
        const b = to.openDir(e.name);
        stack.push([a, b, now.mode & 0o7777]);
        if (!sameNode(a.identity, e.stats)) throw changedError(a.path);
        copied.push({ relative: e.relative, state: { kind: 'directory', mode: now.mode & 0o777 } });
      } else if (now.isSymbolicLink()) {
        const target = from.readlink(e.name);
        if (!(await linkAllowed(e.relative, target))) throw linkOutsideError(from.pathOf(e.name));
        to.symlink(target, e.name);
        copied.push({ relative: e.relative, state: { kind: 'symlink', target } });
      } else {
        const hash = await copyFileIn(from, e.name, e.stats, to, e.name);
        copied.push({ relative: e.relative, state: { kind: 'file', hash, bytes: null, mode: now.mode & 0o777 } });
      }
    }
    // Leaving the last branch sets the mode of each directory on it: as many steps as levels, sliced like the rest.
    while (stack.length > 1) {
      leave();
      const due = slice();
      if (due) await due;
    }
    dstParent.chmod(tmpName, srcStats.mode & 0o7777);
    dstParent.assertInside();
    // There is no rename-without-replace in Node, and rename(2) silently replaces an empty directory: the destination
    // name is claimed first with an exclusive mkdir (EEXIST: something appeared), and the copy then replaces only
    // that placeholder of ours (a non-empty directory put there meanwhile makes the rename fail, nothing replaced).
    const appeared = () =>
      new ToolError('VALIDATION', `${dstParent.pathOf(dstName)} appeared during the call; nothing was copied.`, {
        path: dstParent.pathOf(dstName),
        details: { reason: 'destination_exists' },
      });
    try {
      dstParent.mkdir(dstName, 0o700);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw appeared();
      throw error;
    }
    const placeholder = dstParent.lstat(dstName);
    try {
      dstParent.rename(tmpName, dstParent, dstName);
    } catch (error) {
      const now = dstParent.lstat(dstName);
      if (now && placeholder && sameNode(now, placeholder)) {
        try {
          dstParent.rmdir(dstName);
        } catch {
          /* no longer empty: not ours to remove */
        }
      }
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') throw appeared();
      throw error;
    }
    placed = true;
    await dstParent.sync();
  } finally {
    for (const [a, b] of stack) {
      a.close();
      if (b !== tmpTop) b.close();
    }
    tmpTop.close();
    if (!placed) await removeOwnTree(dstParent, tmpName);
    if (placed || !dstParent.lstat(tmpName)) dropOwnFile(dstParent.pathOf(tmpName));
  }
}

/**
 * Copies the file `name` of `from` to a temporary name beside `dstName` of `to` and renames it into place: the
 * source must still be `expected` with content hash `hash`; the destination must still be absent (`expectDst` null)
 * or the file `expectDst` (replaced). The temporary file is removed on failure.
 * @throws ToolError NOT_ALLOWED changed_during_call, VALIDATION destination_exists; errno errors
 */
async function copyFileAtomic(
  from: VerifiedDir,
  name: string,
  expected: Stats,
  hash: string,
  to: VerifiedDir,
  dstName: string,
  expectDst: FileIdentity | null,
): Promise<void> {
  const tmp = `${temporaryPrefix(dstName)}${randomBytes(6).toString('hex')}.tmp`;
  to.assertInside();
  noteOwnFile(to.pathOf(tmp), 'temporary');
  await commitTemporary(to, tmp, dstName, async () => {
    const copied = await copyFileIn(from, name, expected, to, tmp);
    if (copied !== hash) throw changedError(from.pathOf(name));
    to.assertInside();
    const now = to.lstat(dstName);
    if (expectDst === null) {
      if (now) {
        throw new ToolError('VALIDATION', `${to.pathOf(dstName)} appeared during the call; nothing was copied.`, {
          path: to.pathOf(dstName),
          details: { reason: 'destination_exists' },
        });
      }
    } else if (!now || (!now.isFile() && !now.isSymbolicLink()) || !sameVersion(identityOf(now), expectDst)) {
      // The file or link that was decided on (a link is replaced as the link itself), at the same version.
      throw changedError(to.pathOf(dstName));
    }
  });
}

/**
 * Copies the file `name` of `from` (which must still be `expected`: same node, size and mtime) to the new file
 * `toName` of `to` (created exclusively), permission bits kept.
 * @returns the content hash of the bytes copied
 * @throws ToolError NOT_ALLOWED changed_during_call (the source changed since inspected); errno errors
 */
async function copyFileIn(
  from: VerifiedDir,
  name: string,
  expected: Stats,
  to: VerifiedDir,
  toName: string,
): Promise<string> {
  // Non-blocking (openFile adds O_NONBLOCK): a FIFO renamed over the source after the hash cannot hang the call while
  // it holds its locks; fstat then refuses anything but the regular file inspected.
  const input = await from.openFile(name, { flags: constants.O_RDONLY });
  const hasher = createContentHasher();
  try {
    const st = await input.stat();
    if (!st.isFile() || !sameNode(st, expected) || st.size !== expected.size || st.mtimeMs !== expected.mtimeMs)
      throw changedError(from.pathOf(name));
    const mode = st.mode & 0o7777;
    const output = await to.openFile(toName, {
      flags: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
      mode: 0o600,
    });
    try {
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      let position = 0;
      for (;;) {
        const { bytesRead } = await input.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) break;
        if (position + bytesRead > expected.size) throw changedError(from.pathOf(name)); // it grew meanwhile
        hasher.update(buffer.subarray(0, bytesRead));
        let written = 0;
        while (written < bytesRead) written += (await output.write(buffer, written, bytesRead - written)).bytesWritten;
        position += bytesRead;
      }
      if (position !== expected.size) throw changedError(from.pathOf(name)); // it shrank meanwhile
      await output.chmod(mode);
      await output.sync();
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
  return hasher.digest();
}

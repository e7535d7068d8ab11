/**
 * The steps of copy_path (src/tools/copy-path.ts declares the tool): authorization of both paths before the lock
 * (`authorizeCopyCall`); inside the lock, `inspectCopy` reads both places once and makes the refusals, and `decideCopy`
 * decides the destination under OCC (a link destination is replaced as the link itself:
 * src/mutation/destination-checks.ts `checkReplacedDestination`) and per kind what the copy will write — a file
 * (hashed now, streamed again by the effect), a link (its target must stay inside at the new place), or a tree, every
 * entry of which is authorized on both sides (src/policy/tree-authorize.ts) while it is inspected, one refused entry
 * refusing the whole copy before anything is written. The effects are src/mutation/copy-write.ts.
 */
import type { Stats } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import { historyEntriesOfTree, historyEntryOf, type HistoryFile, type PathState } from '../fs/history.js';
import { isDirectory, type CurrentFile } from '../fs/read-current.js';
import { inspectTree, type SnapshotEntry } from '../fs/tree-ops.js';
import { changedError, sameNode, type FileIdentity, type VerifiedDir } from '../fs/verified-dir.js';
import { authorizeCopy, kindOf, type AuthorizedCopy } from '../policy/authorize.js';
import { isWithin } from '../policy/containment.js';
import { linkTargetInside } from '../policy/link-target.js';
import { parentOf } from '../policy/resolve-path.js';
import { authorizeTreeEntries } from '../policy/tree-authorize.js';
import type { ToolContext } from './context.js';
import { checkReplacedDestination } from './destination-checks.js';
import type { MutationStep } from './pipeline.js';
import { parentMissing, type MutationScope } from './scope.js';
import { copyFileAtomic, copyTree, linkOutsideError, placeLink, type PlannedEntry } from './copy-write.js';

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

const MISSING_PARENT = 'Call create_directory for the parent first.';

/** The arguments of copy_path the steps read. */
export interface CopyArgs {
  source: string;
  destination: string;
  recursive: boolean;
  overwrite: boolean;
  expected_hash?: string;
  dry_run: boolean;
}

/** What a copy decided. */
export interface CopyResult {
  type: ReturnType<typeof kindOf>;
  overwritten: boolean;
  previousDestinationHash: string | null;
  entries: number;
  bytes: number;
  contentHash: string | null;
}

/** A copy's two places inside the lock: each verified parent and name, and the lstat of each now. */
interface CopyPlaces {
  source: AuthorizedCopy['source'];
  destination: AuthorizedCopy['destination'];
  src: { dir: VerifiedDir; name: string };
  dst: { dir: VerifiedDir; name: string };
  srcNow: Stats;
  /** The destination file or link being replaced (null: absent), as `checkReplacedDestination` decided it. */
  expectDst: FileIdentity | null;
  /** The result fields every kind shares. */
  base: Pick<CopyResult, 'type' | 'overwritten' | 'previousDestinationHash'>;
  /** The undo record of a file or link copy, given what it leaves (undefined: not recorded). */
  history: (
    after: { kind: 'file'; hash: string } | { kind: 'symlink'; target: string },
  ) => MutationStep<CopyResult>['history'];
}

/** VALIDATION too_many_bytes / too_many_entries: the copy is larger than one call copies. */
const tooLarge = (absolute: string, what: string, limit: number, reason: string): ToolError =>
  new ToolError('VALIDATION', `${absolute} is too large to copy in one call (${what}); nothing was copied.`, {
    path: absolute,
    details: { reason, limit },
    suggestion: 'Copy a smaller subtree per call.',
  });

/**
 * Authorizes a copy before the lock (src/policy/authorize.ts `authorizeCopy`), then docs/errors.md "Order of checks"
 * step 7 on what authorization saw (refusals only; every one is decided again inside the lock).
 * @throws ToolError as authorizeCopy, as `assertCopyable`, NOT_FOUND parent_missing
 */
export async function authorizeCopyCall(ctx: ToolContext, args: CopyArgs): Promise<AuthorizedCopy> {
  const { source, destination } = await authorizeCopy(args.source, args.destination, ctx.policy);
  assertCopyable(source.stats, destination.stats, args, source, destination);
  if (!(await isDirectory(parentOf(destination.real)))) throw parentMissing(destination.absolute, MISSING_PARENT);
  return { source, destination };
}

/** What a copy's inspect step found inside the lock: both verified parents and names, and the lstat of each now. */
export interface CopyInspected {
  src: { dir: VerifiedDir; name: string };
  dst: { dir: VerifiedDir; name: string };
  srcNow: Stats;
  dstNow: Stats | null;
}

/**
 * The inspect step of a copy, inside the lock (docs/errors.md "Order of checks" step 7): both places as they are now,
 * read once, and the refusals on them.
 * @throws ToolError NOT_FOUND (parent_missing too), VALIDATION and FILE_POLICY_DENIED as `assertCopyable`
 */
export function inspectCopy(
  scope: MutationScope,
  { source, destination }: AuthorizedCopy,
  args: CopyArgs,
): CopyInspected {
  const src = scope.existingParent(source.real, source.absolute);
  const dst = scope.existingParent(destination.real, destination.absolute, MISSING_PARENT);
  const srcNow = src.dir.lstat(src.name);
  const dstNow = dst.dir.lstat(dst.name);
  assertCopyable(srcNow, dstNow, args, source, destination);
  return { src, dst, srcNow: srcNow!, dstNow };
}

/**
 * The decide step of a copy, on what `inspectCopy` found (see the module comment).
 * @throws ToolError HASH_REQUIRED / OCC_MISMATCH / NOT_ALLOWED link_target_outside (the destination), VALIDATION
 *   too_many_bytes / too_many_entries / too_deep, NOT_ALLOWED (link_target_outside, changed_during_call),
 *   FILE_POLICY_DENIED / SECRET_DENIED (an entry of a tree)
 */
export async function decideCopy(
  ctx: ToolContext,
  scope: MutationScope,
  { source, destination }: AuthorizedCopy,
  args: CopyArgs,
  { src, dst, srcNow, dstNow }: CopyInspected,
): Promise<MutationStep<CopyResult>> {
  // The destination as it is now: a file being replaced is a mutation under OCC (docs/errors.md "Optimistic concurrency").
  const { file: dstFile, identity: expectDst } = await checkReplacedDestination(
    ctx,
    scope,
    destination,
    dstNow,
    args.expected_hash,
  );
  const replaced = replacedState(dst, dstNow, dstFile);
  const places: CopyPlaces = {
    source,
    destination,
    src,
    dst,
    srcNow,
    expectDst,
    base: { type: kindOf(srcNow), overwritten: dstNow !== null, previousDestinationHash: dstFile?.hash ?? null },
    history: (after) =>
      replaced ? { tool: 'copy_path', files: [historyEntryOf(destination.real, replaced, after)] } : undefined,
  };
  if (srcNow.isFile()) return await decideFileCopy(ctx, scope, places);
  if (srcNow.isSymbolicLink()) return await decideLinkCopy(ctx, places);
  return await decideTreeCopy(ctx, places);
}

/**
 * What the undo record of a file or link copy restores at the destination: nothing (it was absent), the file it
 * replaced (when its bytes were loaded: up to 256 KiB), or the link it replaced; null: not recorded.
 */
function replacedState(
  dst: { dir: VerifiedDir; name: string },
  dstNow: Stats | null,
  dstFile: CurrentFile | null,
): PathState | null {
  if (!dstNow) return { kind: 'absent' };
  if (dstNow.isFile() && dstFile?.bytes) return { kind: 'file', bytes: dstFile.bytes, mode: dstNow.mode };
  if (dstNow.isSymbolicLink()) return { kind: 'symlink', target: dst.dir.readlink(dst.name) };
  return null;
}

/**
 * A file: hashed here (streamed, never held whole); the effect streams the same file again and must see the same node
 * at the same version with the same hash.
 * @throws ToolError VALIDATION too_many_bytes
 */
async function decideFileCopy(
  ctx: ToolContext,
  scope: MutationScope,
  { source, destination, src, dst, srcNow: s, expectDst, base, history }: CopyPlaces,
): Promise<MutationStep<CopyResult>> {
  if (s.size > MAX_COPY_BYTES) throw tooLarge(source.absolute, `${s.size} bytes`, MAX_COPY_BYTES, 'too_many_bytes');
  const current = await scope.current(source.real, { wantBytes: false, maxBytes: MAX_COPY_BYTES });
  const node = current.stats ?? s;
  return {
    result: { ...base, entries: 0, bytes: node.size, contentHash: current.hash },
    done: `copied ${source.real} to ${destination.real}`,
    effect: async () => {
      await copyFileAtomic(src.dir, src.name, node, current.hash!, dst.dir, dst.name, expectDst);
    },
    remember: () => ctx.hashes.remember(destination.real, current.hash!),
    history: history({ kind: 'file', hash: current.hash! }),
  };
}

/**
 * A link, copied as a link: its target must point inside the roots at the new place.
 * @throws ToolError NOT_ALLOWED link_target_outside
 */
async function decideLinkCopy(
  ctx: ToolContext,
  { source, destination, src, dst, expectDst, base, history }: CopyPlaces,
): Promise<MutationStep<CopyResult>> {
  const target = src.dir.readlink(src.name);
  if (!(await linkTargetInside(ctx.policy.roots, destination.real, target))) throw linkOutsideError(destination.real);
  return {
    result: { ...base, entries: 0, bytes: 0, contentHash: null },
    done: `copied the link ${source.real} to ${destination.real}`,
    effect: async () => {
      await placeLink(dst.dir, dst.name, target, expectDst);
    },
    remember: () => ctx.hashes.forget(destination.real),
    history: history({ kind: 'symlink', target }),
  };
}

/**
 * A directory tree: inspected, every entry authorized on both sides, before anything is written. The undo record holds
 * every entry the copy wrote, each file with the hash of the bytes it wrote; a revert removes exactly these, refused
 * if any changed since.
 */
async function decideTreeCopy(ctx: ToolContext, places: CopyPlaces): Promise<MutationStep<CopyResult>> {
  const { source, destination, src, dst, srcNow: s, base } = places;
  const { plan, total } = await inspectCopyTree(ctx, places);
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
    history: treeHistory,
  };
}

/**
 * Walks the source tree through its verified descriptor (src/fs/tree-ops.ts `inspectTree`): every entry is judged as
 * a read at its old place and a write at its new one. The copy's own refusals (a special file, too many bytes) wait
 * until every entry was judged: thrown mid-walk, they would tell whether a hidden entry sorts before or after the
 * special or the largest file, which the agent can rename (docs/security.md, "Whole-tree operations").
 * @returns the planned entries (pre-order) and the sum of their file sizes
 * @throws ToolError NOT_ALLOWED changed_during_call, FILE_POLICY_DENIED / SECRET_DENIED (an entry; a special file),
 *   VALIDATION too_many_bytes / too_many_entries / too_deep
 */
async function inspectCopyTree(
  ctx: ToolContext,
  { source, destination, src, srcNow: s }: CopyPlaces,
): Promise<{ plan: PlannedEntry[]; total: number }> {
  const top = src.dir.openDir(src.name);
  const plan: PlannedEntry[] = [];
  let total = 0;
  try {
    if (!sameNode(top.identity, s)) throw changedError(source.absolute);
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
        throw tooLarge(source.absolute, `more than ${MAX_COPY_ENTRIES} entries`, MAX_COPY_ENTRIES, 'too_many_entries');
      }
      throw error;
    });
    judge.assertAllowed();
    if (deferred.refusal) throw deferred.refusal;
  } finally {
    top.close();
  }
  return { plan, total };
}

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

/**
 * The steps of move_path (src/tools/move-path.ts declares the tool): authorization of both paths before the lock
 * (`authorizeMove`), then inside the lock on the current state of both (`decideMove`): the refusals, the source's hash,
 * the destination under OCC, a link's target at its new place, a directory as a move of every entry it holds (each
 * authorized at its old and new place: docs/security.md, "Whole-tree operations"), the undo record, and the effect —
 * one rename, checked afterwards against what was inspected.
 */
import type { Stats } from 'node:fs';
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { hashBytes } from '../fs/hash.js';
import { historyEntriesOfTree, historyEntryOf, type HistoryFile, type PathState } from '../fs/history.js';
import { isDirectory, readCurrentIn, type CurrentFile } from '../fs/read-current.js';
import {
  afterEffect,
  holdsOnlyInspected,
  inspectTree,
  moveEntry,
  snapshotTree,
  type InspectedTree,
  type TreeSnapshot,
} from '../fs/tree-ops.js';
import { changedError, sameNode, type VerifiedDir } from '../fs/verified-dir.js';
import { assertWritesAllowed, authorizeWrite, kindOf, type AuthorizedWrite } from '../policy/authorize.js';
import { isWithin } from '../policy/containment.js';
import { movedLinkAllowed } from '../policy/link-target.js';
import { notFoundError } from '../policy/near-paths.js';
import { checkExpectedHash } from '../policy/occ.js';
import { parentOf } from '../policy/resolve-path.js';
import { authorizeTreeEntries } from '../policy/tree-authorize.js';
import type { ToolContext } from './context.js';
import { checkReplacedDestination } from './destination-checks.js';
import type { MutationStep } from './pipeline.js';
import { insideRoots, MutationScope, parentMissing } from './scope.js';
import { historyVisible } from './history-visible.js';

/** The arguments of move_path the steps read. */
export interface MoveArgs {
  source: string;
  destination: string;
  overwrite: boolean;
  expected_hash?: string;
  expected_source_hash?: string;
  dry_run: boolean;
}

/** What a move decided. */
export interface MoveResult {
  type: ReturnType<typeof kindOf>;
  overwritten: boolean;
  contentHash: string | null;
  previousDestinationHash: string | null;
}

/** A path held inside the lock: its verified parent and its name. */
interface Held {
  dir: VerifiedDir;
  name: string;
}

const MISSING_PARENT = 'Call create_directory for the parent first.';

/**
 * Authorizes a move before the lock. docs/errors.md "Order of checks" orders the checks across the whole call: both
 * paths pass containment, secrets and policy (steps 5–6) before the source's existence is checked (step 7), so a
 * missing source never hides a refused destination; then step 7 on what authorization saw (refusals only; every one
 * is decided again inside the lock).
 * @throws ToolError NOT_ALLOWED, SECRET_DENIED, FILE_POLICY_DENIED, NOT_FOUND (details.near; parent_missing),
 *   VALIDATION (same_path, destination_inside_source, destination_exists, destination_is_directory)
 */
export async function authorizeMove(
  ctx: ToolContext,
  args: MoveArgs,
): Promise<{ source: AuthorizedWrite; destination: AuthorizedWrite }> {
  await assertWritesAllowed(
    [
      { requested: args.source, followFinal: false, field: 'source' },
      { requested: args.destination, followFinal: false, field: 'destination' },
    ],
    ctx.policy,
  );
  const source = await authorizeWrite(args.source, ctx.policy, {
    kind: 'any',
    mustExist: false,
    followFinal: false,
    field: 'source',
  });
  const destination = await authorizeWrite(args.destination, ctx.policy, {
    kind: 'any',
    mustExist: false,
    followFinal: false,
    field: 'destination',
  });
  if (!source.stats) throw await notFoundError(source, ctx.policy); // details.near
  if (source.real === destination.real) {
    throw new ToolError('VALIDATION', 'source and destination are the same path.', {
      path: source.absolute,
      details: { reason: 'same_path' },
    });
  }
  assertMovable(
    source.stats,
    destination.stats,
    args.overwrite,
    source,
    destination,
    destination.stats && !args.overwrite ? await destinationHash(ctx, destination) : null,
  );
  if (!(await isDirectory(parentOf(destination.real)))) throw parentMissing(destination.absolute, MISSING_PARENT);
  return { source, destination };
}

/**
 * The source file's hash (and its bytes for the undo history, up to --max-edit-bytes; a larger file's move is not
 * recorded), checked against expected_source_hash when given.
 * @throws ToolError OCC_MISMATCH (field expected_source_hash)
 */
async function readMovedFile(
  ctx: ToolContext,
  scope: MutationScope,
  source: AuthorizedWrite,
  args: MoveArgs,
): Promise<{ hash: string | null; bytes: Buffer | null }> {
  const current = await scope.current(source.real, {
    wantBytes: !args.dry_run,
    maxBytes: ctx.config.limits.maxEditBytes,
    hashOnlyWhenLarge: true,
  });
  if (args.expected_source_hash !== undefined) {
    checkExpectedHash({
      absolute: source.absolute,
      real: source.real,
      current: { hash: current.hash },
      expected: args.expected_source_hash,
      autoOcc: 'off',
      memory: ctx.hashes,
      field: 'expected_source_hash',
    });
  }
  return { hash: current.hash, bytes: current.bytes };
}

/** What a move's inspect step found inside the lock: both verified parents and names, and the lstat of each now. */
export interface MoveInspected {
  src: Held;
  dst: Held;
  srcNow: Stats;
  dstNow: Stats | null;
}

/**
 * The inspect step of a move, inside the lock (docs/errors.md "Order of checks" step 7), on the current state of both
 * paths: nothing seen during authorization is trusted.
 * @throws ToolError NOT_FOUND (parent_missing too), VALIDATION as `assertMovable`
 */
export async function inspectMove(
  scope: MutationScope,
  source: AuthorizedWrite,
  destination: AuthorizedWrite,
  args: MoveArgs,
): Promise<MoveInspected> {
  const src = scope.existingParent(source.real, source.absolute);
  const dst = scope.existingParent(destination.real, destination.absolute, MISSING_PARENT);
  const srcNow = src.dir.lstat(src.name);
  if (!srcNow) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: source.absolute });
  const dstNow = dst.dir.lstat(dst.name);
  const dstHash =
    dstNow?.isFile() && !args.overwrite
      ? (await readCurrentIn(dst.dir, dst.name, { wantBytes: false, maxBytes: 0 })).hash
      : null;
  assertMovable(srcNow, dstNow, args.overwrite, source, destination, dstHash);
  return { src, dst, srcNow, dstNow };
}

/**
 * The decide step of a move, on what `inspectMove` found.
 * @throws ToolError OCC_MISMATCH / HASH_REQUIRED (source or destination), NOT_ALLOWED (link_target_outside,
 *   changed_during_call), FILE_POLICY_DENIED / SECRET_DENIED (an entry of a tree), VALIDATION too_many_entries
 */
export async function decideMove(
  ctx: ToolContext,
  scope: MutationScope,
  source: AuthorizedWrite,
  destination: AuthorizedWrite,
  args: MoveArgs,
  { src, dst, srcNow, dstNow }: MoveInspected,
): Promise<MutationStep<MoveResult>> {
  const moved = srcNow.isFile() ? await readMovedFile(ctx, scope, source, args) : { hash: null, bytes: null };
  const contentHash = moved.hash;
  // The destination as it is now: a file being replaced is a mutation under OCC (docs/errors.md "Optimistic concurrency").
  const { file: dstFile, identity: expectDestination } = await checkReplacedDestination(
    ctx,
    scope,
    destination,
    dstNow,
    args.expected_hash,
  );
  // A link keeps its target string: a relative one means something else at its new place (`a/b/l -> ../../x`
  // moved to `l` would climb out of the roots), so it must still point inside there (as a tree's links).
  if (srcNow.isSymbolicLink()) {
    const target = src.dir.readlink(src.name);
    if (!(await movedLinkAllowed(ctx.policy.roots, destination.real, target))) throw linkOutside(source.real);
  }
  // A directory: every entry it carries is authorized as a move of it, at its old and its new place, on the
  // directory as held (its verified descriptor), before anything moves.
  const inspected = srcNow.isDirectory() ? await authorizeTreeMove(ctx, source, destination, src, srcNow) : null;
  const history = srcNow.isDirectory()
    ? args.dry_run
      ? undefined
      : await directoryMoveHistory(ctx, source.real, destination.real, src, srcNow)
    : moveHistory(source.real, destination.real, src, dst, srcNow, dstNow, moved.bytes, dstFile);
  return {
    history,
    result: {
      type: kindOf(srcNow),
      overwritten: dstNow !== null,
      contentHash,
      previousDestinationHash: dstFile?.hash ?? null,
    },
    done: `moved ${source.real} to ${destination.real}`,
    effect: async () => {
      await moveEntry(src.dir, src.name, dst.dir, dst.name, { source: srcNow, destination: expectDestination });
      if (inspected) await assertMovedAsInspected(src, dst, srcNow, inspected, source.real, destination.real);
    },
    remember: () => {
      if (srcNow.isDirectory()) ctx.hashes.forgetUnder(source.real);
      ctx.hashes.forget(source.real);
      ctx.hashes.forget(destination.real);
      if (contentHash) ctx.hashes.remember(destination.real, contentHash);
    },
  };
}

/**
 * The undo record of a move of a file or a link: the source goes from what it was to nothing, the
 * destination from nothing (or the file it replaced) to what was moved (a directory: `directoryMoveHistory`). Not
 * recorded (undefined): a file whose bytes were not loaded (larger than --max-edit-bytes, or a replaced destination
 * over 256 KiB).
 */
function moveHistory(
  sourceReal: string,
  destinationReal: string,
  src: Held,
  dst: Held,
  srcNow: Stats,
  dstNow: Stats | null,
  sourceBytes: Buffer | null,
  dstFile: CurrentFile | null,
): { tool: string; files: HistoryFile[] } | undefined {
  let before: PathState;
  let after: { kind: 'file'; hash: string } | { kind: 'symlink'; target: string };
  if (srcNow.isFile() && sourceBytes) {
    before = { kind: 'file', bytes: sourceBytes, mode: srcNow.mode };
    after = { kind: 'file', hash: hashBytes(sourceBytes) };
  } else if (srcNow.isSymbolicLink()) {
    const target = src.dir.readlink(src.name);
    before = { kind: 'symlink', target };
    after = { kind: 'symlink', target };
  } else return undefined;
  let replaced: PathState = { kind: 'absent' };
  if (dstNow?.isFile() && dstFile?.bytes) replaced = { kind: 'file', bytes: dstFile.bytes, mode: dstNow.mode };
  else if (dstNow?.isSymbolicLink()) replaced = { kind: 'symlink', target: dst.dir.readlink(dst.name) };
  else if (dstNow) return undefined;
  return {
    tool: 'move_path',
    files: [historyEntryOf(sourceReal, before, { kind: 'absent' }), historyEntryOf(destinationReal, replaced, after)],
  };
}

/** Most entries of a moved directory the undo history records (a larger move is not recorded, counted skipped). */
const MAX_RECORDED_MOVE_ENTRIES = 100_000;

/**
 * The undo record of a directory move (a tree operation is one change): the tree at its old place goes from
 * what it holds (every file's bytes and mode, directories' modes, links' targets) to nothing, and at its new place
 * from nothing to the same entries (files by hash). revert_changes thus checks every moved entry (hash or kind) and
 * that nothing took the old place, then puts the tree back. Over --history-max-bytes: not recorded (`tooLarge`); a
 * tree holding a special file or an entry the listing would hide (`historyVisible`): not recorded (undefined).
 * @throws ToolError NOT_ALLOWED changed_during_call (the tree changed while it was read); errno errors
 */
async function directoryMoveHistory(
  ctx: ToolContext,
  sourceReal: string,
  destinationReal: string,
  src: Held,
  srcNow: Stats,
): Promise<{ tool: string; files: HistoryFile[]; tooLarge?: boolean } | undefined> {
  const top = src.dir.openDir(src.name);
  let snapshot: TreeSnapshot;
  try {
    if (!sameNode(top.identity, srcNow)) throw changedError(src.dir.pathOf(src.name));
    snapshot = await snapshotTree(top, {
      wantBytes: true,
      maxBytes: ctx.config.limits.historyMaxBytes,
      maxEntries: MAX_RECORDED_MOVE_ENTRIES,
      // Both places of every entry must be listable (a moved .env is not recorded: its bytes stay out of the history).
      recordable: (absolute) =>
        historyVisible(ctx, absolute) &&
        historyVisible(
          ctx,
          // The same entry at its new place: the walk spells it as the top's path + `/` + names.
          absolute.startsWith(`${sourceReal}/`)
            ? `${destinationReal}${absolute.slice(sourceReal.length)}`
            : path.join(destinationReal, path.relative(sourceReal, absolute)),
        ),
    });
  } finally {
    top.close();
  }
  if ('tooLarge' in snapshot) return { tool: 'move_path', files: [], tooLarge: true };
  if ('unrecordable' in snapshot) return undefined; // a special file or an entry the listing would hide
  return {
    tool: 'move_path',
    files: [
      ...historyEntriesOfTree(sourceReal, srcNow.mode, snapshot.entries, 'removed'),
      ...historyEntriesOfTree(destinationReal, srcNow.mode, snapshot.entries, 'created'),
    ],
  };
}

/**
 * The content hash of an existing destination file, read through its verified parent (null for a directory, a link,
 * or when it vanished meanwhile). Used only to fill destination_exists' current_hash.
 */
async function destinationHash(ctx: ToolContext, destination: AuthorizedWrite): Promise<string | null> {
  if (!destination.stats?.isFile()) return null;
  const scope = new MutationScope(insideRoots(ctx));
  try {
    return (await scope.current(destination.real, { wantBytes: false, maxBytes: 0 })).hash;
  } finally {
    scope.close();
  }
}

/**
 * The refusals of docs/tools.md for a move, on the given facts (authorization's, then again the current ones inside the
 * lock): a missing source, a directory into itself, an existing destination without overwrite, a directory
 * destination.
 * @throws ToolError NOT_FOUND, VALIDATION (destination_inside_source, destination_exists, destination_is_directory)
 */
function assertMovable(
  src: Stats | null,
  dst: Stats | null,
  overwrite: boolean,
  source: { real: string; absolute: string },
  destination: { real: string; absolute: string },
  dstHash: string | null,
): void {
  if (!src) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: source.absolute });
  if (src.isDirectory() && isWithin(source.real, destination.real)) {
    throw new ToolError('VALIDATION', 'A directory cannot be moved inside itself.', {
      path: destination.absolute,
      details: { reason: 'destination_inside_source' },
    });
  }
  if (dst && !overwrite) {
    throw new ToolError('VALIDATION', `${destination.absolute} already exists; nothing was moved.`, {
      // current_hash: the destination's content hash (null for a directory or link), so overwrite: true with
      // expected_hash can follow without a read.
      path: destination.absolute,
      details: { reason: 'destination_exists', current_hash: dst.isFile() ? dstHash : null },
      suggestion:
        "Pass overwrite: true (with the destination's expected_hash) to replace it, or choose another destination.",
    });
  }
  if (dst && dst.isDirectory()) {
    throw new ToolError('VALIDATION', `${destination.absolute} is a directory; only a file can be overwritten.`, {
      path: destination.absolute,
      details: { reason: 'destination_is_directory' },
    });
  }
}

/** A link that would point outside the roots at its new place (its target is never echoed: it may be outside). */
function linkOutside(link: string): ToolError {
  return new ToolError(
    'NOT_ALLOWED',
    `The link ${link} would point outside the roots where it is moved; nothing was moved.`,
    {
      path: link,
      details: { reason: 'link_target_outside' },
      suggestion: 'Move it where its relative target stays inside, or replace the link first.',
    },
  );
}

/** Most entries a directory move inspects before refusing (as a recursive delete). */
const MAX_MOVED_ENTRIES = 100_000;

/**
 * Authorizes moving the directory `src` (which must still be the node `srcNow`) as a move of every entry it holds,
 * at its old and its new place (src/policy/tree-authorize.ts), walking the directory through its verified descriptor
 * (src/fs/tree-ops.ts `inspectTree`): a tree that cannot be read completely, holds more than MAX_MOVED_ENTRIES
 * entries or changes under the walk is refused. A link with a relative target must still point inside the roots
 * from its new place (src/policy/link-target.ts: `a/b/l -> ../../x` moved one level up would climb out).
 * @returns what was inspected, for `assertMovedAsInspected`
 * @throws ToolError FILE_POLICY_DENIED / SECRET_DENIED (an entry may not be moved), NOT_ALLOWED (changed_during_call,
 *   link_target_outside), VALIDATION too_many_entries; errno errors (EACCES: FILE_POLICY_DENIED source os)
 */
async function authorizeTreeMove(
  ctx: ToolContext,
  source: AuthorizedWrite,
  destination: AuthorizedWrite,
  src: Held,
  srcNow: Stats,
): Promise<InspectedTree> {
  const judge = authorizeTreeEntries(ctx.policy, 'move', source, destination);
  const links: Array<{ relative: string; target: string }> = [];
  const top = src.dir.openDir(src.name);
  let inspected: InspectedTree;
  try {
    if (!sameNode(top.identity, srcNow)) throw changedError(src.dir.pathOf(src.name));
    inspected = await inspectTree(
      top,
      (e, dir) => {
        if (!judge.entry({ relative: e.relative, isDirectory: e.stats.isDirectory() })) return false;
        if (e.stats.isSymbolicLink()) links.push({ relative: e.relative, target: dir.readlink(e.name) });
        return true;
      },
      MAX_MOVED_ENTRIES,
      ctx.signal,
    );
  } finally {
    top.close();
  }
  judge.assertAllowed();
  for (const link of links) {
    const at = `${destination.real}/${link.relative}`;
    if (!(await movedLinkAllowed(ctx.policy.roots, at, link.target)))
      throw linkOutside(`${source.real}/${link.relative}`);
  }
  return inspected;
}

/**
 * Right after the rename: the moved directory must hold nothing its inspection did not see (an entry another call or
 * process added between the walk and the rename was never authorized at the new place). Otherwise the move is undone
 * (renamed back: the old name is still ours, under the path lock) and refused.
 * @throws ToolError NOT_ALLOWED changed_during_call (moved back; nothing changed), or the same with
 *   details.mutation_applied when it could not be moved back
 */
async function assertMovedAsInspected(
  src: Held,
  dst: Held,
  srcNow: Stats,
  inspected: InspectedTree,
  sourceReal: string,
  destinationReal: string,
): Promise<void> {
  let same = false;
  try {
    const moved = dst.dir.openDir(dst.name);
    try {
      if (sameNode(moved.identity, srcNow))
        same = holdsOnlyInspected(inspected, await inspectTree(moved, () => undefined, MAX_MOVED_ENTRIES));
    } finally {
      moved.close();
    }
  } catch {
    same = false; // not proven: undone like a change
  }
  if (same) return;
  try {
    await moveEntry(dst.dir, dst.name, src.dir, src.name, { source: srcNow, destination: null });
  } catch (error) {
    throw afterEffect(
      error,
      `moved ${sourceReal} to ${destinationReal}; the tree changed during the move and could not be moved back`,
    );
  }
  throw new ToolError(
    'NOT_ALLOWED',
    `${sourceReal} changed during the move (an entry appeared in it); it was moved back, nothing was moved.`,
    { path: sourceReal, details: { reason: 'changed_during_call' } },
  );
}

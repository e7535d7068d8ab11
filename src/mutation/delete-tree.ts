/**
 * The inspect and decide steps of delete_path (src/tools/delete-path.ts declares the tool), inside the path lock, on what is there
 * now — its kind, its hash, its whole tree (never the stats of authorization) — for each kind: a file (a mutation
 * under OCC), a link or other non-directory (the entry itself, never its target), a directory (empty, or with
 * `recursive` every entry judged as a delete of it: src/policy/tree-authorize.ts), and the undo record of each.
 */
import type { Stats } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import { historyEntriesOfTree, historyEntryOf, historyFileOf } from '../fs/history.js';
import {
  directoryNotEmpty,
  inspectTree,
  removeEmptyDir,
  removeEntry,
  removeTree,
  snapshotTree,
  type InspectedTree,
  type TreeSnapshot,
} from '../fs/tree-ops.js';
import { sameNode, type VerifiedDir } from '../fs/verified-dir.js';
import { kindOf, type AuthorizedWrite } from '../policy/authorize.js';
import { checkExpectedHash } from '../policy/occ.js';
import { authorizeTreeEntries } from '../policy/tree-authorize.js';
import type { ToolContext } from './context.js';
import type { MutationStep } from './pipeline.js';
import type { MutationScope } from './scope.js';
import { historyVisible } from './history-visible.js';

/** Most entries a recursive delete inspects before refusing. */
const MAX_RECURSIVE_ENTRIES = 100_000;

/** The arguments of delete_path a decision reads. */
export interface DeleteArgs {
  recursive: boolean;
  expected_hash?: string;
  dry_run: boolean;
}

/** What a delete decided: the kind deleted, a file's hash before, the entries beneath a directory. */
export interface DeleteResult {
  type: ReturnType<typeof kindOf>;
  previousHash: string | null;
  entries: number;
}

/** The entry being deleted, as held inside the lock: its verified parent, its name and its lstat now. */
export interface Held {
  dir: VerifiedDir;
  name: string;
  stats: Stats;
}

/**
 * The inspect step of a delete, inside the lock (docs/errors.md "Order of checks" step 7): the entry as it is now.
 * @throws ToolError NOT_FOUND (parent_missing too)
 */
export function inspectDelete(scope: MutationScope, target: AuthorizedWrite): Held {
  const { dir, name } = scope.existingParent(target.real, target.absolute);
  const stats = dir.lstat(name);
  if (!stats) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: target.absolute });
  return { dir, name, stats };
}

/**
 * The decide step of a delete, on what `inspectDelete` found (see the module comment).
 * @throws ToolError HASH_REQUIRED / OCC_MISMATCH (a file), VALIDATION not_empty, NOT_ALLOWED changed_during_call,
 *   FILE_POLICY_DENIED / SECRET_DENIED (an entry of the tree), VALIDATION too_many_entries
 */
export async function decideDelete(
  ctx: ToolContext,
  scope: MutationScope,
  target: AuthorizedWrite,
  args: DeleteArgs,
  held: Held,
): Promise<MutationStep<DeleteResult>> {
  if (held.stats.isFile()) return await decideFileDelete(ctx, scope, target, held, args);
  if (!held.stats.isDirectory()) return decideEntryDelete(ctx, target, held);
  return await decideDirectoryDelete(ctx, target, held, args);
}

/** A file: OCC on its current hash; recorded with its bytes (up to --max-edit-bytes; a larger one is not recorded). */
async function decideFileDelete(
  ctx: ToolContext,
  scope: MutationScope,
  target: AuthorizedWrite,
  { dir, name, stats }: Held,
  args: DeleteArgs,
): Promise<MutationStep<DeleteResult>> {
  const current = await scope.current(target.real, {
    wantBytes: true,
    maxBytes: ctx.config.limits.maxEditBytes,
    hashOnlyWhenLarge: true,
  });
  checkExpectedHash({
    absolute: target.absolute,
    real: target.real,
    current: { hash: current.hash, bytes: current.bytes ?? undefined },
    expected: args.expected_hash,
    autoOcc: ctx.config.autoOcc,
    memory: ctx.hashes,
  });
  const node = current.stats ?? stats;
  return {
    result: { type: kindOf(stats), previousHash: current.hash, entries: 0 },
    done: `deleted ${target.real}`,
    remember: () => ctx.hashes.forget(target.real),
    effect: () => removeEntry(dir, name, node),
    history: current.bytes
      ? { tool: 'delete_path', files: [historyFileOf(target.real, current.bytes, node.mode, null)] }
      : undefined,
  };
}

/** A link (the link itself) or another non-directory. A link is recorded with its target; other kinds are not. */
function decideEntryDelete(
  ctx: ToolContext,
  target: AuthorizedWrite,
  { dir, name, stats }: Held,
): MutationStep<DeleteResult> {
  const linkTarget = stats.isSymbolicLink() ? dir.readlink(name) : null;
  return {
    result: { type: kindOf(stats), previousHash: null, entries: 0 },
    done: `deleted ${target.real}`,
    remember: () => ctx.hashes.forget(target.real),
    effect: () => removeEntry(dir, name, stats),
    history:
      linkTarget !== null
        ? {
            tool: 'delete_path',
            files: [historyEntryOf(target.real, { kind: 'symlink', target: linkTarget }, { kind: 'absent' })],
          }
        : undefined,
  };
}

/**
 * A directory: empty, or (recursive) the whole tree, at any depth, through descriptors — every entry judged as a
 * delete of it (src/policy/tree-authorize.ts), one refused entry refuses the whole delete, and a tree that cannot be
 * read completely is refused (docs/security.md, "Whole-tree operations").
 */
async function decideDirectoryDelete(
  ctx: ToolContext,
  target: AuthorizedWrite,
  { dir, name, stats }: Held,
  args: DeleteArgs,
): Promise<MutationStep<DeleteResult>> {
  const top = dir.openDir(name);
  let inspected: InspectedTree | null = null;
  let snapshot: TreeSnapshot | null = null;
  try {
    if (!sameNode(top.identity, stats))
      throw new ToolError('NOT_ALLOWED', `${target.absolute} changed during the call.`, {
        path: target.absolute,
        details: { reason: 'changed_during_call' },
      });
    if (args.recursive) {
      const judge = authorizeTreeEntries(ctx.policy, 'delete', target, null);
      inspected = await inspectTree(
        top,
        (e) => judge.entry({ relative: e.relative, isDirectory: e.stats.isDirectory() }),
        MAX_RECURSIVE_ENTRIES,
        ctx.signal,
      );
      judge.assertAllowed();
    } else if ((await top.readdir()).length > 0) {
      throw directoryNotEmpty(target.absolute);
    }
    // The undo record of a tree: every file's bytes and mode, every directory's mode, every link's target, read now
    // through the same descriptors.
    if (inspected && inspected.entries > 0 && !args.dry_run) {
      snapshot = await snapshotTree(top, {
        wantBytes: true,
        maxBytes: ctx.config.limits.historyMaxBytes,
        maxEntries: MAX_RECURSIVE_ENTRIES,
        recordable: (absolute) => historyVisible(ctx, absolute),
      });
    }
  } finally {
    top.close();
  }
  const tree = inspected;
  return {
    result: { type: kindOf(stats), previousHash: null, entries: tree?.entries ?? 0 },
    done: `deleted ${target.real}`,
    remember: () => ctx.hashes.forgetUnder(target.real),
    history: deletedTreeHistory(target.real, stats, snapshot),
    effect: async () => {
      if (tree) await removeTree(dir, name, tree);
      else await removeEmptyDir(dir, name, stats);
    },
  };
}

/**
 * The undo record of a deleted directory: the top alone (empty, or nothing snapshotted), every entry of the snapshot,
 * or — over --history-max-bytes — not recorded (`tooLarge`: the listing counts it as skipped); a tree holding a
 * special file or an entry the listing would hide is not recorded (undefined).
 */
function deletedTreeHistory(
  real: string,
  stats: Stats,
  snapshot: TreeSnapshot | null,
): MutationStep<DeleteResult>['history'] {
  if (!snapshot) return { tool: 'delete_path', files: historyEntriesOfTree(real, stats.mode, [], 'removed') };
  if ('entries' in snapshot)
    return { tool: 'delete_path', files: historyEntriesOfTree(real, stats.mode, snapshot.entries, 'removed') };
  if ('tooLarge' in snapshot) return { tool: 'delete_path', files: [], tooLarge: true };
  return undefined;
}

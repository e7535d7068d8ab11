/**
 * delete_path (docs/tools.md): delete a file, a symlink (the link, never its target) or a directory (non-empty only
 * with recursive). Deleting a file is a mutation under OCC. A recursive delete is refused as a whole when any entry
 * of the tree could not be deleted on its own (a secret, a .git directory, an entry the file policy or a built-in
 * guard protects: src/policy/tree-authorize.ts).
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
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
import { sameNode } from '../fs/verified-dir.js';
import { historyEntriesOfTree, historyEntryOf, historyFileOf } from '../fs/history.js';
import { authorizeWrite, kindOf } from '../policy/authorize.js';
import { authorizeTreeEntries } from '../policy/tree-authorize.js';
import { checkExpectedHash } from '../policy/occ.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { quoteName } from './text-safe.js';
import { historyVisible } from '../mutation/history-visible.js';
import { heavyClasses } from './heavy-calls.js';

/** Most entries a recursive delete inspects before refusing. */
const MAX_RECURSIVE_ENTRIES = 100_000;

export const DeletePathInput = z.strictObject({
  path: PathArg,
  recursive: z.boolean().default(false).describe('Needed for a non-empty directory'),
  expected_hash: ExpectedHash.optional().describe("A file's content_hash"),
  expected_status_hash: ExpectedStatusHash.optional(),
  dry_run: DryRun,
});

export const DeletePathOutput = z.object({
  path: z.string(),
  type: KindSchema,
  dry_run: z.boolean(),
  entries: z.number().int().describe('Entries removed beneath a directory (0 for a file or link)'),
  previous_hash: ContentHash.nullable().describe('Hash of a deleted file'),
  status_hash: z.string().optional(),
});

export const deletePath = defineTool({
  name: 'delete_path',
  title: 'Delete path',
  description:
    'Delete a file, symlink or directory. A non-empty directory needs recursive: true and fails whole if it ' +
    'holds a secret, .git or protected entry. A file needs its hash like write_file.',
  group: 'fs-write',
  input: DeletePathInput,
  output: DeletePathOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  heavy: (a) => heavyClasses(a.recursive && 'walk', a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    const target = await authorizeWrite(args.path, ctx.policy, { kind: 'any', mustExist: true, followFinal: false });
    const { result, statusHash } = await runMutation(ctx, {
      lockPaths: [target.real],
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [target.real],
      dryRun: args.dry_run,
      // Inside the lock, on what is there now: its kind, its hash, its whole tree (never the stats of authorization).
      decide: async (scope) => {
        const { dir, name } = scope.existingParent(target.real, target.absolute);
        const stats = dir.lstat(name);
        if (!stats) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: target.absolute });
        const type = kindOf(stats);
        const forget = () =>
          stats.isDirectory() ? ctx.hashes.forgetUnder(target.real) : ctx.hashes.forget(target.real);
        if (stats.isFile()) {
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
            result: { type, previousHash: current.hash, entries: 0 },
            done: `deleted ${target.real}`,
            remember: forget,
            effect: () => removeEntry(dir, name, node),
            history: current.bytes
              ? { tool: 'delete_path', files: [historyFileOf(target.real, current.bytes, node.mode, null)] }
              : undefined,
          };
        }
        if (!stats.isDirectory()) {
          // A link is recorded with its target (revert_changes recreates it); other kinds are not.
          const linkTarget = stats.isSymbolicLink() ? dir.readlink(name) : null;
          return {
            result: { type, previousHash: null, entries: 0 },
            done: `deleted ${target.real}`,
            remember: forget,
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
            // The whole tree, at any depth, through descriptors: every entry is judged as a delete of it
            // (src/policy/tree-authorize.ts), one refused entry refuses the whole delete, and a tree that cannot be
            // read completely is refused (docs/security.md, "Whole-tree operations").
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
          // The undo record of a tree: every file's bytes and mode, every directory's mode, every link's
          // target, read now through the same descriptors; over --history-max-bytes it is not recorded (the listing
          // counts it as skipped).
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
          result: { type, previousHash: null, entries: tree?.entries ?? 0 },
          done: `deleted ${target.real}`,
          remember: forget,
          history: !snapshot
            ? {
                tool: 'delete_path',
                files: historyEntriesOfTree(target.real, stats.mode, [], 'removed'),
              }
            : 'entries' in snapshot
              ? {
                  tool: 'delete_path',
                  files: historyEntriesOfTree(target.real, stats.mode, snapshot.entries, 'removed'),
                }
              : 'tooLarge' in snapshot
                ? { tool: 'delete_path', files: [], tooLarge: true }
                : undefined, // a special file or an entry the listing would hide: not recorded
          effect: async () => {
            if (tree) await removeTree(dir, name, tree);
            else await removeEmptyDir(dir, name, stats);
          },
        };
      },
    });
    const type = result.type;
    return {
      structured: {
        path: target.real,
        type,
        dry_run: args.dry_run,
        entries: result.entries,
        previous_hash: result.previousHash,
        ...(statusHash ? { status_hash: statusHash } : {}),
      },
      text: `${args.dry_run ? 'Would delete' : 'Deleted'} ${type} ${quoteName(target.real)}${result.entries ? ` and ${result.entries} entries inside` : ''}`,
      audit: { paths: [target.real], hash_before: result.previousHash, hash_after: null },
    };
  },
});

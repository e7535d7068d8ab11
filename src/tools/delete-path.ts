/**
 * delete_path (docs/tools.md): delete a file, a symlink (the link, never its target) or a directory (non-empty only
 * with recursive). Deleting a file is a mutation under OCC. A recursive delete is refused as a whole when any entry
 * of the tree could not be deleted on its own (a secret, a .git directory, an entry the file policy or a built-in
 * guard protects: src/policy/tree-authorize.ts). The decide step for each kind is src/mutation/delete-tree.ts.
 */
import { z } from 'zod';
import { decideDelete, inspectDelete } from '../mutation/delete-tree.js';
import { authorizeWrite } from '../policy/authorize.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { quoteName } from './text-safe.js';
import { heavyClasses } from './heavy-calls.js';

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
      inspect: (scope) => inspectDelete(scope, target),
      decide: (scope, found) => decideDelete(ctx, scope, target, args, found),
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

/**
 * move_path (docs/tools.md): rename or move a file, link or directory inside the roots. Never overwrites unless
 * `overwrite: true`; then the destination file is a mutation under OCC (`expected_hash` is the destination's).
 * Moving a symlink moves the link, not its target. Moving a directory moves every entry it holds: each is authorized
 * at its old and new place (docs/security.md, "Whole-tree operations"). The steps are src/mutation/move-tree.ts.
 */
import { z } from 'zod';
import { authorizeMove, decideMove, inspectMove } from '../mutation/move-tree.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { quoteName } from './text-safe.js';
import { heavyClasses } from './heavy-calls.js';

export const MovePathInput = z.strictObject({
  source: PathArg.describe('From'),
  destination: PathArg.describe('New path; its parent must exist'),
  overwrite: z.boolean().default(false).describe('Replace an existing destination file'),
  expected_hash: ExpectedHash.optional().describe('The destination\'s content_hash when overwriting, or "absent"'),
  expected_source_hash: ContentHash.optional().describe("The source file's content_hash"),
  expected_status_hash: ExpectedStatusHash.optional(),
  dry_run: DryRun,
});

export const MovePathOutput = z.object({
  source: z.string(),
  destination: z.string(),
  type: KindSchema,
  dry_run: z.boolean(),
  overwritten: z.boolean(),
  previous_destination_hash: ContentHash.nullable(),
  content_hash: ContentHash.nullable().describe('Hash of the moved file (null for directories and links)'),
  status_hash: z.string().optional(),
});

export const movePath = defineTool({
  name: 'move_path',
  title: 'Move path',
  description:
    'Move or rename a file, symlink or directory. An existing destination fails (VALIDATION ' +
    'destination_exists) unless overwrite: true, which needs its hash (expected_hash or an earlier read).',
  group: 'fs-write',
  input: MovePathInput,
  output: MovePathOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.source, a.destination],
  heavy: (a) => heavyClasses('walk', a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    // Both paths pass containment, secrets and policy before the source's existence (docs/errors.md "Order of checks").
    const { source, destination } = await authorizeMove(ctx, args);
    const { result, statusHash } = await runMutation(ctx, {
      lockPaths: [source.real, destination.real],
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [source.real, destination.real],
      dryRun: args.dry_run,
      // Inside the lock, on the current state of both paths: nothing seen during authorization is trusted.
      inspect: (scope) => inspectMove(scope, source, destination, args),
      decide: (scope, found) => decideMove(ctx, scope, source, destination, args, found),
    });
    const type = result.type;
    const dstStats = result.overwritten;
    return {
      structured: {
        source: source.real,
        destination: destination.real,
        type,
        dry_run: args.dry_run,
        overwritten: dstStats,
        previous_destination_hash: result.previousDestinationHash,
        content_hash: result.contentHash,
        ...(statusHash ? { status_hash: statusHash } : {}),
      },
      text:
        `${args.dry_run ? 'Would move' : 'Moved'} ${type} ${quoteName(source.real)} -> ${quoteName(destination.real)}${dstStats ? ' (overwrote the destination)' : ''}` +
        `${result.contentHash ? `; content_hash ${result.contentHash}` : ''}${statusHash ? `; status_hash ${statusHash}` : ''}`,
      audit: {
        paths: [source.real, destination.real],
        hash_before: result.previousDestinationHash,
        hash_after: result.contentHash,
      },
    };
  },
});

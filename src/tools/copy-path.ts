/**
 * copy_path: copy a file, a symlink (as a link, never its target) or a directory tree (`recursive: true`)
 * inside the roots. Never overwrites unless `overwrite: true`, and then only a file or link destination, under OCC
 * (`expected_hash` is the destination's, as for move_path; a link destination is replaced as the link itself, its
 * target never touched). Permission bits are kept; times and owners are not. The steps are src/mutation/copy-tree.ts
 * (what a copy will do, decided inside the path lock) and src/mutation/copy-write.ts (writing it).
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
import { z } from 'zod';
import { authorizeCopyCall, decideCopy, inspectCopy } from '../mutation/copy-tree.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { heavyClasses } from './heavy-calls.js';

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
    const { source, destination } = await authorizeCopyCall(ctx, args);
    const { result, statusHash } = await runMutation(ctx, {
      lockPaths: [source.real, destination.real],
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [destination.real],
      dryRun: args.dry_run,
      inspect: (scope) => inspectCopy(scope, { source, destination }, args),
      decide: (scope, found) => decideCopy(ctx, scope, { source, destination }, args, found),
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

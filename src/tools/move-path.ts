/**
 * move_path (SPEC §6, §6.2): rename or move a file, link or directory inside the roots. Never overwrites unless
 * `overwrite: true`; then the destination file is a mutation under OCC (`expected_hash` is the destination's).
 * Moving a symlink moves the link, not its target.
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { withPathLock } from '../fs/path-lock.js';
import { isDirectory, readCurrent } from '../fs/read-current.js';
import { movePath as moveEntry } from '../fs/tree-ops.js';
import { assertWritesAllowed, authorizeWrite, kindOf } from '../policy/authorize.js';
import { isWithin } from '../policy/containment.js';
import { checkExpectedHash } from '../policy/occ.js';
import { parentOf } from '../policy/resolve-path.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { checkStaleGit, insideRoots, statusHashAfter } from './file-mutation.js';

export const MovePathInput = z.strictObject({
  source: PathArg.describe('From'),
  destination: PathArg.describe('New path; its parent must exist'),
  overwrite: z.boolean().default(false).describe('Replace an existing destination file'),
  expected_hash: ExpectedHash.optional()
    .describe('The destination\'s content_hash when overwriting, or "absent"'),
  expected_source_hash: ContentHash.optional().describe('The source file\'s content_hash'),
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
  description: 'Move or rename a file, symlink or directory. An existing destination fails (VALIDATION '
    + 'destination_exists) unless overwrite: true, which needs its hash (expected_hash or an earlier read).',
  group: 'fs-write',
  input: MovePathInput,
  output: MovePathOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.source, a.destination],
  async run(args, ctx) {
    // SPEC §3.3 orders the checks across the whole call: both paths pass containment, secrets and policy (steps 5–6)
    // before the source's existence is checked (step 7), so a missing source never hides a refused destination.
    await assertWritesAllowed([
      { requested: args.source, followFinal: false, field: 'source' },
      { requested: args.destination, followFinal: false, field: 'destination' },
    ], ctx.policy);
    const source = await authorizeWrite(args.source, ctx.policy, { kind: 'any', mustExist: false, followFinal: false, field: 'source' });
    const destination = await authorizeWrite(args.destination, ctx.policy, { kind: 'any', mustExist: false, followFinal: false, field: 'destination' });
    if (!source.stats) {
      throw new ToolError('NOT_FOUND', `No such file or directory: ${source.absolute}.`, { path: source.absolute });
    }
    const srcStats = source.stats;
    if (source.real === destination.real) {
      throw new ToolError('VALIDATION', 'source and destination are the same path.', {
        path: source.absolute, details: { reason: 'same_path' },
      });
    }
    if (srcStats.isDirectory() && isWithin(source.real, destination.real)) {
      throw new ToolError('VALIDATION', 'A directory cannot be moved inside itself.', {
        path: destination.absolute, details: { reason: 'destination_inside_source' },
      });
    }
    const dstStats = destination.stats;
    if (dstStats && !args.overwrite) {
      throw new ToolError('VALIDATION', `${destination.absolute} already exists; nothing was moved.`, {
        path: destination.absolute, details: { reason: 'destination_exists' },
        suggestion: 'Pass overwrite: true (with the destination\'s expected_hash) to replace it, or choose another destination.',
      });
    }
    if (dstStats && dstStats.isDirectory()) {
      throw new ToolError('VALIDATION', `${destination.absolute} is a directory; only a file can be overwritten.`, {
        path: destination.absolute, details: { reason: 'destination_is_directory' },
      });
    }
    if (!(await isDirectory(parentOf(destination.real)))) {
      throw new ToolError('NOT_FOUND', `The parent directory of ${destination.absolute} does not exist.`, {
        path: destination.absolute, details: { reason: 'parent_missing' },
        suggestion: 'Call create_directory for the parent first.',
      });
    }
    await checkStaleGit(ctx, source.real, args.expected_status_hash);
    const isInside = insideRoots(ctx);
    const result = await withPathLock([source.real, destination.real], ctx.config.stateDir, async () => {
      let contentHash: string | null = null;
      if (srcStats.isFile()) {
        const src = await readCurrent(source.real, isInside, { wantBytes: false, maxBytes: 0 });
        contentHash = src.hash;
        if (args.expected_source_hash !== undefined) {
          checkExpectedHash({
            absolute: source.absolute, real: source.real, current: { hash: src.hash }, expected: args.expected_source_hash,
            autoOcc: 'off', memory: ctx.hashes, field: 'expected_source_hash',
          });
        }
      }
      let previousDestinationHash: string | null = null;
      let expectedDestination = null;
      const dstNow = dstStats && dstStats.isFile()
        ? await readCurrent(destination.real, isInside, { wantBytes: true, maxBytes: 256 * 1024 })
          .catch(() => readCurrent(destination.real, isInside, { wantBytes: false, maxBytes: 0 }))
        : null;
      if (dstNow || args.expected_hash !== undefined) {
        checkExpectedHash({
          absolute: destination.absolute, real: destination.real,
          current: { hash: dstNow?.hash ?? null, bytes: dstNow?.bytes ?? undefined },
          expected: args.expected_hash, autoOcc: ctx.config.autoOcc, memory: ctx.hashes,
        });
        previousDestinationHash = dstNow?.hash ?? null;
        expectedDestination = dstNow?.stats ? identityOf(dstNow.stats) : null;
      }
      if (!args.dry_run) {
        await moveEntry(source.real, destination.real, { overwrite: args.overwrite, expectedDestination });
        if (srcStats.isDirectory()) ctx.hashes.forgetUnder(source.real);
        ctx.hashes.forget(source.real);
        ctx.hashes.forget(destination.real);
        if (contentHash) ctx.hashes.remember(destination.real, contentHash);
      }
      return { contentHash, previousDestinationHash };
    });
    const statusHash = args.dry_run ? undefined : await statusHashAfter(ctx, destination.real, args.expected_status_hash);
    const type = kindOf(srcStats);
    return {
      structured: {
        source: source.real, destination: destination.real, type, dry_run: args.dry_run,
        overwritten: Boolean(dstStats), previous_destination_hash: result.previousDestinationHash,
        content_hash: result.contentHash, ...(statusHash ? { status_hash: statusHash } : {}),
      },
      text: `${args.dry_run ? 'Would move' : 'Moved'} ${type} ${source.real} -> ${destination.real}${dstStats ? ' (overwrote the destination)' : ''}`
        + `${result.contentHash ? `; content_hash ${result.contentHash}` : ''}${statusHash ? `; status_hash ${statusHash}` : ''}`,
      audit: { paths: [source.real, destination.real], hash_before: result.previousDestinationHash, hash_after: result.contentHash },
    };
  },
});

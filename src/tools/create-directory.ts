/**
 * create_directory (SPEC §6, §6.2): create a directory and its missing parents; idempotent; never through a link
 * that leaves the roots (each created level is re-checked).
 */
import { z } from 'zod';
import { OccMismatchError } from '../errors/tool-error.js';
import { makeDirectories } from '../fs/atomic-write.js';
import { authorizeWrite } from '../policy/authorize.js';
import { DryRun, ExpectedStatusHash, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { checkStaleGit, insideRoots, statusHashAfter } from './file-mutation.js';

export const CreateDirectoryInput = z.strictObject({
  path: PathArg,
  expected_hash: z.literal('absent').optional().describe('"absent": fail if it exists'),
  expected_status_hash: ExpectedStatusHash.optional(),
  dry_run: DryRun,
});

export const CreateDirectoryOutput = z.object({
  path: z.string(),
  created: z.boolean().describe('False when it already existed (the call is idempotent)'),
  dry_run: z.boolean(),
  status_hash: z.string().optional(),
});

export const createDirectory = defineTool({
  name: 'create_directory',
  title: 'Create directory',
  description: 'Create a directory and missing parents (mkdir -p); created: false if it exists. Never under .git or '
    + 'through a link out of the roots; fails if a file is in the way (VALIDATION).',
  group: 'fs-write',
  input: CreateDirectoryInput,
  output: CreateDirectoryOutput,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  async run(args, ctx) {
    const target = await authorizeWrite(args.path, ctx.policy, { kind: 'directory', mustExist: false, followFinal: true });
    await checkStaleGit(ctx, target.real, args.expected_status_hash);
    if (target.stats && args.expected_hash === 'absent') {
      throw new OccMismatchError(`${target.absolute} already exists, but expected_hash was "absent".`, {
        path: target.absolute, expectedHash: 'absent', currentHash: null, conflict: { reason: 'created' },
      });
    }
    const created = args.dry_run ? !target.stats : await makeDirectories(target.real, insideRoots(ctx));
    const statusHash = args.dry_run ? undefined : await statusHashAfter(ctx, target.real, args.expected_status_hash);
    return {
      structured: { path: target.real, created, dry_run: args.dry_run, ...(statusHash ? { status_hash: statusHash } : {}) },
      text: `${created ? (args.dry_run ? 'Would create' : 'Created') : 'Already exists:'} ${target.real}`,
      audit: { paths: [target.real] },
    };
  },
});

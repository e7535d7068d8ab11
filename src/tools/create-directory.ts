/**
 * create_directory (docs/tools.md): create a directory and its missing parents; idempotent; never through a link
 * that leaves the roots (each created level is re-checked).
 */
import type { Stats } from 'node:fs';
import { z } from 'zod';
import { authorizeWrite } from '../policy/authorize.js';
import { DryRun, ExpectedStatusHash, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { decideDirectory, inspectDirectory } from '../mutation/create-directory.js';
import { quoteName } from './text-safe.js';
import { heavyClasses } from './heavy-calls.js';

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
  description:
    'Create a directory and missing parents (mkdir -p); created: false if it exists. Never under .git or ' +
    'through a link out of the roots; fails if a file is in the way (VALIDATION).',
  group: 'fs-write',
  input: CreateDirectoryInput,
  output: CreateDirectoryOutput,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  heavy: (a) => heavyClasses(a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    const target = await authorizeWrite(args.path, ctx.policy, {
      kind: 'directory',
      mustExist: false,
      followFinal: true,
    });
    const { result, statusHash } = await runMutation<{ created: boolean }, Stats | null>(ctx, {
      lockPaths: [target.real],
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [target.real],
      dryRun: args.dry_run,
      inspect: (scope) => inspectDirectory(scope, target),
      decide: (scope, now) => decideDirectory(scope, target, now, args.expected_hash),
    });
    const created = result.created;
    return {
      structured: {
        path: target.real,
        created,
        dry_run: args.dry_run,
        ...(statusHash ? { status_hash: statusHash } : {}),
      },
      text: `${created ? (args.dry_run ? 'Would create' : 'Created') : 'Already exists:'} ${quoteName(target.real)}`,
      audit: { paths: [target.real] },
    };
  },
});

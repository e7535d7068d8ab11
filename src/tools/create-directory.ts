/**
 * create_directory (docs/tools.md): create a directory and its missing parents; idempotent; never through a link
 * that leaves the roots (each created level is re-checked).
 */
import { z } from 'zod';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { openDirCreating } from '../fs/verified-dir.js';
import { authorizeWrite } from '../policy/authorize.js';
import { DryRun, ExpectedStatusHash, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { historyEntryOf, type HistoryFile } from '../fs/history.js';
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
    const { result, statusHash } = await runMutation(ctx, {
      lockPaths: [target.real],
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [target.real],
      dryRun: args.dry_run,
      decide: (scope) => {
        // What is there now (its parent may be missing too: created like mkdir -p).
        // A root (authorized as a directory) is there by definition; its parent lies outside and is never opened.
        const where = target.relative === '' ? null : scope.parent(target.real);
        const now = target.relative === '' ? target.stats : where ? where.dir.lstat(where.name) : null;
        if (now && !now.isDirectory()) {
          throw new ToolError('VALIDATION', `${target.absolute} exists and is not a directory.`, {
            path: target.absolute,
            details: { reason: 'not_a_directory' },
          });
        }
        if (now && args.expected_hash === 'absent') {
          throw new OccMismatchError(`${target.absolute} already exists, but expected_hash was "absent".`, {
            path: target.absolute,
            expectedHash: 'absent',
            currentHash: null,
            conflict: { reason: 'created' },
          });
        }
        const result = { created: !now };
        if (now) return { result, done: 'nothing' };
        // Every directory the call creates is recorded, filled in once the effect knows which they were.
        const history = { tool: 'create_directory', files: [] as HistoryFile[] };
        return {
          result,
          done: `created ${target.real}`,
          effect: () =>
            Promise.resolve().then(() => {
              const made = openDirCreating(target.real, scope.isInside);
              made.dir.close();
              result.created = made.created.length > 0;
              for (const d of made.created) {
                history.files.push(historyEntryOf(d, { kind: 'absent' }, { kind: 'directory' }));
              }
            }),
          history,
        };
      },
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

/**
 * delete_path (SPEC §6, §6.2): delete a file, a symlink (the link, never its target) or a directory (non-empty only
 * with recursive). Deleting a file is a mutation under OCC. A recursive delete is refused as a whole when the tree
 * holds a secret file, a .git directory, or an entry the file policy protects.
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { withPathLock } from '../fs/path-lock.js';
import { readCurrent } from '../fs/read-current.js';
import { countEntries, removePath } from '../fs/tree-ops.js';
import { walkTree } from '../fs/walk.js';
import { authorizeWrite, kindOf } from '../policy/authorize.js';
import { HOST_FLAVOR } from '../policy/containment.js';
import { accessFor } from '../policy/file-policy.js';
import { checkExpectedHash } from '../policy/occ.js';
import type { AllowedPath } from '../policy/resolve-path.js';
import { isSecretPath } from '../policy/secrets.js';
import { ContentHash, DryRun, ExpectedHash, ExpectedStatusHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { checkStaleGit, insideRoots, statusHashAfter } from './file-mutation.js';

/** Most entries a recursive delete inspects before refusing. */
const MAX_RECURSIVE_ENTRIES = 100_000;

export const DeletePathInput = z.strictObject({
  path: PathArg,
  recursive: z.boolean().default(false).describe('Needed for a non-empty directory'),
  expected_hash: ExpectedHash.optional().describe('A file\'s content_hash'),
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

/** Refuses a recursive delete of a tree holding protected entries. */
async function assertTreeDeletable(ctx: ToolContext, real: AllowedPath, rootReal: string): Promise<number> {
  let n = 0;
  for await (const e of walkTree({
    base: real, rootReal, maxDepth: 10_000, respectGitignore: false,
    filter: () => 'ok', signal: ctx.signal, nocase: HOST_FLAVOR.caseInsensitive,
  })) {
    if (++n > MAX_RECURSIVE_ENTRIES) {
      throw new ToolError('VALIDATION', `${real} holds more than ${MAX_RECURSIVE_ENTRIES} entries; refusing to delete it in one call.`, {
        path: real, details: { reason: 'too_many_entries', limit: MAX_RECURSIVE_ENTRIES },
      });
    }
    if (e.relative.split('/').pop()!.toLowerCase() === '.git') {
      throw new ToolError('FILE_POLICY_DENIED', `${e.absolute} is a .git directory; deleting it is never allowed.`, {
        path: e.absolute, details: { source: 'builtin', rule: 'git_dir' },
      });
    }
    if (!ctx.policy.allowSecrets && isSecretPath(e.absolute)) {
      throw new ToolError('SECRET_DENIED', `${e.absolute} is a secret file; the directory is not deleted.`, {
        path: e.absolute, details: { reason: 'secret_inside' },
      });
    }
    const access = accessFor(ctx.policy.policy, e.rootRelative);
    if (access) {
      throw new ToolError('FILE_POLICY_DENIED', `${e.absolute} is protected by the file policy (${access}); the directory is not deleted.`, {
        path: e.absolute, details: { source: 'policy', rule: access },
      });
    }
  }
  return n;
}

export const deletePath = defineTool({
  name: 'delete_path',
  title: 'Delete path',
  description: 'Delete a file, symlink or directory. A non-empty directory needs recursive: true and fails whole if it '
    + 'holds a secret, .git or protected entry. A file needs its hash like write_file.',
  group: 'fs-write',
  input: DeletePathInput,
  output: DeletePathOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  async run(args, ctx) {
    const target = await authorizeWrite(args.path, ctx.policy, { kind: 'any', mustExist: true, followFinal: false });
    const stats = target.stats!;
    await checkStaleGit(ctx, target.real, args.expected_status_hash);
    const isInside = insideRoots(ctx);
    const result = await withPathLock([target.real], ctx.config.stateDir, async () => {
      let previousHash: string | null = null;
      let entries = 0;
      if (stats.isFile()) {
        const current = await readCurrent(target.real, isInside, { wantBytes: true, maxBytes: 256 * 1024 })
          .catch(async () => readCurrent(target.real, isInside, { wantBytes: false, maxBytes: 0 }));
        checkExpectedHash({
          absolute: target.absolute, real: target.real, current: { hash: current.hash, bytes: current.bytes ?? undefined },
          expected: args.expected_hash, autoOcc: ctx.config.autoOcc, memory: ctx.hashes,
        });
        previousHash = current.hash;
      } else if (stats.isDirectory()) {
        if (args.recursive) entries = await assertTreeDeletable(ctx, target.real, target.root.real);
        else if ((await countEntries(target.real, 1)) > 0) {
          throw new ToolError('VALIDATION', `${target.absolute} is a directory that is not empty.`, {
            path: target.absolute, details: { reason: 'directory_not_empty' },
            suggestion: 'Pass recursive: true to delete it with everything inside.',
          });
        }
      }
      if (!args.dry_run) {
        await removePath(target.real, stats, args.recursive);
        if (stats.isDirectory()) ctx.hashes.forgetUnder(target.real);
        else ctx.hashes.forget(target.real);
      }
      return { previousHash, entries };
    });
    const statusHash = args.dry_run ? undefined : await statusHashAfter(ctx, target.real, args.expected_status_hash);
    const type = kindOf(stats);
    return {
      structured: {
        path: target.real, type, dry_run: args.dry_run, entries: result.entries, previous_hash: result.previousHash,
        ...(statusHash ? { status_hash: statusHash } : {}),
      },
      text: `${args.dry_run ? 'Would delete' : 'Deleted'} ${type} ${target.real}${result.entries ? ` and ${result.entries} entries inside` : ''}`,
      audit: { paths: [target.real], hash_before: result.previousHash, hash_after: null },
    };
  },
});

/**
 * stat (docs/tools.md): metadata of one path, following a symlink that stays inside the roots (and saying it was one).
 * A secret's metadata is shown with `secret: true` but without its content hash unless --allow-secrets.
 */
import path from 'node:path';
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { hashFileHandle } from '../fs/hash.js';
import { lstatVerified, withVerifiedDir } from '../fs/verified-dir.js';
import { openForRead } from '../fs/open-file.js';
import { authorizeRead, kindOf } from '../policy/authorize.js';
import { isInsideRoots } from '../policy/containment.js';
import { isSecretPath } from '../policy/secrets.js';
import { ContentHash, KindSchema, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { quoteName } from './text-safe.js';

export const StatInput = z.strictObject({
  path: PathArg,
  hash: z.boolean().default(true).describe('Default true'),
});

export const StatOutput = z.object({
  path: z.string().describe('Absolute resolved path'),
  type: KindSchema,
  size: z.number().int().describe('Bytes'),
  mtime: z.string().describe('ISO 8601'),
  mode: z.string().describe('Permission bits in octal, e.g. "0644"'),
  nlink: z.number().int(),
  symlink: z
    .object({ target: z.string().describe('The link text as stored') })
    .nullable()
    .describe('Set when the requested path is a symbolic link (the other fields describe its target)'),
  content_hash: ContentHash.nullable().describe('Files only; null for directories, special files and secrets'),
  secret: z.boolean().describe('Secret filename (docs/security.md): content tools refuse it without --allow-secrets'),
  policy: z.enum(['read_only', 'hidden', 'deny']).nullable().describe('File-policy access level, if any'),
});

export const stat = defineTool({
  name: 'stat',
  title: 'Stat path',
  description:
    "Metadata of a path: type, size, mtime, mode, link target, a file's content_hash (remembered for edits), " +
    'secret and policy flags. Fails outside the roots (NOT_ALLOWED).',
  group: 'fs-read',
  input: StatInput,
  output: StatOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  async run(args, ctx) {
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'any', secrets: 'flag' });
    const secret = !ctx.policy.allowSecrets && (isSecretPath(target.absolute) || isSecretPath(target.real));
    let contentHash: string | null = null;
    if (args.hash && target.stats.isFile() && !secret) {
      const { handle, stats } = await openForRead(target.real, (p) => isInsideRoots(ctx.policy.roots, p));
      try {
        // Never past max(size, --max-edit-bytes): a procfs file reports 0 and may never end.
        contentHash = await hashFileHandle(handle, {
          reportedSize: stats.size,
          maxBytes: ctx.config.limits.maxEditBytes,
          path: target.real,
        });
      } finally {
        await handle.close();
      }
      ctx.hashes.remember(target.real, contentHash);
    }
    const isInside = (p: string) => isInsideRoots(ctx.policy.roots, p);
    let symlink: { target: string } | null = null;
    if (target.viaSymlink) {
      // The link itself, read through its verified directory; a spelling with another link above it (or a directory
      // swapped meanwhile) reports the resolved path instead.
      let text = target.real as string;
      try {
        text = await withVerifiedDir(path.dirname(target.absolute), isInside, (dir) =>
          dir.readlink(path.basename(target.absolute)),
        );
      } catch {
        /* the resolved path */
      }
      symlink = { target: text };
    }
    // Metadata as it is now through the verified parent, never through whatever a swapped ancestor points to.
    const s = lstatVerified(target.real, isInside);
    if (!s) throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: target.absolute });
    const structured = {
      path: target.real,
      type: kindOf(s),
      size: s.size,
      mtime: s.mtime.toISOString(),
      mode: `0${(s.mode & 0o7777).toString(8).padStart(3, '0')}`,
      nlink: s.nlink,
      symlink,
      content_hash: contentHash,
      secret,
      policy: target.access,
    };
    const lines = [
      `${quoteName(structured.path)}: ${structured.type}, ${s.size} bytes, mode ${structured.mode}, modified ${structured.mtime}`,
      ...(symlink ? [`symlink -> ${quoteName(symlink.target)}`] : []),
      ...(contentHash ? [`content_hash ${contentHash}`] : []),
      ...(secret ? ['secret file: content tools refuse it'] : []),
      ...(target.access ? [`policy: ${target.access}`] : []),
    ];
    return { structured, text: lines.join('\n'), audit: { paths: [target.real], hash_after: contentHash } };
  },
});

/**
 * read_media: an image or audio file as an MCP `image` / `audio` content block that the model can look
 * at or listen to, with the MIME type detected from the bytes (src/fs/media-type.ts), plus the usual facts (path,
 * size, content_hash) in structured form. Same policy as read_file (roots, secrets, file policy, special files); the
 * whole file is read through the verified descriptor, up to --max-media-bytes.
 *
 * A separate tool rather than a read_file option: its result is a different content type (read_file's content is
 * always the raw text or base64 *string*), and clients list it where a model looks for "view an image" — the
 * official filesystem server calls it read_media_file.
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { hashBytes } from '../fs/hash.js';
import { detectMedia, MEDIA_SNIFF_BYTES } from '../fs/media-type.js';
import { openForRead } from '../fs/open-file.js';
import { authorizeRead } from '../policy/authorize.js';
import { isInsideRoots } from '../policy/containment.js';
import { ContentHash, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';

export const ReadMediaInput = z.strictObject({ path: PathArg });

export const ReadMediaOutput = z.object({
  path: z.string().describe('Absolute resolved path'),
  kind: z.enum(['image', 'audio']),
  mime_type: z.string().describe("Detected from the file's bytes, not its name"),
  size: z.number().int().describe('File size in bytes'),
  content_hash: ContentHash.describe('Hash of the whole file'),
});

export const readMedia = defineTool({
  name: 'read_media',
  title: 'Read image or audio',
  description:
    'View an image (PNG, JPEG, GIF, WebP) or hear audio (WAV, MP3, OGG, FLAC, M4A) as a content block, with ' +
    'size and content_hash. Over --max-media-bytes (2 MiB): VALIDATION too_large; other formats: not_media (use ' +
    'read_file; SVG is text).',
  group: 'fs-read',
  input: ReadMediaInput,
  output: ReadMediaOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  async run(args, ctx) {
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'file' });
    const limit = ctx.config.limits.maxMediaBytes;
    const { handle, stats } = await openForRead(target.real, (p) => isInsideRoots(ctx.policy.roots, p));
    let bytes: Buffer;
    try {
      if (stats.size > limit) {
        throw new ToolError(
          'VALIDATION',
          `${target.absolute} is ${stats.size} bytes, over the ${limit}-byte media limit.`,
          {
            path: target.absolute,
            details: { reason: 'too_large', size: stats.size, limit },
            suggestion: 'Use a smaller file, or raise --max-media-bytes when starting fs-tools.',
          },
        );
      }
      // Read to EOF through the verified descriptor, one byte more than fstat said: a file that grew meanwhile is
      // reported, never read past the limit or half-read.
      bytes = Buffer.alloc(stats.size + 1);
      let filled = 0;
      while (filled < bytes.length) {
        const { bytesRead } = await handle.read(bytes, filled, bytes.length - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      if (filled > stats.size) {
        throw new ToolError('VALIDATION', `${target.absolute} changed while it was being read.`, {
          path: target.absolute,
          details: { reason: 'changed_during_read' },
          suggestion: 'Read it again once it stops changing.',
        });
      }
      bytes = bytes.subarray(0, filled);
    } finally {
      await handle.close();
    }
    const contentHash = hashBytes(bytes);
    ctx.hashes.remember(target.real, contentHash);
    const media = detectMedia(bytes.subarray(0, MEDIA_SNIFF_BYTES));
    if (!media) {
      throw new ToolError('VALIDATION', `${target.absolute} is not an image or audio file this tool recognizes.`, {
        path: target.absolute,
        details: { reason: 'not_media', size: bytes.length, content_hash: contentHash },
        suggestion: 'Read it with read_file (text, or encoding "base64" for raw bytes); SVG images are text.',
      });
    }
    return {
      structured: {
        path: target.real,
        kind: media.kind,
        mime_type: media.mime,
        size: bytes.length,
        content_hash: contentHash,
      },
      text: [`${media.kind} ${media.mime}, ${bytes.length} bytes, content_hash ${contentHash}`],
      media: { type: media.kind, data: bytes.toString('base64'), mimeType: media.mime },
      audit: { paths: [target.real], hash_after: contentHash, bytes: bytes.length },
    };
  },
});

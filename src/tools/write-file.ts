/**
 * write_file (docs/tools.md): create a file or replace one whole, atomically, keeping the replaced file's mode.
 * Replacing an existing file is a mutation under OCC (docs/errors.md "Optimistic concurrency"); creating one is not (unless expected_hash says so).
 */
import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { authorizeWrite } from '../policy/authorize.js';
import { DryRun, ExpectedHash, ExpectedStatusHash, MutationResultShape, PathArg } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { mutateFile } from '../mutation/mutate-file.js';
import { quoteName } from './text-safe.js';
import { heavyClasses } from './heavy-calls.js';

export const WriteFileInput = z.strictObject({
  path: PathArg,
  content: z.string().optional().describe('UTF-8 text, written exactly'),
  content_base64: z.string().optional().describe('Bytes as base64, instead of content'),
  expected_hash: ExpectedHash.optional(),
  expected_status_hash: ExpectedStatusHash.optional(),
  create_dirs: z.boolean().default(false).describe('Create missing parents'),
  dry_run: DryRun,
});

export const WriteFileOutput = z.object({
  ...MutationResultShape,
  created: z.boolean().describe('True when the file did not exist before'),
  bytes: z.number().int().describe('Bytes written (or that would be)'),
});

function decodeContent(args: z.output<typeof WriteFileInput>): Buffer {
  if ((args.content === undefined) === (args.content_base64 === undefined)) {
    throw new ToolError('VALIDATION', 'Pass exactly one of content or content_base64.', {
      details: { reason: 'conflicting_parameters', field: 'content' },
    });
  }
  if (args.content !== undefined) return Buffer.from(args.content, 'utf8');
  const b64 = args.content_base64!;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64.replace(/\s+/g, '')) || b64.replace(/\s+/g, '').length % 4 !== 0) {
    throw new ToolError('VALIDATION', 'content_base64 is not valid base64.', {
      details: { reason: 'invalid_base64', field: 'content_base64' },
    });
  }
  return Buffer.from(b64, 'base64');
}

export const writeFile = defineTool({
  name: 'write_file',
  title: 'Write file',
  description:
    'Create a file or replace its whole content, atomically. Replacing needs its hash (expected_hash or an ' +
    'earlier read, else HASH_REQUIRED); OCC_MISMATCH: it changed, re-read. For partial ' +
    'changes use edit_file.',
  group: 'fs-write',
  input: WriteFileInput,
  output: WriteFileOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  mutating: true,
  // docs/errors.md "Order of checks" step 2: a missing or double content, or bad base64, is an argument problem, decided before the gates.
  validate: (a) => {
    decodeContent(a);
  },
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  heavy: (a) => heavyClasses(a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    const bytes = decodeContent(args);
    const target = await authorizeWrite(args.path, ctx.policy, { kind: 'file', mustExist: false, followFinal: true });
    const r = await mutateFile(
      ctx,
      target,
      {
        expectedHash: args.expected_hash,
        expectedStatusHash: args.expected_status_hash,
        dryRun: args.dry_run,
        wantBytes: 'small',
        createDirs: args.create_dirs,
      },
      () => ({ bytes, detail: null }),
    );
    const structured = {
      ...(target.real !== target.absolute ? { path: target.real } : {}),
      dry_run: args.dry_run,
      previous_hash: r.previousHash,
      content_hash: r.contentHash,
      created: r.created,
      bytes: r.bytes,
      ...(r.occ.externalChange ? { external_change: true, warnings: [r.occ.warning!] } : {}),
      ...(r.statusHash ? { status_hash: r.statusHash } : {}),
    };
    const verb = args.dry_run ? (r.created ? 'Would create' : 'Would replace') : r.created ? 'Created' : 'Replaced';
    const text =
      `${verb} ${quoteName(target.real)} (${r.bytes} bytes${isUtf8(bytes) ? '' : ', binary'}); content_hash ${r.contentHash}` +
      (r.occ.warning ? `\nwarning: ${r.occ.warning}` : '');
    return {
      structured,
      text,
      audit: { paths: [target.real], hash_before: r.previousHash, hash_after: r.contentHash, bytes: r.bytes },
    };
  },
});

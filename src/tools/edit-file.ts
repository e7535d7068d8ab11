/**
 * edit_file (docs/tools.md): exact-text replacements, all or none, keeping the file's BOM, line endings and final
 * newline; PATCH_FAILED with the failing edit's index and the nearest region; REWRITE_BLOCKED for near-total
 * rewrites. The engine is src/patch/apply-edits.ts; its step is src/mutation/edit-file.ts, the write flow
 * src/mutation/mutate-file.ts.
 */
import { z } from 'zod';
import { authorizeWrite } from '../policy/authorize.js';
import {
  DryRun,
  ExpectedHash,
  ExpectedStatusHash,
  MergedResult,
  MutationResultShape,
  OnConflict,
  PathArg,
} from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { editDiff, editedContent } from '../mutation/edit-file.js';
import { mutateFile } from '../mutation/mutate-file.js';
import { deletionIsConflict } from '../mutation/occ-rules.js';
import { quoteName } from './text-safe.js';
import { heavyClasses } from './heavy-calls.js';

/** Largest max_replacements (docs/security.md "Bounded work"; the default, 10000, is src/mutation/edit-file.ts's). */
export const MAX_EDIT_REPLACEMENTS = 100_000;

export const EditFileInput = z.strictObject({
  path: PathArg,
  edits: z
    .array(
      z.strictObject({
        old_text: z.string().min(1).describe('Exact current text, indentation included'),
        new_text: z.string().describe('Inserted literally'),
        replace_all: z.boolean().default(false).describe('Every occurrence (else exactly one)'),
      }),
    )
    .min(1)
    .max(100)
    .describe('1-100 edits, in order'),
  expected_hash: ExpectedHash.optional(),
  expected_status_hash: ExpectedStatusHash.optional(),
  on_conflict: OnConflict.optional(),
  allow_rewrite: z.boolean().default(false).describe('Allow ≥90% rewrites'),
  max_replacements: z.number().int().min(1).max(MAX_EDIT_REPLACEMENTS).optional().describe('Default 10000'),
  dry_run: DryRun,
});

/**
 * edit_file's structured result (docs/tools.md: replacements, unified diff, previous_hash, content_hash).
 * Structured-first clients show it as JSON, so what the rest already says is left out: `edits` (per-edit facts) only
 * when some edit did not match exactly once and exactly (replace_all, or tolerated trailing whitespace), since
 * otherwise `replacements` and the diff say it all (a `reindented` match carries its `indent_shift`);
 * `diff_truncated` only when true; `path` only when a link was followed.
 */
export const EditFileOutput = z.object({
  ...MutationResultShape,
  replacements: z.number().int().describe('Total replacements made'),
  edits: z
    .array(
      z.object({
        index: z.number().int(),
        replacements: z.number().int(),
        match: z.enum(['exact', 'trailing_whitespace', 'reindented']).describe('How old_text matched'),
        indent_shift: z
          .string()
          .optional()
          .describe('reindented: indentation change from old_text to the file, also applied to new_text ("+4 spaces")'),
        lines: z.array(z.number().int()).describe('1-based lines where the matches started'),
      }),
    )
    .optional()
    .describe('Absent: every edit replaced one exact match'),
  diff: z.string().describe('Unified diff of the change'),
  diff_truncated: z.boolean().optional().describe('Present (true) only when the diff was cut'),
  merged: MergedResult,
});

export const editFile = defineTool({
  name: 'edit_file',
  title: 'Edit file',
  description:
    'Replace exact text: each old_text must occur once (or replace_all); all or none. Tolerates CRLF/LF, ' +
    'trailing spaces, a uniform indent shift. Needs the hash like write_file. Returns a diff, new content_hash; ' +
    'PATCH_FAILED shows the nearest text.',
  group: 'fs-write',
  input: EditFileInput,
  output: EditFileOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => [a.path],
  heavy: (a) => heavyClasses(a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    const target = await authorizeWrite(args.path, ctx.policy, {
      kind: 'file',
      mustExist: true,
      followFinal: true,
      knownToSession: deletionIsConflict(ctx, args.expected_hash),
    });
    const r = await mutateFile(
      ctx,
      target,
      {
        expectedHash: args.expected_hash,
        expectedStatusHash: args.expected_status_hash,
        dryRun: args.dry_run,
        wantBytes: true,
        mustExist: true,
        tool: 'edit_file',
        onConflict: args.on_conflict ?? ctx.config.onConflict,
      },
      (current) => editedContent(args, target.absolute, current),
    );
    const { edits } = r.detail;
    // Merged: the diff shows what this write changes on disk (the current file → the merge).
    const { before, after } = r.merged ?? r.detail;
    const { diff, truncated: diffTruncated } = await editDiff(target.relative, before, after);
    const replacements = edits.reduce((n, e) => n + e.replacements, 0);
    const structured = {
      ...(target.real !== target.absolute ? { path: target.real } : {}),
      dry_run: args.dry_run,
      previous_hash: r.previousHash,
      content_hash: r.contentHash,
      replacements,
      ...(edits.every((e) => e.replacements === 1 && e.match === 'exact') ? {} : { edits }),
      diff,
      ...(diffTruncated ? { diff_truncated: true } : {}),
      ...(r.merged ? { merged: r.merged.info } : {}),
      ...(r.occ.externalChange ? { external_change: true, warnings: [r.occ.warning!] } : {}),
      ...(r.statusHash ? { status_hash: r.statusHash } : {}),
    };
    const text =
      `${args.dry_run ? 'Would edit' : 'Edited'} ${quoteName(target.real)}: ${replacements} replacement(s); ` +
      `content_hash ${r.contentHash}${r.occ.warning ? `\nwarning: ${r.occ.warning}` : ''}` +
      `${r.merged ? `\nmerged with a change made since ${r.merged.info.base_hash.slice(0, 19)}…` : ''}\n${diff}`;
    return {
      structured,
      text,
      audit: { paths: [target.real], hash_before: r.previousHash, hash_after: r.contentHash, bytes: r.bytes },
    };
  },
});

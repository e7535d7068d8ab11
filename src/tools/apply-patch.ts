/**
 * apply_patch (docs/tools.md): apply a unified diff to one or several files as one transaction — the contract
 * (schemas, description) and its steps. The diff is parsed during argument validation (BEGIN_PATCH, PATCH_FAILED
 * malformed/no_hunks come before any path check: docs/errors.md "Order of checks" step 2); the plan authorizes every
 * file (src/mutation/patch-targets.ts); inside the lock every file is inspected, hashed (OCC per file) and patched in
 * memory, and nothing is written unless every file applies (src/mutation/apply-patch.ts); then the journaled commit
 * (src/patch/transaction.ts) writes them, rolling back on a failure part-way. */
import { z } from 'zod';
import { parseUnifiedDiff } from '../patch/parse-unified.js';
import { decidePatch, inspectPatch, type PatchFileResult, type PatchFileState } from '../mutation/apply-patch.js';
import { resolvePatchTargets } from '../mutation/patch-targets.js';
import { runMutation } from '../mutation/pipeline.js';
import {
  ContentHash,
  DryRun,
  ExpectedHash,
  ExpectedStatusHash,
  MergedResult,
  OnConflict,
  PathArg,
} from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { quoteName } from './text-safe.js';
import { heavyClasses } from './heavy-calls.js';

export const ApplyPatchInput = z.strictObject({
  patch: z.string().min(1).describe('Unified diff, one or more files'),
  path: PathArg.optional().describe("Base directory of the diff's paths (default: first root), or the target file"),
  expected_hashes: z
    .record(z.string(), ExpectedHash)
    .optional()
    .describe('Path (as in the diff) → content_hash, or "absent"'),
  expected_status_hash: ExpectedStatusHash.optional(),
  on_conflict: OnConflict.optional(),
  allow_rewrite: z.boolean().default(false).describe('Allow ≥90% rewrites'),
  dry_run: DryRun,
});

export const ApplyPatchOutput = z.object({
  dry_run: z.boolean(),
  files: z.array(
    z.object({
      path: z.string().describe('Absolute resolved path'),
      action: z.enum(['created', 'modified', 'deleted', 'renamed']),
      from: z.string().optional().describe('Renames: the old path'),
      hunks: z.array(
        z.object({
          hunk: z.number().int(),
          line: z.number().int().describe('1-based line of the original file where the hunk applied'),
          match: z
            .enum(['exact', 'trailing_whitespace', 'typography', 'reindented'])
            .describe('The tolerance the match needed'),
          placed_by: z
            .enum(['header', 'offset', 'anchored_end', 'anchored_start', 'section', 'order', 'content'])
            .describe(
              'What singled out the place: the header line, the header line plus the offset of the previous hunk, ' +
                'end/start-of-file anchoring, the @@ section heading, the order of the hunks, or the only match',
            ),
          candidates: z.number().int().describe("Places the hunk's old side matched (0 for a pure insertion)"),
          offset: z.number().int().nullable().describe('line minus the header line; null for @@ @@'),
          indent_shift: z.string().optional().describe('reindented: indentation change from the hunk to the file'),
        }),
      ),
      previous_hash: ContentHash.nullable(),
      content_hash: ContentHash.nullable().describe('null for a deleted file'),
      merged: MergedResult,
    }),
  ),
  external_change: z.boolean().optional(),
  warnings: z.array(z.string()).optional(),
  status_hash: z.string().optional(),
});

export const applyPatch = defineTool({
  name: 'apply_patch',
  title: 'Apply patch',
  description:
    'Apply a unified diff to one or more files, all or nothing (a failed write rolls back: ROLLBACK_*). Hunks ' +
    'are found by content (unresolved ties: ambiguous). Existing files need their hash. Not *** Begin Patch (BEGIN_PATCH). PATCH_FAILED shows ' +
    'the hunk and nearest text.',
  group: 'fs-write',
  input: ApplyPatchInput,
  output: ApplyPatchOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  validate: (args) => {
    parseUnifiedDiff(args.patch);
  },
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => (a.path ? [a.path] : []),
  heavy: (a) => heavyClasses(a.expected_status_hash !== undefined && 'git'),
  async run(args, ctx) {
    const files = parseUnifiedDiff(args.patch);
    const targets = await resolvePatchTargets(files, args, ctx); // the plan: steps 4–7, before the lock
    const warnings: string[] = [];
    const { result: outcome, statusHash } = await runMutation<PatchFileResult[], PatchFileState[]>(ctx, {
      lockPaths: targets.flatMap((t) => [t.source.real, t.dest.real]),
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [targets[0].source.real, targets[0].dest.real],
      dryRun: args.dry_run,
      inspect: (scope) => inspectPatch(ctx, scope, targets, args),
      decide: (scope, states) => decidePatch(ctx, scope, targets, states, args, warnings),
    });
    const structured = {
      dry_run: args.dry_run,
      files: outcome,
      ...(warnings.length ? { external_change: true, warnings } : {}),
      ...(statusHash ? { status_hash: statusHash } : {}),
    };
    const text = [
      ...outcome.map(
        (f) =>
          `${args.dry_run ? 'would be ' : ''}${f.action} ${quoteName(f.path)}${f.from ? ` (from ${quoteName(f.from)})` : ''}: ` +
          `${f.hunks.length} hunk(s)${f.hunks.length ? ` at line ${f.hunks.map((h) => h.line).join(', ')}` : ''}; ` +
          `content_hash ${f.content_hash ?? '(deleted)'}${f.merged ? '; merged with a change made since your read' : ''}`,
      ),
      ...warnings.map((w) => `warning: ${w}`),
    ].join('\n');
    return {
      structured,
      text,
      audit: {
        paths: outcome.map((f) => f.path),
        hash_before: outcome[0]?.previous_hash ?? null,
        hash_after: outcome[0]?.content_hash ?? null,
      },
    };
  },
});

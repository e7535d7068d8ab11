/**
 * list_changes and revert_changes ("Undo"): the server's own changes, recorded by the one mutation pipeline
 * (src/mutation/pipeline.ts → src/fs/history.ts), listed and reverted.
 *
 * A revert is a live write of every file it touches: each path is authorized again (roots, state-dir guard, secrets,
 * `.git`, file policy), read inside the path lock, checked against the hash the reverted change(s) left
 * (OCC_MISMATCH naming the file that moved, unless the caller passes that file's current hash), and committed as one
 * journaled transaction (src/patch/transaction.ts) through `runMutation`, so it is atomic across files, charged one
 * budget unit, refused under --readonly, and itself recorded (it can be undone). The steps — selection,
 * authorization, the check of every path inside the lock, the effect — are src/mutation/revert.ts.
 */
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { loadHistory } from '../fs/history.js';
import { visibleChanges } from '../mutation/history-visible.js';
import {
  authorizeRevert,
  decideRevert,
  inspectRevert,
  revertLockPaths,
  selectChanges,
  targetsOf,
  type RevertCall,
} from '../mutation/revert.js';
import { ContentHash, DryRun, ExpectedHash } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';

const ChangeId = z
  .string()
  .regex(/^[0-9]{15}-[0-9a-f]{12}$/)
  .describe('A change id from list_changes');

/** The note on changes dropped by the history bounds or never recorded (undefined: none). */
function droppedNote(dropped: number, lastDroppedId: string | null, skipped: number): string | undefined {
  const notes: string[] = [];
  if (dropped > 0) {
    notes.push(
      `${dropped} older change(s) were dropped to keep the history within --history-max-changes / ` +
        `--history-max-bytes (the newest dropped was ${lastDroppedId ?? 'unknown'}); they can no longer be reverted.`,
    );
  }
  if (skipped > 0)
    notes.push(`${skipped} change(s) were not recorded: their record alone exceeded --history-max-bytes.`);
  return notes.length ? notes.join(' ') : undefined;
}

export const ListChangesInput = z.strictObject({
  limit: z.number().int().min(1).max(1000).default(50).describe('Most changes returned (default 50)'),
});

const ChangeSummary = z.object({
  id: z.string(),
  tool: z.string(),
  created_at: z.string(),
  reverts: z.array(z.string()).optional(),
  files: z.array(
    z.object({
      path: z.string(),
      previous_hash: ContentHash.nullable().describe('Before the change (null: absent)'),
      content_hash: ContentHash.nullable().describe('What the change left (null: deleted)'),
      previous_type: z.enum(['directory', 'symlink']).optional().describe('Before: a directory or link, not a file'),
      type: z.enum(['directory', 'symlink']).optional().describe('Left: a directory or link, not a file'),
    }),
  ),
});

export const ListChangesOutput = z.object({
  changes: z.array(ChangeSummary),
  total: z.number().int().describe('Changes held (inside the current roots)'),
  truncated: z.boolean(),
  dropped: z.number().int().describe('Older changes dropped by the history bounds'),
  note: z.string().optional(),
  invalid: z.number().int().optional().describe('Records on disk that failed validation and were ignored'),
  hidden: z.number().int().optional().describe('Changes with a path outside the current roots, not shown'),
});

export const listChanges = defineTool({
  name: 'list_changes',
  title: 'List changes',
  description:
    'Changes this server made, newest first: id, tool, time, paths, hashes before/after. Kept across ' +
    'restarts; oldest dropped past the --history-max-* limits. Give an id to revert_changes; ' +
    'fails only with IO_ERROR.',
  group: 'fs-read',
  input: ListChangesInput,
  output: ListChangesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  async run(args, ctx) {
    const history = await loadHistory(ctx.config.stateDir, ctx.config.limits.historyMaxBytes);
    const { shown, hidden } = visibleChanges(ctx, history.changes);
    const newest = shown.slice(-args.limit).reverse();
    const note = droppedNote(history.dropped, history.lastDroppedId, history.skipped);
    const structured = {
      changes: newest.map((c) => ({
        id: c.id,
        tool: c.tool,
        created_at: c.created_at,
        ...(c.reverts ? { reverts: c.reverts } : {}),
        files: c.files.map((f) => ({
          path: f.path,
          previous_hash: f.old_hash,
          content_hash: f.new_hash,
          ...(f.old_kind ? { previous_type: f.old_kind } : {}),
          ...(f.new_kind ? { type: f.new_kind } : {}),
        })),
      })),
      total: shown.length,
      truncated: shown.length > newest.length,
      dropped: history.dropped,
      ...(note ? { note } : {}),
      ...(history.invalid ? { invalid: history.invalid } : {}),
      ...(hidden ? { hidden } : {}),
    };
    const text = [
      ...newest.map(
        (c) =>
          `${c.id} ${c.created_at} ${c.tool}${c.reverts ? ` (reverts ${c.reverts.join(', ')})` : ''}: ` +
          c.files
            .map((f) => `${f.path} ${f.old_kind ?? f.old_hash ?? 'absent'} -> ${f.new_kind ?? f.new_hash ?? 'deleted'}`)
            .join('; '),
      ),
      ...(newest.length === 0 ? ['No recorded changes.'] : []),
      ...(structured.truncated ? [`(${shown.length - newest.length} older change(s) not shown; raise limit)`] : []),
      ...(note ? [`note: ${note}`] : []),
    ].join('\n');
    return { structured, text };
  },
});

export const RevertChangesInput = z.strictObject({
  change_id: ChangeId.optional().describe('Revert this one change'),
  last: z.number().int().min(1).max(1000).optional().describe('Revert the last N changes'),
  since: ChangeId.optional().describe('Revert this change and every later one'),
  expected_hashes: z
    .record(z.string(), ExpectedHash)
    .optional()
    .describe('Absolute path → current hash or "absent": revert anyway'),
  dry_run: DryRun,
});

export const RevertChangesOutput = z.object({
  dry_run: z.boolean(),
  reverted: z.array(z.string()).describe('Ids of the changes reverted'),
  files: z.array(
    z.object({
      path: z.string(),
      action: z.enum(['restored', 'recreated', 'deleted', 'unchanged']),
      previous_hash: ContentHash.nullable(),
      content_hash: ContentHash.nullable(),
      type: z.enum(['directory', 'symlink']).optional().describe('A directory or link, not a file'),
    }),
  ),
  diff: z.string().optional().describe('dry_run: unified diff of what the revert would do'),
  diff_truncated: z.boolean().optional(),
});

export const revertChanges = defineTool({
  name: 'revert_changes',
  title: 'Revert changes',
  description:
    'Undo changes (ids from list_changes): change_id, the last N, or since an id. A file changed since: ' +
    'OCC_MISMATCH, unless expected_hashes {path: current hash}. Checked as a live write, all or nothing, itself a ' +
    'change; dry_run shows the diff.',
  group: 'fs-write',
  input: RevertChangesInput,
  output: RevertChangesOutput,
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  mutating: true,
  validate: (a) => {
    const n = [a.change_id, a.last, a.since].filter((x) => x !== undefined).length;
    if (n !== 1) {
      throw new ToolError('VALIDATION', 'Pass exactly one of change_id, last or since.', {
        details: { reason: 'selector' },
        suggestion: 'Call list_changes for the ids.',
      });
    }
  },
  isDryRun: (a) => a.dry_run,
  pathsOf: (a) => Object.keys(a.expected_hashes ?? {}),
  // It reads and restores every file of the selected changes: a tree operation undone is a tree operation.
  heavy: () => ['walk'],
  async run(args, ctx) {
    const history = await loadHistory(ctx.config.stateDir, ctx.config.limits.historyMaxBytes);
    const selected = selectChanges(args, visibleChanges(ctx, history.changes).shown);
    const targets = targetsOf(selected);
    const call: RevertCall = {
      selected,
      targets,
      authorized: await authorizeRevert(ctx, targets),
      expectedOverride: args.expected_hashes ?? {},
      dryRun: args.dry_run,
    };
    const { result } = await runMutation(ctx, {
      lockPaths: revertLockPaths(call),
      expectedStatusHash: undefined,
      statusPaths: [],
      dryRun: args.dry_run,
      inspect: (scope) => inspectRevert(ctx, scope, call),
      decide: (scope, found) => decideRevert(ctx, scope, call, found),
    });
    const structured = {
      dry_run: args.dry_run,
      reverted: selected.map((c) => c.id),
      files: result.files,
      ...(args.dry_run ? { diff: result.diff, diff_truncated: result.diffTruncated } : {}),
    };
    const text = [
      `${args.dry_run ? 'Would revert' : 'Reverted'} ${selected.length} change(s): ${structured.reverted.join(', ')}`,
      ...result.files.map(
        (f) => `${args.dry_run ? 'would be ' : ''}${f.action} ${f.path}: content_hash ${f.content_hash ?? '(deleted)'}`,
      ),
      ...(args.dry_run && result.diff ? [result.diff] : []),
    ].join('\n');
    return {
      structured,
      text,
      audit: { paths: result.files.map((f) => f.path), action: args.dry_run ? 'revert_dry_run' : 'revert' },
    };
  },
});

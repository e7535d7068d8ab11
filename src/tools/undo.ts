/**
 * list_changes and revert_changes (issue 18, "Undo"): the server's own changes, recorded by the one mutation pipeline
 * (src/tools/file-mutation.ts → src/fs/history.ts), listed and reverted.
 *
 * A revert is a live write of every file it touches: each path is authorized again (roots, state-dir guard, secrets,
 * `.git`, file policy), read inside the path lock, checked against the hash the reverted change(s) left
 * (OCC_MISMATCH naming the file that moved, unless the caller passes that file's current hash), and committed as one
 * journaled transaction (src/patch/transaction.ts) through `runMutation`, so it is atomic across files, charged one
 * budget unit, refused under --readonly, and itself recorded (it can be undone).
 */
import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { historyFileOf, loadHistory, type HistoryChange } from '../fs/history.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { unifiedDiff } from '../patch/window-diff.js';
import { authorizeWrite, classifyEntry, type AuthorizedWrite } from '../policy/authorize.js';
import { findContainingRoot, toPosixRelative } from '../policy/containment.js';
import { ContentHash, DryRun, ExpectedHash } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { insideRoots, runMutation } from './file-mutation.js';

const ChangeId = z
  .string()
  .regex(/^[0-9]{15}-[0-9a-f]{12}$/)
  .describe('A change id from list_changes');

/** Most characters of diff a dry run returns. */
const MAX_DIFF_CHARS = 65_536;

/**
 * The changes this call may see: every path inside the current roots and, under the current policy, neither hidden,
 * denied, guarded nor a secret (a change recorded under other roots, --allow-secrets or another policy is not shown,
 * not even its path or hashes, and cannot be selected by `last` / `since`).
 */
function visible(ctx: ToolContext, changes: readonly HistoryChange[]): { shown: HistoryChange[]; hidden: number } {
  const seeable = (p: string) => {
    const root = findContainingRoot(ctx.policy.roots, p);
    if (!root) return false;
    const v = classifyEntry(ctx.policy, p, toPosixRelative(root.real, p));
    return !v.hidden && !v.denied && !v.secret;
  };
  const shown = changes.filter((c) => c.files.every((f) => seeable(f.path)));
  return { shown, hidden: changes.length - shown.length };
}

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
  limit: z.number().int().min(1).max(1000).default(50).describe('Most changes returned, newest first (default 50)'),
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
    'List the file changes this server made (writes, edits, patches, file deletes, reverts), newest first: id, ' +
    'tool, time, paths with hashes before/after. Kept across restarts; the oldest go first past ' +
    '--history-max-changes (200) or --history-max-bytes. Pass an id to revert_changes; fails only when the ' +
    'state directory is unreadable (IO_ERROR).',
  group: 'fs-read',
  input: ListChangesInput,
  output: ListChangesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  async run(args, ctx) {
    const history = await loadHistory(ctx.config.stateDir);
    const { shown, hidden } = visible(ctx, history.changes);
    const newest = shown.slice(-args.limit).reverse();
    const note = droppedNote(history.dropped, history.lastDroppedId, history.skipped);
    const structured = {
      changes: newest.map((c) => ({
        id: c.id,
        tool: c.tool,
        created_at: c.created_at,
        ...(c.reverts ? { reverts: c.reverts } : {}),
        files: c.files.map((f) => ({ path: f.path, previous_hash: f.old_hash, content_hash: f.new_hash })),
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
          c.files.map((f) => `${f.path} ${f.old_hash ?? 'absent'} -> ${f.new_hash ?? 'deleted'}`).join('; '),
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
    .describe('Absolute path → its current content_hash (or "absent"): revert even though the file changed since'),
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
    }),
  ),
  diff: z.string().optional().describe('dry_run: unified diff of what the revert would do'),
  diff_truncated: z.boolean().optional(),
});

/** One file the revert touches: where it must be now and what it goes back to. */
interface RevertTarget {
  path: string;
  /** The hash the newest selected change left (null: it deleted the file). */
  expected: string | null;
  /** The state before the oldest selected change. */
  restoreBase64: string | null;
  restoreHash: string | null;
  restoreMode: number | null;
}

/** Selects the changes to revert, oldest first. @throws ToolError VALIDATION (selector), NOT_FOUND (unknown id) */
function select(args: z.output<typeof RevertChangesInput>, changes: readonly HistoryChange[]): HistoryChange[] {
  if (args.change_id !== undefined || args.since !== undefined) {
    const id = (args.change_id ?? args.since)!;
    const i = changes.findIndex((c) => c.id === id);
    if (i < 0) {
      throw new ToolError(
        'NOT_FOUND',
        `No change ${id} in the history (it may have been dropped by the history bounds).`,
        {
          suggestion: 'Call list_changes for the ids held.',
        },
      );
    }
    return args.change_id !== undefined ? [changes[i]] : changes.slice(i);
  }
  if (changes.length === 0) throw new ToolError('NOT_FOUND', 'The change history is empty.', {});
  return changes.slice(-args.last!);
}

/** Per path: the newest selected change's result (to check) and the oldest selected change's previous state. */
function targetsOf(selected: readonly HistoryChange[]): RevertTarget[] {
  const byPath = new Map<string, RevertTarget>();
  for (let i = selected.length - 1; i >= 0; i--) {
    for (const f of selected[i].files) {
      const t = byPath.get(f.path);
      const restore = { restoreBase64: f.old_base64, restoreHash: f.old_hash, restoreMode: f.old_mode };
      if (!t) byPath.set(f.path, { path: f.path, expected: f.new_hash, ...restore });
      else Object.assign(t, restore);
    }
  }
  return [...byPath.values()];
}

function textDiff(path: string, before: Buffer | null, after: Buffer | null): string {
  if ((before && !isUtf8(before)) || (after && !isUtf8(after))) return `Binary file ${path} differs\n`;
  const diff = unifiedDiff(
    before ? `a${path}` : '/dev/null',
    after ? `b${path}` : '/dev/null',
    before?.toString('utf8') ?? '',
    after?.toString('utf8') ?? '',
    3,
  );
  return diff.replace(/^=+\n/, '').replace(/^Index:.*\n/, '');
}

export const revertChanges = defineTool({
  name: 'revert_changes',
  title: 'Revert changes',
  description:
    'Undo changes this server made (ids from list_changes): one change_id, the last N, or since an id (and all ' +
    'later). A file changed since fails OCC_MISMATCH; expected_hashes {path: current content_hash} reverts anyway. ' +
    'Checks as a live write; atomic across files; itself a change. dry_run returns the diff.',
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
  async run(args, ctx) {
    const history = await loadHistory(ctx.config.stateDir);
    const selected = select(args, visible(ctx, history.changes).shown);
    const targets = targetsOf(selected);
    // Each path is authorized as a live write of it (a recorded path is a real path: one that resolves elsewhere now —
    // a link in it or above it — is refused).
    const authorized = new Map<string, AuthorizedWrite>();
    for (const t of targets) {
      const w = await authorizeWrite(t.path, ctx.policy, { kind: 'file', mustExist: false, followFinal: false });
      if (w.real !== t.path) {
        throw new ToolError('NOT_ALLOWED', `${t.path} no longer resolves to itself; it is not reverted.`, {
          path: t.path,
        });
      }
      authorized.set(t.path, w);
    }
    const isInside = insideRoots(ctx);
    const expectedOverride = args.expected_hashes ?? {};
    const { result } = await runMutation(ctx, {
      lockPaths: [...authorized.values()].map((w) => w.real),
      expectedStatusHash: undefined,
      statusPaths: [],
      dryRun: args.dry_run,
      decide: async (scope) => {
        const changes: PlannedChange[] = [];
        const files: z.output<typeof RevertChangesOutput>['files'] = [];
        let diff = '';
        for (const t of targets) {
          const real = authorized.get(t.path)!.real;
          const current = await scope.current(real, { wantBytes: true, maxBytes: ctx.config.limits.maxEditBytes });
          const currentHash = current.hash ?? 'absent';
          const expected = expectedOverride[t.path] ?? t.expected ?? 'absent';
          if (currentHash !== expected) {
            throw new OccMismatchError(`${t.path} changed since the change(s) being reverted; nothing was reverted.`, {
              path: t.path,
              expectedHash: expected,
              currentHash: current.hash,
              conflict: { reason: current.hash === null ? 'deleted' : t.expected === null ? 'created' : 'modified' },
              suggestion: 'Read the file; to revert anyway, pass expected_hashes with its current content_hash.',
            });
          }
          const restore = t.restoreBase64 === null ? null : Buffer.from(t.restoreBase64, 'base64');
          const action =
            current.hash === t.restoreHash
              ? ('unchanged' as const)
              : restore === null
                ? ('deleted' as const)
                : current.exists
                  ? ('restored' as const)
                  : ('recreated' as const);
          files.push({ path: t.path, action, previous_hash: current.hash, content_hash: t.restoreHash });
          if (action === 'unchanged') continue;
          if (args.dry_run) diff += textDiff(t.path, current.bytes, restore);
          changes.push({
            real,
            oldBytes: current.bytes,
            oldHash: current.hash,
            oldIdentity: current.stats ? identityOf(current.stats) : null,
            oldMode: current.stats ? current.stats.mode & 0o7777 : null,
            newBytes: restore,
            newHash: t.restoreHash,
            newMode: current.exists ? null : t.restoreMode,
            dir: scope.parent(real)?.dir,
          });
        }
        const diffTruncated = diff.length > MAX_DIFF_CHARS;
        return {
          result: { files, diff: diffTruncated ? diff.slice(0, MAX_DIFF_CHARS) : diff, diffTruncated },
          done: `reverted ${changes.length} file(s)`,
          effect: changes.length
            ? () => commitTransaction(changes, { stateDir: ctx.config.stateDir, isInside })
            : undefined,
          remember: () => {
            for (const c of changes) {
              if (c.newBytes) ctx.hashes.remember(c.real, c.newHash!, c.newBytes);
              else ctx.hashes.forget(c.real);
            }
          },
          history: {
            tool: 'revert_changes',
            reverts: selected.map((c) => c.id),
            files: changes.map((c) => historyFileOf(c.real, c.oldBytes, c.oldMode, c.newHash)),
          },
        };
      },
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

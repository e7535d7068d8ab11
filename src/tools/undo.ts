/**
 * list_changes and revert_changes ("Undo"): the server's own changes, recorded by the one mutation pipeline
 * (src/mutation/pipeline.ts → src/fs/history.ts), listed and reverted.
 *
 * A revert is a live write of every file it touches: each path is authorized again (roots, state-dir guard, secrets,
 * `.git`, file policy), read inside the path lock, checked against the hash the reverted change(s) left
 * (OCC_MISMATCH naming the file that moved, unless the caller passes that file's current hash), and committed as one
 * journaled transaction (src/patch/transaction.ts) through `runMutation`, so it is atomic across files, charged one
 * budget unit, refused under --readonly, and itself recorded (it can be undone).
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { z } from 'zod';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyEntryOf, loadHistory, type HistoryChange, type HistoryFile, type PathState } from '../fs/history.js';
import type { CurrentFile } from '../fs/read-current.js';
import { afterEffect } from '../fs/tree-ops.js';
import { changedError, withVerifiedDir, type VerifiedDir } from '../fs/verified-dir.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { boundedUnifiedDiff } from '../patch/window-diff.js';
import { authorizeWrite, classifyEntry, type AuthorizedWrite } from '../policy/authorize.js';
import { findContainingRoot, isWithin, toPosixRelative } from '../policy/containment.js';
import { linkTargetInside } from '../policy/link-target.js';
import { ContentHash, DryRun, ExpectedHash } from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { runMutation } from '../mutation/pipeline.js';
import { insideRoots } from '../mutation/scope.js';

const ChangeId = z
  .string()
  .regex(/^[0-9]{15}-[0-9a-f]{12}$/)
  .describe('A change id from list_changes');

/** Most characters of diff a dry run returns. */
const MAX_DIFF_CHARS = 65_536;

/**
 * Whether a real path may appear in the history listing under the current roots and policy: inside a root, neither
 * hidden, denied, guarded nor a secret. A tree operation holding such an entry is not recorded (src/fs/tree-ops.ts
 * `snapshotTree`): its record could never be listed or reverted, and a secret's bytes are never copied into it.
 */
export function historyVisible(ctx: ToolContext, real: string): boolean {
  const root = findContainingRoot(ctx.policy.roots, real);
  if (!root) return false;
  const v = classifyEntry(ctx.policy, real, toPosixRelative(root.real, real));
  return !v.hidden && !v.denied && !v.secret;
}

/**
 * The changes this call may see: every path inside the current roots and, under the current policy, neither hidden,
 * denied, guarded nor a secret (a change recorded under other roots, --allow-secrets or another policy is not shown,
 * not even its path or hashes, and cannot be selected by `last` / `since`).
 */
function visible(ctx: ToolContext, changes: readonly HistoryChange[]): { shown: HistoryChange[]; hidden: number } {
  const shown = changes.filter((c) => c.files.every((f) => historyVisible(ctx, f.path)));
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
    const { shown, hidden } = visible(ctx, history.changes);
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

/** One path the revert touches: what it must hold now and what it goes back to. */
interface RevertTarget {
  path: string;
  /** The state the newest selected change left, as a state token (see `tokenOf`). */
  expected: string;
  /** Whether the newest selected change left a file (or deleted one): its hash is what expected_hashes overrides. */
  expectedIsFile: boolean;
  /** The state before the oldest selected change. */
  restore: PathState;
}

/** A comparable token of a state: a file's content hash, `absent`, `directory`, or `symlink:<target>`. */
function tokenOf(state: PathState | { kind: 'file'; hash: string }): string {
  if (state.kind === 'file') return 'hash' in state ? state.hash : hashBytes(state.bytes);
  if (state.kind === 'symlink') return `symlink:${state.target}`;
  return state.kind;
}

/** The state before a recorded entry. */
function stateBefore(f: HistoryFile): PathState {
  if (f.old_kind === 'directory') return { kind: 'directory', mode: f.old_mode ?? 0o755 };
  if (f.old_kind === 'symlink') return { kind: 'symlink', target: f.old_target! };
  if (f.old_base64 === null) return { kind: 'absent' };
  return { kind: 'file', bytes: Buffer.from(f.old_base64, 'base64'), mode: f.old_mode ?? 0o644 };
}

/** The token of the state a recorded entry left. */
function tokenAfter(f: HistoryFile): string {
  if (f.new_kind === 'directory') return 'directory';
  if (f.new_kind === 'symlink') return `symlink:${f.new_target!}`;
  return f.new_hash ?? 'absent';
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
      if (!t) {
        byPath.set(f.path, {
          path: f.path,
          expected: tokenAfter(f),
          expectedIsFile: f.new_kind === undefined,
          restore: stateBefore(f),
        });
      } else t.restore = stateBefore(f);
    }
  }
  return [...byPath.values()];
}

/** Depth of a path (components), for ordering directory steps. */
function depthOf(p: string): number {
  return p.split(path.sep).length;
}

function textDiff(path: string, before: Buffer | null, after: Buffer | null): string {
  if ((before && !isUtf8(before)) || (after && !isUtf8(after))) return `Binary file ${path} differs\n`;
  // In bounded time, cut while produced (src/patch/window-diff.ts).
  const diff = boundedUnifiedDiff(
    before ? `a${path}` : '/dev/null',
    after ? `b${path}` : '/dev/null',
    before?.toString('utf8') ?? '',
    after?.toString('utf8') ?? '',
    3,
    1024 * 1024,
  ).text;
  return diff.replace(/^=+\n/, '').replace(/^Index:.*\n/, '');
}

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
    const selected = select(args, visible(ctx, history.changes).shown);
    const targets = targetsOf(selected);
    const isInside = insideRoots(ctx);
    // Nothing lies beneath a link the revert recreates: no change the server records has an entry below a link (links
    // are never followed), and one written through the new link would land where the link points — authorized on the
    // lexical path, not there (a forged record: `P -> .git/hooks`, then `P/pre-commit`). Refused before anything.
    const links = targets.filter((t) => t.restore.kind === 'symlink').map((t) => t.path);
    for (const t of targets) {
      const link = links.find((l) => l !== t.path && isWithin(l, t.path));
      if (link !== undefined) {
        throw new ToolError(
          'NOT_ALLOWED',
          `${t.path} lies beneath the link ${link} being recreated; nothing reverted.`,
          {
            path: t.path,
          },
        );
      }
    }
    // Each path is authorized as a live write of it (a recorded path is a real path: one that resolves elsewhere now —
    // a link in it or above it — is refused).
    const authorized = new Map<string, AuthorizedWrite>();
    for (const t of targets) {
      // A file's path must still be a file (a link swapped in is refused as for any write); a directory's or link's
      // path is checked against what the change left, under the lock.
      const fileOnly = t.expectedIsFile && t.restore.kind !== 'directory' && t.restore.kind !== 'symlink';
      const w = await authorizeWrite(t.path, ctx.policy, {
        kind: fileOnly ? 'file' : 'any',
        mustExist: false,
        followFinal: false,
      });
      if (w.real !== t.path) {
        throw new ToolError('NOT_ALLOWED', `${t.path} no longer resolves to itself; it is not reverted.`, {
          path: t.path,
        });
      }
      // Lexical containment holds only for a target without `..` after a name (`dot/../..` follows `dot` first).
      if (t.restore.kind === 'symlink' && !(await linkTargetInside(ctx.policy.roots, t.path, t.restore.target))) {
        throw new ToolError('NOT_ALLOWED', `The link ${t.path} would point outside the roots; it is not recreated.`, {
          path: t.path,
        });
      }
      authorized.set(t.path, w);
    }
    const expectedOverride = args.expected_hashes ?? {};
    const { result } = await runMutation(ctx, {
      // A path inside a directory this revert may remove is not locked: its lock file (beside it, in that directory)
      // would keep the directory from being empty. The directory's own lock, in its parent, covers it.
      lockPaths: [...authorized.values()]
        .map((w) => w.real)
        .filter((p) => !targets.some((t) => t.expected === 'directory' && path.dirname(p) === t.path)),
      expectedStatusHash: undefined,
      statusPaths: [],
      dryRun: args.dry_run,
      decide: async (scope) => {
        const changes: PlannedChange[] = [];
        const files: z.output<typeof RevertChangesOutput>['files'] = [];
        const entries: HistoryFile[] = [];
        /** Directory and link steps around the journaled file transaction (see the README: not journaled). */
        const pre: Array<{ order: number; run: () => Promise<void>; what: string }> = [];
        const post: Array<{ order: number; run: () => Promise<void>; what: string }> = [];
        let diff = '';
        // Every path of every selected change is checked before anything is written; one envelope names them all
        // (the first at top level, each in details.files).
        const currents: Array<{ state: PathState; file: CurrentFile | null; token: string }> = [];
        const moved: OccMismatchError[] = [];
        for (const t of targets) {
          const real = authorized.get(t.path)!.real;
          const where = scope.parent(real);
          const st = where ? where.dir.lstat(where.name) : null;
          let now: { state: PathState; file: CurrentFile | null; token: string };
          if (st?.isDirectory()) now = { state: { kind: 'directory', mode: st.mode }, file: null, token: 'directory' };
          else if (st?.isSymbolicLink()) {
            const target = where!.dir.readlink(where!.name);
            now = { state: { kind: 'symlink', target }, file: null, token: `symlink:${target}` };
          } else if (st && !st.isFile()) now = { state: { kind: 'absent' }, file: null, token: 'other' };
          else {
            const file = await scope.current(real, { wantBytes: true, maxBytes: ctx.config.limits.maxEditBytes });
            now = file.exists
              ? {
                  state: { kind: 'file', bytes: file.bytes ?? Buffer.alloc(0), mode: file.stats!.mode },
                  file,
                  token: file.hash!,
                }
              : { state: { kind: 'absent' }, file, token: 'absent' };
          }
          currents.push(now);
          const override = expectedOverride[t.path];
          const expected = override ?? t.expected;
          if (now.token !== expected) {
            const currentHash = now.file?.hash ?? null;
            moved.push(
              new OccMismatchError(`${t.path} changed since the change(s) being reverted; nothing was reverted.`, {
                path: t.path,
                expectedHash: expected.startsWith('symlink:') ? 'symlink' : expected,
                currentHash,
                conflict: {
                  reason: now.token === 'absent' ? 'deleted' : expected === 'absent' ? 'created' : 'modified',
                },
                suggestion: t.expectedIsFile
                  ? 'Read the file; to revert anyway, pass expected_hashes with its current content_hash.'
                  : 'The directory or link changed since; restore it by hand or revert an older change only.',
              }),
            );
          }
        }
        // A directory the revert removes must hold only entries the revert removes too (a tree copied or
        // moved and then added to has changed since): checked here, so nothing is written when it does not.
        const removed = new Set(targets.filter((t) => t.restore.kind === 'absent').map((t) => t.path));
        for (const [i, t] of targets.entries()) {
          if (t.restore.kind !== 'absent' || currents[i].state.kind !== 'directory' || t.expected !== 'directory')
            continue;
          const where = scope.parent(authorized.get(t.path)!.real)!;
          const inside = where.dir.openDir(where.name);
          let names: string[];
          try {
            names = (await inside.readdir()).map((e) => e.name);
          } finally {
            inside.close();
          }
          const extra = names.filter((n) => !removed.has(path.join(t.path, n))).length;
          if (extra > 0) {
            moved.push(
              new OccMismatchError(
                `${t.path} holds ${extra} entr${extra === 1 ? 'y' : 'ies'} the change(s) being reverted did not create; nothing was reverted.`,
                {
                  path: t.path,
                  expectedHash: 'directory',
                  currentHash: null,
                  conflict: { reason: 'modified' },
                  suggestion: 'Move or delete what was added there first, or revert by hand.',
                },
              ),
            );
          }
        }
        if (moved.length > 0) {
          const first = moved[0];
          first.details.files = moved.map((m) => ({
            path: m.path,
            expected_hash: m.expectedHash,
            current_hash: m.currentHash,
          }));
          if (moved.length > 1) {
            first.message = `${moved.length} files changed since the change(s) being reverted (first ${first.path}); nothing was reverted.`;
          }
          throw first;
        }
        for (const [i, t] of targets.entries()) {
          const real = authorized.get(t.path)!.real;
          const now = currents[i];
          const restore = t.restore;
          const restoreHash = restore.kind === 'file' ? hashBytes(restore.bytes) : null;
          const type = restore.kind === 'directory' || restore.kind === 'symlink' ? restore.kind : now.state.kind;
          const action =
            now.token === tokenOf(restore)
              ? ('unchanged' as const)
              : restore.kind === 'absent'
                ? ('deleted' as const)
                : now.state.kind !== 'absent'
                  ? ('restored' as const)
                  : ('recreated' as const);
          files.push({
            path: t.path,
            action,
            previous_hash: now.file?.hash ?? null,
            content_hash: restoreHash,
            ...(type === 'directory' || type === 'symlink' ? { type } : {}),
          });
          if (action === 'unchanged') continue;
          entries.push(
            historyEntryOf(real, now.state, restore.kind === 'file' ? { kind: 'file', hash: restoreHash! } : restore),
          );
          const inParent = (fn: (dir: VerifiedDir, name: string) => void) => () =>
            withVerifiedDir(path.dirname(real), isInside, (dir) => fn(dir, path.basename(real)));
          const depth = depthOf(real);
          // What is there now goes first (a link or a directory), unless a file: the transaction replaces files.
          if (now.state.kind === 'symlink') {
            const target = now.state.target;
            const unlink = inParent((dir, name) => {
              const st = dir.lstat(name);
              if (!st?.isSymbolicLink() || dir.readlink(name) !== target) throw changedError(real);
              dir.unlink(name);
            });
            (restore.kind === 'absent' ? post : pre).push({ order: -depth, run: unlink, what: `removed link ${real}` });
          } else if (now.state.kind === 'directory') {
            if (restore.kind !== 'absent') {
              throw new ToolError(
                'VALIDATION',
                `${real} is a directory now; reverting it to a ${restore.kind} is not supported.`,
                {
                  path: real,
                  details: { reason: 'unsupported_revert' },
                },
              );
            }
            post.push({
              order: -depth,
              run: inParent((dir, name) => dir.rmdir(name)),
              what: `removed directory ${real}`,
            });
          }
          const fromFile = now.state.kind === 'file';
          if (restore.kind === 'directory') {
            const mode = restore.mode & 0o777;
            (fromFile ? post : pre).push({
              order: depth,
              run: inParent((dir, name) => {
                dir.mkdir(name, mode);
                dir.chmod(name, mode);
              }),
              what: `created directory ${real}`,
            });
          } else if (restore.kind === 'symlink') {
            const target = restore.target;
            (fromFile ? post : pre).push({
              order: depth + 0.5,
              run: inParent((dir, name) => dir.symlink(target, name)),
              what: `created link ${real}`,
            });
          }
          if (fromFile || restore.kind === 'file') {
            const restoreBytes = restore.kind === 'file' ? restore.bytes : null;
            if (args.dry_run) diff += textDiff(t.path, now.file?.bytes ?? null, restoreBytes);
            changes.push({
              real,
              oldBytes: fromFile ? (now.file?.bytes ?? null) : null,
              oldHash: fromFile ? (now.file?.hash ?? null) : null,
              oldIdentity: fromFile && now.file?.stats ? identityOf(now.file.stats) : null,
              oldMode: fromFile && now.file?.stats ? now.file.stats.mode & 0o7777 : null,
              newBytes: restoreBytes,
              newHash: restoreHash,
              newMode: fromFile || restore.kind !== 'file' ? null : restore.mode,
              dir: scope.parent(real)?.dir,
            });
          } else if (args.dry_run) {
            diff += `${action} ${type} ${t.path}\n`;
          }
        }
        pre.sort((a, b) => a.order - b.order);
        post.sort((a, b) => a.order - b.order);
        const diffTruncated = diff.length > MAX_DIFF_CHARS;
        const steps = changes.length + pre.length + post.length;
        return {
          result: { files, diff: diffTruncated ? diff.slice(0, MAX_DIFF_CHARS) : diff, diffTruncated },
          done: `reverted ${steps} path(s)`,
          effect: steps
            ? async () => {
                const done: string[] = [];
                const run = async (list: typeof pre) => {
                  for (const step of list) {
                    await step.run();
                    done.push(step.what);
                  }
                };
                try {
                  await run(pre);
                  if (changes.length) {
                    await commitTransaction(changes, { stateDir: ctx.config.stateDir, isInside });
                    done.push(`reverted ${changes.length} file(s)`);
                  }
                  await run(post);
                } catch (error) {
                  if (done.length === 0) throw error;
                  throw afterEffect(error, done.join('; '));
                }
              }
            : undefined,
          remember: () => {
            for (const c of changes) {
              if (c.newBytes) ctx.hashes.remember(c.real, c.newHash!, c.newBytes);
              else ctx.hashes.forget(c.real);
            }
          },
          history: { tool: 'revert_changes', reverts: selected.map((c) => c.id), files: entries },
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

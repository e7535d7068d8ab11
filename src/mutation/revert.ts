/**
 * The steps of revert_changes (src/tools/undo.ts declares the tool): which changes and paths a call selects, each path
 * authorized as a live write before the lock, then inside the lock the current state of every path checked against
 * what the reverted change(s) left, and the effect — directory and link steps around one journaled file transaction
 * (src/patch/transaction.ts), so a revert is atomic across files and itself a recorded change.
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { OccMismatchError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyEntryOf, type HistoryChange, type HistoryFile, type PathState } from '../fs/history.js';
import type { CurrentFile } from '../fs/read-current.js';
import { afterEffect } from '../fs/tree-ops.js';
import { changedError, withVerifiedDir, type VerifiedDir } from '../fs/verified-dir.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { boundedUnifiedDiff } from '../patch/window-diff.js';
import { authorizeWrite, type AuthorizedWrite } from '../policy/authorize.js';
import { isWithin } from '../policy/containment.js';
import { linkTargetInside } from '../policy/link-target.js';
import type { ToolContext } from './context.js';
import type { MutationStep } from './pipeline.js';
import type { MutationScope } from './scope.js';

/** Most characters of diff a dry run returns. */
const MAX_DIFF_CHARS = 65_536;

/** The selector of revert_changes: exactly one of the three is set (the tool's `validate`). */
export interface RevertSelector {
  change_id?: string;
  last?: number;
  since?: string;
}

/** One path the revert touches: what it must hold now and what it goes back to. */
export interface RevertTarget {
  path: string;
  /** The state the newest selected change left, as a state token (see `tokenOf`). */
  expected: string;
  /** Whether the newest selected change left a file (or deleted one): its hash is what expected_hashes overrides. */
  expectedIsFile: boolean;
  /** The state before the oldest selected change. */
  restore: PathState;
}

/** One file of a revert's result (revert_changes' `files`). */
export interface RevertedFile {
  path: string;
  action: 'restored' | 'recreated' | 'deleted' | 'unchanged';
  previous_hash: string | null;
  content_hash: string | null;
  type?: 'directory' | 'symlink';
}

/** What a revert decided: the files' actions and, for a dry run, the diff (cut at MAX_DIFF_CHARS). */
export interface RevertResult {
  files: RevertedFile[];
  diff: string;
  diffTruncated: boolean;
}

/** A revert call as authorized before the lock (`authorizeRevert`). */
export interface RevertCall {
  selected: readonly HistoryChange[];
  targets: readonly RevertTarget[];
  /** Each target's path → its authorization as a live write (the real path is the recorded path). */
  authorized: ReadonlyMap<string, AuthorizedWrite>;
  /** expected_hashes: absolute path → the current hash (or "absent") to revert over anyway. */
  expectedOverride: Readonly<Record<string, string>>;
  dryRun: boolean;
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

/**
 * Selects the changes to revert among `changes` (the visible ones, oldest first), oldest first.
 * @throws ToolError NOT_FOUND (an unknown id, or an empty history for `last`)
 */
export function selectChanges(args: RevertSelector, changes: readonly HistoryChange[]): HistoryChange[] {
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
export function targetsOf(selected: readonly HistoryChange[]): RevertTarget[] {
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

/**
 * Authorizes every target as a live write of it, before the lock. Nothing may lie beneath a link the revert
 * recreates: no change the server records has an entry below a link (links are never followed), and one written
 * through the new link would land where the link points — authorized on the lexical path, not there (a forged record:
 * `P -> .git/hooks`, then `P/pre-commit`). A recorded path is a real path: one that resolves elsewhere now (a link in
 * it or above it) is refused, and a link is recreated only with a target inside the roots.
 * @returns each target's path → its authorization
 * @throws ToolError NOT_ALLOWED with details.reason beneath_recreated_link, symlink_in_path (no longer itself) or
 *   link_target_outside (docs/errors.md "A link where a file is written back"), and whatever
 *   authorizeWrite throws (NOT_ALLOWED, SECRET_DENIED, FILE_POLICY_DENIED, VALIDATION)
 */
export async function authorizeRevert(
  ctx: ToolContext,
  targets: readonly RevertTarget[],
): Promise<Map<string, AuthorizedWrite>> {
  const links = targets.filter((t) => t.restore.kind === 'symlink').map((t) => t.path);
  for (const t of targets) {
    const link = links.find((l) => l !== t.path && isWithin(l, t.path));
    if (link !== undefined) {
      throw new ToolError('NOT_ALLOWED', `${t.path} lies beneath the link ${link} being recreated; nothing reverted.`, {
        path: t.path,
        details: { reason: 'beneath_recreated_link' },
      });
    }
  }
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
        details: { reason: 'symlink_in_path' },
      });
    }
    // Lexical containment holds only for a target without `..` after a name (`dot/../..` follows `dot` first).
    if (t.restore.kind === 'symlink' && !(await linkTargetInside(ctx.policy.roots, t.path, t.restore.target))) {
      throw new ToolError('NOT_ALLOWED', `The link ${t.path} would point outside the roots; it is not recreated.`, {
        path: t.path,
        details: { reason: 'link_target_outside' },
      });
    }
    authorized.set(t.path, w);
  }
  return authorized;
}

/**
 * The paths a revert locks: every target but one inside a directory this revert may remove — its lock file (beside
 * it, in that directory) would keep the directory from being empty; the directory's own lock, in its parent, covers it.
 */
export function revertLockPaths(call: RevertCall): AuthorizedWrite['real'][] {
  return [...call.authorized.values()]
    .map((w) => w.real)
    .filter((p) => !call.targets.some((t) => t.expected === 'directory' && path.dirname(p) === t.path));
}

/** The current state of one target, read inside the lock. */
export interface CurrentState {
  state: PathState;
  file: CurrentFile | null;
  token: string;
}

/**
 * The inspect step of a revert, inside the lock: the current state of every target (kind, a file's bytes and hash),
 * read once through the scope's verified directories, in the targets' order.
 * @throws ToolError NOT_ALLOWED / VALIDATION from the verified directories; errno errors
 */
export async function inspectRevert(ctx: ToolContext, scope: MutationScope, call: RevertCall): Promise<CurrentState[]> {
  const currents: CurrentState[] = [];
  for (const t of call.targets) {
    const real = call.authorized.get(t.path)!.real;
    const where = scope.parent(real);
    const st = where ? where.dir.lstat(where.name) : null;
    if (st?.isDirectory()) {
      currents.push({ state: { kind: 'directory', mode: st.mode }, file: null, token: 'directory' });
    } else if (st?.isSymbolicLink()) {
      const target = where!.dir.readlink(where!.name);
      currents.push({ state: { kind: 'symlink', target }, file: null, token: `symlink:${target}` });
    } else if (st && !st.isFile()) {
      currents.push({ state: { kind: 'absent' }, file: null, token: 'other' });
    } else {
      const file = await scope.current(real, { wantBytes: true, maxBytes: ctx.config.limits.maxEditBytes });
      currents.push(
        file.exists
          ? {
              state: { kind: 'file', bytes: file.bytes ?? Buffer.alloc(0), mode: file.stats!.mode },
              file,
              token: file.hash!,
            }
          : { state: { kind: 'absent' }, file, token: 'absent' },
      );
    }
  }
  return currents;
}

/** One OCC_MISMATCH per target whose current state is not what the reverted change(s) left (or the override). */
function changedSince(call: RevertCall, currents: readonly CurrentState[]): OccMismatchError[] {
  const moved: OccMismatchError[] = [];
  for (const [i, t] of call.targets.entries()) {
    const now = currents[i];
    const expected = call.expectedOverride[t.path] ?? t.expected;
    if (now.token === expected) continue;
    moved.push(
      new OccMismatchError(`${t.path} changed since the change(s) being reverted; nothing was reverted.`, {
        path: t.path,
        expectedHash: expected.startsWith('symlink:') ? 'symlink' : expected,
        currentHash: now.file?.hash ?? null,
        conflict: {
          reason: now.token === 'absent' ? 'deleted' : expected === 'absent' ? 'created' : 'modified',
        },
        suggestion: t.expectedIsFile
          ? 'Read the file; to revert anyway, pass expected_hashes with its current content_hash.'
          : 'The directory or link changed since; restore it by hand or revert an older change only.',
      }),
    );
  }
  return moved;
}

/**
 * One OCC_MISMATCH per directory the revert removes that holds an entry the revert does not remove (a tree copied or
 * moved and then added to has changed since).
 */
async function grownDirectories(
  scope: MutationScope,
  call: RevertCall,
  currents: readonly CurrentState[],
): Promise<OccMismatchError[]> {
  const moved: OccMismatchError[] = [];
  const removed = new Set(call.targets.filter((t) => t.restore.kind === 'absent').map((t) => t.path));
  for (const [i, t] of call.targets.entries()) {
    if (t.restore.kind !== 'absent' || currents[i].state.kind !== 'directory' || t.expected !== 'directory') continue;
    const where = scope.parent(call.authorized.get(t.path)!.real)!;
    const inside = where.dir.openDir(where.name);
    let names: string[];
    try {
      names = (await inside.readdir()).map((e) => e.name);
    } finally {
      inside.close();
    }
    const extra = names.filter((n) => !removed.has(path.join(t.path, n))).length;
    if (extra === 0) continue;
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
  return moved;
}

/**
 * The one envelope for every path that changed since: the first at top level, each in details.files.
 * @returns the OCC_MISMATCH to throw
 */
function oneConflict(moved: readonly OccMismatchError[]): OccMismatchError {
  const first = moved[0];
  first.details.files = moved.map((m) => ({
    path: m.path,
    expected_hash: m.expectedHash,
    current_hash: m.currentHash,
  }));
  if (moved.length > 1) {
    first.message = `${moved.length} files changed since the change(s) being reverted (first ${first.path}); nothing was reverted.`;
  }
  return first;
}

/** A directory or link step around the journaled file transaction (not journaled: see docs/tools.md). */
interface RevertStep {
  order: number;
  run: () => Promise<void>;
  what: string;
}

/** Everything a revert will do, planned inside the lock. */
interface RevertPlan {
  /** The file writes: one journaled transaction. */
  changes: PlannedChange[];
  files: RevertedFile[];
  /** The revert's own undo record. */
  entries: HistoryFile[];
  /** Steps before the transaction (removing what is in a path's way, creating directories and links). */
  pre: RevertStep[];
  /** Steps after it (removing emptied directories and links, creating what replaces a file). */
  post: RevertStep[];
  diff: string;
}

/** Depth of a path (components), for ordering directory steps. */
function depthOf(p: string): number {
  return p.split(path.sep).length;
}

/** A unified diff of one file's revert (binary files: one line), for a dry run. */
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

/** A step on the entry `real` through its verified parent, opened when the step runs. */
function inParent(
  real: string,
  isInside: (p: string) => boolean,
  fn: (dir: VerifiedDir, name: string) => void,
): () => Promise<void> {
  return () => withVerifiedDir(path.dirname(real), isInside, (dir) => fn(dir, path.basename(real)));
}

/**
 * Plans the removal of what is at `real` now when it is a link or a directory (a file is replaced by the transaction).
 * @throws ToolError VALIDATION unsupported_revert (a directory now, to become a file or link)
 */
function planRemoval(
  plan: RevertPlan,
  real: string,
  now: CurrentState,
  restore: PathState,
  isInside: MutationScope['isInside'],
): void {
  const depth = depthOf(real);
  if (now.state.kind === 'symlink') {
    const target = now.state.target;
    const unlink = inParent(real, isInside, (dir, name) => {
      const st = dir.lstat(name);
      if (!st?.isSymbolicLink() || dir.readlink(name) !== target) throw changedError(real);
      dir.unlink(name);
    });
    (restore.kind === 'absent' ? plan.post : plan.pre).push({
      order: -depth,
      run: unlink,
      what: `removed link ${real}`,
    });
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
    plan.post.push({
      order: -depth,
      run: inParent(real, isInside, (dir, name) => dir.rmdir(name)),
      what: `removed directory ${real}`,
    });
  }
}

/** Plans the creation of a directory or link at `real` (after a file there is replaced, else before the files). */
function planCreation(
  plan: RevertPlan,
  real: string,
  now: CurrentState,
  restore: PathState,
  isInside: MutationScope['isInside'],
): void {
  const depth = depthOf(real);
  const fromFile = now.state.kind === 'file';
  if (restore.kind === 'directory') {
    const mode = restore.mode & 0o777;
    (fromFile ? plan.post : plan.pre).push({
      order: depth,
      run: inParent(real, isInside, (dir, name) => {
        dir.mkdir(name, mode);
        dir.chmod(name, mode);
      }),
      what: `created directory ${real}`,
    });
  } else if (restore.kind === 'symlink') {
    const target = restore.target;
    (fromFile ? plan.post : plan.pre).push({
      order: depth + 0.5,
      run: inParent(real, isInside, (dir, name) => dir.symlink(target, name)),
      what: `created link ${real}`,
    });
  }
}

/** Plans one target's revert: its result line, its undo entry and its steps. */
function planTarget(
  plan: RevertPlan,
  scope: MutationScope,
  call: RevertCall,
  t: RevertTarget,
  now: CurrentState,
): void {
  const real = call.authorized.get(t.path)!.real;
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
  plan.files.push({
    path: t.path,
    action,
    previous_hash: now.file?.hash ?? null,
    content_hash: restoreHash,
    ...(type === 'directory' || type === 'symlink' ? { type } : {}),
  });
  if (action === 'unchanged') return;
  plan.entries.push(
    historyEntryOf(real, now.state, restore.kind === 'file' ? { kind: 'file', hash: restoreHash! } : restore),
  );
  // What is there now goes first (a link or a directory), unless a file: the transaction replaces files.
  planRemoval(plan, real, now, restore, scope.isInside);
  planCreation(plan, real, now, restore, scope.isInside);
  const fromFile = now.state.kind === 'file';
  if (fromFile || restore.kind === 'file') {
    const restoreBytes = restore.kind === 'file' ? restore.bytes : null;
    if (call.dryRun) plan.diff += textDiff(t.path, now.file?.bytes ?? null, restoreBytes);
    plan.changes.push({
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
  } else if (call.dryRun) {
    plan.diff += `${action} ${type} ${t.path}\n`;
  }
}

/**
 * The effect of a revert: the steps before, the journaled file transaction, the steps after.
 * @throws the first failure; with details.mutation_applied (src/fs/tree-ops.ts `afterEffect`) once a step was done
 */
async function runRevert(ctx: ToolContext, plan: RevertPlan, isInside: MutationScope['isInside']): Promise<void> {
  const done: string[] = [];
  const run = async (list: readonly RevertStep[]) => {
    for (const step of list) {
      await step.run();
      done.push(step.what);
    }
  };
  try {
    await run(plan.pre);
    if (plan.changes.length) {
      await commitTransaction(plan.changes, { stateDir: ctx.config.stateDir, isInside });
      done.push(`reverted ${plan.changes.length} file(s)`);
    }
    await run(plan.post);
  } catch (error) {
    if (done.length === 0) throw error;
    throw afterEffect(error, done.join('; '));
  }
}

/**
 * The decide step of a revert, on what `inspectRevert` read: every path of every selected change is checked before
 * anything is written, and one envelope names all that changed since; then the plan and its effect.
 * @throws OccMismatchError (a path changed since; details.files names each), ToolError VALIDATION unsupported_revert,
 *   NOT_ALLOWED / VALIDATION from the verified directories
 */
export async function decideRevert(
  ctx: ToolContext,
  scope: MutationScope,
  call: RevertCall,
  currents: readonly CurrentState[],
): Promise<MutationStep<RevertResult>> {
  const moved = [...changedSince(call, currents), ...(await grownDirectories(scope, call, currents))];
  if (moved.length > 0) throw oneConflict(moved);
  const plan: RevertPlan = { changes: [], files: [], entries: [], pre: [], post: [], diff: '' };
  for (const [i, t] of call.targets.entries()) planTarget(plan, scope, call, t, currents[i]);
  plan.pre.sort((a, b) => a.order - b.order);
  plan.post.sort((a, b) => a.order - b.order);
  const diffTruncated = plan.diff.length > MAX_DIFF_CHARS;
  const steps = plan.changes.length + plan.pre.length + plan.post.length;
  return {
    result: { files: plan.files, diff: diffTruncated ? plan.diff.slice(0, MAX_DIFF_CHARS) : plan.diff, diffTruncated },
    done: `reverted ${steps} path(s)`,
    effect: steps ? () => runRevert(ctx, plan, scope.isInside) : undefined,
    remember: () => {
      for (const c of plan.changes) {
        if (c.newBytes) ctx.hashes.remember(c.real, c.newHash!, c.newBytes);
        else ctx.hashes.forget(c.real);
      }
    },
    history: { tool: 'revert_changes', reverts: call.selected.map((c) => c.id), files: plan.entries },
  };
}

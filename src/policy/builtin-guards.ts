/**
 * Built-in rules that no flag or policy file can lift, beside the `.git` write rule of
 * file-policy.ts:
 *   - the state directory (journal; docs/tools.md) and the audit log (docs/security.md) are never reachable through the file
 *     tools, whatever the roots: nothing inside them is read, written, listed or searched
 *     (FILE_POLICY_DENIED, details.source "builtin", rule "state_dir" / "audit_log");
 *   - neither they nor a directory above them can be moved, replaced or deleted (rule as above, reason "contains");
 *   - listings and searches of a directory above them omit them (`isGuardedEntry`);
 *   - the server's own files (path locks, temporaries, copy trees: src/fs/own-files.ts) are one class, recognised in
 *     EVERY component of a path: omitted from listings and searches, never read, and never created, written, moved
 *     or deleted by a tool (an agent-planted lock would stall every writer of that path; a temporary holds a
 *     secret's bytes under a name that is not a secret). docs/security.md "Locks, temporaries and shutdown".
 * Each guarded path is kept in every spelling we know (as configured, and its real path), and a requested path is
 * compared in both its requested and its resolved spelling, like the `.git` and secret rules. Pure: no IO.
 */
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import { ownComponentOf, ownFileKind } from '../fs/own-files.js';
import { HOST_FLAVOR, isWithin } from './containment.js';

/** One path the file tools must never reach. */
export interface GuardedPath {
  /** Absolute path (one spelling). */
  path: string;
  rule: 'state_dir' | 'audit_log';
}

/**
 * The guarded paths of a process: the state directory and the audit log, each in every given spelling.
 * @param spellings absolute spellings per rule (configured path, its real path, the audit descriptor's real path)
 */
export function guardedPaths(spellings: { stateDir: readonly string[]; auditLog: readonly string[] }): GuardedPath[] {
  const out: GuardedPath[] = [];
  for (const p of new Set(spellings.stateDir)) out.push({ path: path.resolve(p), rule: 'state_dir' });
  for (const p of new Set(spellings.auditLog)) out.push({ path: path.resolve(p), rule: 'audit_log' });
  return out;
}

function within(guarded: readonly GuardedPath[], absolute: string): GuardedPath | undefined {
  return guarded.find((g) => isWithin(g.path, absolute, HOST_FLAVOR));
}

function refuse(requested: string, rule: string, reason?: string): ToolError {
  const what =
    rule === 'state_dir'
      ? "fs-tools' state directory"
      : rule === 'audit_log'
        ? 'the audit log'
        : rule === 'lock_file'
          ? "fs-tools' own path-lock file (or inside one)"
          : "fs-tools' own temporary file (or inside one)";
  const message =
    reason === 'contains'
      ? `${requested} contains ${what}; it can be neither moved, replaced nor deleted.`
      : `${requested} is ${what}, which the file tools never read, list or change.`;
  return new ToolError('FILE_POLICY_DENIED', message, {
    path: requested,
    details: { source: 'builtin', rule, ...(reason ? { reason } : {}) },
  });
}

/**
 * Refuses any access to a guarded path or anything inside it, and to every path with a component of the server's own
 * class (a lock, a temporary, a copy tree) — so no tool reads one, and none creates a lock-named entry anywhere.
 * @param spellings the requested absolute spelling and the resolved real path
 * @throws ToolError FILE_POLICY_DENIED (builtin, rule state_dir | audit_log | lock_file | own_temporary)
 */
export function assertNotGuarded(
  guarded: readonly GuardedPath[],
  requested: string,
  spellings: readonly string[],
): void {
  for (const p of spellings) {
    const hit = within(guarded, p);
    if (hit) throw refuse(requested, hit.rule);
    const own = ownComponentOf(p);
    if (own !== null) throw refuse(requested, ownFileKind(own) === 'lock' ? 'lock_file' : 'own_temporary');
  }
}

/**
 * `assertNotGuarded` for an entry `name` of a directory that passed it at the same spelling (a tree operation's walk,
 * pre-order): the guarded paths are compared with the whole path (a prefix test), the server's own classes only with
 * the new component — the ones above were judged with the directory, so the cost does not grow with the depth.
 * @throws ToolError FILE_POLICY_DENIED (builtin, rule state_dir | audit_log | lock_file | own_temporary)
 */
export function assertEntryNotGuarded(guarded: readonly GuardedPath[], absolute: string, name: string): void {
  const hit = within(guarded, absolute);
  if (hit) throw refuse(absolute, hit.rule);
  // As `ownComponentOf` reads a path: each backslash-separated part of a name counts as a component too.
  const own = ownComponentOf(name);
  if (own !== null) throw refuse(absolute, ownFileKind(own) === 'lock' ? 'lock_file' : 'own_temporary');
}

/**
 * Refuses moving, replacing or deleting a directory that holds a guarded path (docs/security.md: a directory above the log can
 * otherwise be moved away and replaced by one whose `audit.log` links elsewhere).
 * @throws ToolError FILE_POLICY_DENIED (builtin, reason "contains")
 */
export function assertHoldsNoGuarded(
  guarded: readonly GuardedPath[],
  requested: string,
  spellings: readonly string[],
): void {
  for (const p of spellings) {
    const hit = guarded.find((g) => isWithin(p, g.path, HOST_FLAVOR));
    if (hit) throw refuse(requested, hit.rule, 'contains');
  }
}

/**
 * True when a directory entry found by a walk must be omitted: a guarded path (or inside one), or one of the server's
 * own files (a walk descends nothing it omits, so the entry's own name settles it).
 */
export function isGuardedEntry(guarded: readonly GuardedPath[], absolute: string): boolean {
  return within(guarded, absolute) !== undefined || ownFileKind(path.basename(absolute)) !== null;
}

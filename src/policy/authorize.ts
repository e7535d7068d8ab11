/**
 * The only policy entry point tools call. Each `authorize*` runs the SPEC §3.3 checks in order, from ROOTS_EMPTY on:
 *   4 ROOTS_EMPTY → 5 NOT_ALLOWED (resolve-path) → 6 SECRET_DENIED (secrets), FILE_POLICY_DENIED (file-policy)
 *   → 7 NOT_FOUND, VALIDATION (existence and kind).
 * Steps 1–3 (lookup, arguments, gates) run earlier in src/server/call-tool.ts; 8–10 belong to the operation.
 */
import type { Stats } from 'node:fs';
import { ToolError } from '../errors/tool-error.js';
import { toPosixRelative } from './containment.js';
import { accessFor, assertPolicyAllows, type Access, type FilePolicy } from './file-policy.js';
import { resolveInRoots, type ResolvedPath } from './resolve-path.js';
import type { EffectiveRoot } from './roots.js';
import { assertNotSecret, secretRuleFor } from './secrets.js';

/** What policy needs to decide. Built per call from the process state. */
export interface PolicyContext {
  roots: readonly EffectiveRoot[];
  allowSecrets: boolean;
  policy: FilePolicy;
}

/** The kind of filesystem object a tool needs. `any` accepts every kind (stat). */
export type WantedKind = 'file' | 'directory' | 'any';

/** A path that passed every read check and exists. */
export interface AuthorizedPath extends ResolvedPath {
  stats: Stats;
  /** `real` relative to its root, `/`-separated ('' for the root itself). */
  relative: string;
  /** The policy's access level for this path (null: unrestricted). */
  access: Access | null;
}

/** Human name of a Stats kind, as reported by stat and list_directory. */
export function kindOf(stats: Stats): 'file' | 'directory' | 'symlink' | 'fifo' | 'socket' | 'block_device'
  | 'char_device' | 'other' {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isSocket()) return 'socket';
  if (stats.isBlockDevice()) return 'block_device';
  if (stats.isCharacterDevice()) return 'char_device';
  return 'other';
}

/**
 * Authorizes reading `requested` (SPEC §3.3 steps 4–7).
 * @throws ToolError ROOTS_EMPTY, NOT_ALLOWED, VALIDATION (NUL, wrong kind), SECRET_DENIED, FILE_POLICY_DENIED (policy
 *   deny; FIFOs, sockets and devices for kind 'file'), NOT_FOUND (missing or hidden)
 */
export async function authorizeRead(requested: string, ctx: PolicyContext,
  options: { kind: WantedKind; field?: string; secrets?: 'deny' | 'flag' }): Promise<AuthorizedPath> {
  const resolved = await resolveInRoots(requested, ctx.roots, { followFinal: true }, options.field);
  // stat only flags secrets (SPEC §4.2 denies read, write, move, delete and content search, not metadata).
  if (options.secrets !== 'flag') assertNotSecret(resolved.absolute, resolved.real, ctx.allowSecrets);
  const relative = toPosixRelative(resolved.root.real, resolved.real);
  const access = accessFor(ctx.policy, relative);
  assertPolicyAllows(access, 'read', resolved.absolute, relative);
  if (!resolved.stats) {
    throw new ToolError('NOT_FOUND', `No such file or directory: ${resolved.absolute}.`, { path: resolved.absolute });
  }
  assertKind(resolved.stats, options.kind, resolved.absolute);
  return { ...resolved, stats: resolved.stats, relative, access };
}

/**
 * @throws ToolError VALIDATION (directory for a file, file for a directory), FILE_POLICY_DENIED (special files are
 *   never opened: SPEC §4.3 — reading a FIFO would hang the server)
 */
export function assertKind(stats: Stats, wanted: WantedKind, absolute: string): void {
  if (wanted === 'any') return;
  if (wanted === 'directory' && !stats.isDirectory()) {
    throw new ToolError('VALIDATION', `${absolute} is not a directory.`, {
      path: absolute, details: { reason: 'not_a_directory', kind: kindOf(stats) },
      suggestion: 'Pass a directory path, or use read_file / stat for a file.',
    });
  }
  if (wanted === 'file') {
    if (stats.isDirectory()) {
      throw new ToolError('VALIDATION', `${absolute} is a directory, not a file.`, {
        path: absolute, details: { reason: 'is_directory' },
        suggestion: 'Use list_directory for a directory.',
      });
    }
    if (!stats.isFile()) {
      throw new ToolError('FILE_POLICY_DENIED', `${absolute} is a ${kindOf(stats)}; special files are never opened.`, {
        path: absolute, details: { source: 'builtin', rule: 'special_file', kind: kindOf(stats) },
      });
    }
  }
}

/** How a directory entry found by a walk is treated (listing, search): pure, no IO. */
export interface EntryVerdict {
  /** Omit it entirely (policy `hidden`). */
  hidden: boolean;
  /** Secret name (and secrets not allowed): listings mark it, search skips its content. */
  secret: boolean;
  /** Policy `deny`: listings show nothing of it, search skips it. */
  denied: boolean;
}

/** Classifies an entry at `relative` (to its root) with absolute path `absolute`. */
export function classifyEntry(ctx: PolicyContext, absolute: string, relative: string): EntryVerdict {
  const access = accessFor(ctx.policy, relative);
  return {
    hidden: access === 'hidden',
    denied: access === 'deny',
    secret: !ctx.allowSecrets && secretRuleFor(absolute) !== null,
  };
}

/**
 * apply_patch's plan (before the lock): which file each section of the diff reads and writes, every path authorized
 * in the order of checks (docs/errors.md "Order of checks": containment of every file, then every file's secret and
 * policy checks, before any file's existence), and what each section does (create, modify, delete, rename).
 */
import path from 'node:path';
import { ToolError } from '../errors/tool-error.js';
import type { FilePatch } from '../patch/parse-unified.js';
import { assertWritesAllowed, authorizeWrite, type AuthorizedWrite } from '../policy/authorize.js';
import { resolveInRoots } from '../policy/resolve-path.js';
import type { ToolContext } from './context.js';
import { deletionIsConflict } from './occ-rules.js';

/** The arguments of apply_patch the plan and the steps read. */
export interface PatchArgs {
  /** Base directory of the diff's paths, or the one target file. */
  path?: string;
  /** Path (as in the diff, relative to the base, or absolute) → content hash or "absent". */
  expected_hashes?: Record<string, string>;
  expected_status_hash?: string;
  on_conflict?: 'fail' | 'merge';
  allow_rewrite: boolean;
  dry_run: boolean;
}

/** What one section of the diff does to its file. */
export type PatchAction = 'created' | 'modified' | 'deleted' | 'renamed';

/** One file of the patch, authorized. */
export interface PatchTarget {
  file: FilePatch;
  action: PatchAction;
  /** The file read and patched (old path for renames and deletes). */
  source: AuthorizedWrite;
  /** Where the result goes (new path; same as source unless renamed). */
  dest: AuthorizedWrite;
  /** The name expected_hashes is looked up by first (the diff's old path; headerless: the path argument). */
  key: string;
}

/** Finds expected_hashes' entry for a file: by the path as written in the diff, relative to base, or absolute. */
export function expectedFor(
  map: Record<string, string> | undefined,
  candidates: readonly (string | null | undefined)[],
): string | undefined {
  if (!map) return undefined;
  for (const c of candidates) if (c && map[c] !== undefined) return map[c];
  return undefined;
}

/** Where the diff's paths are: a base directory, or the one file `path` names (and whether it exists). */
interface PatchBase {
  base: string | null;
  single: string | null;
  singleExists: boolean;
}

/**
 * The files of a patch, authorized (steps 4–7 for every file; see the module comment).
 * @throws ToolError ROOTS_EMPTY, NOT_ALLOWED, SECRET_DENIED, FILE_POLICY_DENIED, NOT_FOUND, VALIDATION (invalid_base,
 *   single_target_multi_file, no_target, destination_exists, duplicate_file, nested_file)
 */
export async function resolvePatchTargets(
  files: FilePatch[],
  args: PatchArgs,
  ctx: ToolContext,
): Promise<PatchTarget[]> {
  const where = await patchBase(files, args, ctx);
  const { base, single } = where;
  // The header path is appended to the base as written, not joined: path.join would fold `link/..` lexically, and a
  // patch of `link-to-outside/../x` would then write `base/x` instead of being refused. resolveInRoots walks
  // the spelling the way the kernel does (`link/..` is the link target's parent), as for every other tool.
  const rel = (p: string) => (single !== null ? single : path.isAbsolute(p) ? p : `${base!}${path.sep}${p}`);
  // The order of checks across the whole patch: every file's containment, then every file's secret and policy
  // checks, before any file's existence (a missing or refused first file must not decide the code while a later one
  // lies outside).
  if (!files.some((f) => f.headerless && single === null)) {
    await assertWritesAllowed(
      files.flatMap((f) =>
        [...new Set([f.oldPath ?? f.newPath!, f.newPath ?? f.oldPath!])].map((name) => ({
          requested: rel(name),
          followFinal: true,
          field: 'patch',
        })),
      ),
      ctx.policy,
    );
  }
  const targets: PatchTarget[] = [];
  for (const file of files) targets.push(await authorizeSection(file, where, rel, args, ctx));
  assertEachFileOnce(targets);
  return targets;
}

/** The base of the diff's paths (see PatchBase). @throws ToolError ROOTS_EMPTY, VALIDATION invalid_base / single_target_multi_file */
async function patchBase(files: FilePatch[], args: PatchArgs, ctx: ToolContext): Promise<PatchBase> {
  if (args.path === undefined) {
    const base = ctx.policy.roots[0]?.real ?? null;
    if (base === null) await resolveInRoots('.', ctx.policy.roots, { followFinal: true }); // throws ROOTS_EMPTY
    return { base, single: null, singleExists: false };
  }
  const r = await resolveInRoots(args.path, ctx.policy.roots, { followFinal: true });
  if (r.stats?.isDirectory()) return { base: r.real, single: null, singleExists: false };
  if (!r.stats && files.length !== 1) {
    throw new ToolError(
      'VALIDATION',
      `${r.absolute} does not exist, and a patch of ${files.length} files needs a base directory.`,
      { path: r.absolute, details: { reason: 'invalid_base', field: 'path' } },
    );
  }
  if (files.length > 1) {
    throw new ToolError('VALIDATION', `path names one file, but the patch changes ${files.length} files.`, {
      details: { reason: 'single_target_multi_file', field: 'path' },
      suggestion: 'Pass a directory as path (or omit it) for a multi-file patch.',
    });
  }
  return { base: null, single: args.path, singleExists: r.stats !== null && r.stats !== undefined };
}

/**
 * What a section does. Headerless hunks (no ---/+++, so no /dev/null either) patch the `path` file; they create it
 * only when it does not exist and every hunk is pure addition.
 */
function actionOf(file: FilePatch, where: PatchBase): PatchAction {
  if (file.headerless) {
    return !where.singleExists && file.hunks.every((h) => h.lines.every((l) => l.op === '+')) ? 'created' : 'modified';
  }
  if (file.oldPath === null) return 'created';
  if (file.newPath === null) return 'deleted';
  return where.single === null && file.oldPath !== file.newPath ? 'renamed' : 'modified';
}

/** One section of the diff, authorized as its action needs. */
async function authorizeSection(
  file: FilePatch,
  where: PatchBase,
  rel: (p: string) => string,
  args: PatchArgs,
  ctx: ToolContext,
): Promise<PatchTarget> {
  if (file.headerless && where.single === null) {
    throw new ToolError('VALIDATION', 'The patch has no ---/+++ file headers, so its target is unknown.', {
      details: { reason: 'no_target', field: 'path' },
      suggestion: 'Pass path: the file the hunks apply to.',
    });
  }
  const action = actionOf(file, where);
  const oldName = file.oldPath ?? file.newPath!;
  const newName = file.newPath ?? file.oldPath!;
  const key = oldName ?? where.single!; // headerless: keyed by the path argument
  if (action === 'created') {
    const dest = await authorizeWrite(rel(newName), ctx.policy, { kind: 'file', mustExist: false, followFinal: true });
    return { file, action, source: dest, dest, key };
  }
  const source = await authorizeExisting(file, oldName, where, rel, args, ctx);
  if (action !== 'renamed') return { file, action, source, dest: source, key };
  const dest = await authorizeWrite(rel(newName), ctx.policy, { kind: 'file', mustExist: false, followFinal: true });
  if (dest.stats) {
    throw new ToolError('VALIDATION', `The patch renames to ${dest.absolute}, which already exists.`, {
      path: dest.absolute,
      details: { reason: 'destination_exists' },
    });
  }
  return { file, action, source, dest, key };
}

/**
 * An existing file the section reads. `diff -u` paths that really start with a/ or b/: the unstripped path is tried
 * when the stripped one is missing (the envelope then names the stripped, real target path, never the diff's prefix).
 * A file this session knows (or expected_hashes names by content) that is gone is OCC_MISMATCH deleted inside the
 * lock, not NOT_FOUND here.
 */
async function authorizeExisting(
  file: FilePatch,
  name: string,
  where: PatchBase,
  rel: (p: string) => string,
  args: PatchArgs,
  ctx: ToolContext,
): Promise<AuthorizedWrite> {
  const raw = file.rawOldPath;
  const knownToSession = (real: string) => {
    const expected = expectedFor(args.expected_hashes, [
      name,
      file.rawOldPath,
      file.rawNewPath,
      real,
      path.relative(ctx.policy.roots[0]?.real ?? '/', real),
    ]);
    return deletionIsConflict(ctx, expected)(real);
  };
  const options = { kind: 'file' as const, mustExist: true, followFinal: true, field: 'patch', knownToSession };
  const unstripped = () => authorizeWrite(rel(raw!), ctx.policy, { ...options, knownToSession: undefined });
  let stripped: AuthorizedWrite;
  try {
    stripped = await authorizeWrite(rel(name), ctx.policy, options);
  } catch (error) {
    if (error instanceof ToolError && error.code === 'NOT_FOUND' && raw && raw !== name && where.single === null) {
      try {
        return await unstripped();
      } catch (rawError) {
        if (rawError instanceof ToolError && rawError.code === 'NOT_FOUND') throw error;
        throw rawError;
      }
    }
    throw error;
  }
  if (stripped.stats || !raw || raw === name || where.single !== null) return stripped;
  // The stripped path is a known, deleted file: an existing unstripped path is still the target.
  try {
    return await unstripped();
  } catch {
    return stripped;
  }
}

/**
 * @throws ToolError VALIDATION duplicate_file when two sections touch one file, nested_file when one section's file
 *   lies below another's (`d` and `d/a.txt`: the one would need `d` to be a file and a directory at once)
 */
function assertEachFileOnce(targets: readonly PatchTarget[]): void {
  const seen = new Set<string>();
  for (const t of targets) {
    for (const p of new Set([t.source.real, t.dest.real])) {
      if (seen.has(p)) {
        throw new ToolError('VALIDATION', `The patch changes ${p} more than once.`, {
          path: p,
          details: { reason: 'duplicate_file' },
          suggestion: 'Merge the sections for this file into one.',
        });
      }
      seen.add(p);
    }
  }
  for (const p of seen) {
    for (let up = path.dirname(p); up !== path.dirname(up); up = path.dirname(up)) {
      if (!seen.has(up)) continue;
      throw new ToolError('VALIDATION', `The patch changes ${up} and ${p}, a path below it.`, {
        path: up,
        details: { reason: 'nested_file' },
        suggestion: `A path cannot be a file and a directory at once: drop the section for ${up} or for ${p}.`,
      });
    }
  }
}

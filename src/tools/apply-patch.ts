/**
 * apply_patch (docs/tools.md): apply a unified diff to one or several files as one transaction. The diff is parsed
 * during argument validation (BEGIN_PATCH, PATCH_FAILED malformed/no_hunks come before any path check: docs/errors.md "Order of checks"
 * step 2); then every file is authorized, hashed (OCC per file) and patched in memory; nothing is written unless every
 * file applies; then the journaled commit (src/patch/transaction.ts) writes them, rolling back on a failure part-way.
 */
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import { z } from 'zod';
import { OccMismatchError, PatchFailedError, ToolError } from '../errors/tool-error.js';
import { identityOf } from '../fs/atomic-write.js';
import { hashBytes } from '../fs/hash.js';
import { historyFileOf } from '../fs/history.js';
import type { CurrentFile } from '../fs/read-current.js';
import { toEolText } from '../patch/eol-text.js';
import { applyHunksSliced, type HunkReport } from '../patch/locate-hunks.js';
import { parseUnifiedDiff, type FilePatch } from '../patch/parse-unified.js';
import { assertNotRewriteSliced } from '../patch/rewrite-guard.js';
import { commitTransaction, type PlannedChange } from '../patch/transaction.js';
import { assertWritesAllowed, authorizeWrite, type AuthorizedWrite } from '../policy/authorize.js';
import { checkExpectedHash } from '../policy/occ.js';
import { resolveInRoots } from '../policy/resolve-path.js';
import {
  ContentHash,
  DryRun,
  ExpectedHash,
  ExpectedStatusHash,
  MergedResult,
  OnConflict,
  PathArg,
} from './common-schemas.js';
import { defineTool, type ToolContext } from './define-tool.js';
import { mergeInstead, type MergedInfo } from '../mutation/merge.js';
import { deletionIsConflict, hashRequiredForAll } from '../mutation/occ-rules.js';
import { runMutation } from '../mutation/pipeline.js';
import { insideRoots } from '../mutation/scope.js';
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

type FileResult = z.infer<typeof ApplyPatchOutput>['files'][number];

interface Target {
  file: FilePatch;
  action: FileResult['action'];
  /** The file read and patched (old path for renames and deletes). */
  source: AuthorizedWrite;
  /** Where the result goes (new path; same as source unless renamed). */
  dest: AuthorizedWrite;
  key: string;
}

/** Finds expected_hashes' entry for a file: by the path as written in the diff, relative to base, or absolute. */
function expectedFor(
  map: Record<string, string> | undefined,
  candidates: readonly (string | null | undefined)[],
): string | undefined {
  if (!map) return undefined;
  for (const c of candidates) if (c && map[c] !== undefined) return map[c];
  return undefined;
}

async function resolveTargets(
  files: FilePatch[],
  args: z.output<typeof ApplyPatchInput>,
  ctx: ToolContext,
): Promise<Target[]> {
  let base: string | null = null;
  let single: string | null = null;
  let singleExists = false;
  if (args.path === undefined) {
    base = ctx.policy.roots[0]?.real ?? null;
    if (base === null) await resolveInRoots('.', ctx.policy.roots, { followFinal: true }); // throws ROOTS_EMPTY
  } else {
    const r = await resolveInRoots(args.path, ctx.policy.roots, { followFinal: true });
    if (r.stats?.isDirectory()) base = r.real;
    else if (r.stats || files.length === 1) {
      single = args.path;
      singleExists = r.stats !== null && r.stats !== undefined;
    } else {
      throw new ToolError(
        'VALIDATION',
        `${r.absolute} does not exist, and a patch of ${files.length} files needs a base directory.`,
        {
          path: r.absolute,
          details: { reason: 'invalid_base', field: 'path' },
        },
      );
    }
  }
  if (single !== null && files.length > 1) {
    throw new ToolError('VALIDATION', `path names one file, but the patch changes ${files.length} files.`, {
      details: { reason: 'single_target_multi_file', field: 'path' },
      suggestion: 'Pass a directory as path (or omit it) for a multi-file patch.',
    });
  }
  // The header path is appended to the base as written, not joined: path.join would fold `link/..` lexically, and a
  // patch of `link-to-outside/../x` would then write `base/x` instead of being refused. resolveInRoots walks
  // the spelling the way the kernel does (`link/..` is the link target's parent), as for every other tool.
  const rel = (p: string) => (single !== null ? single : path.isAbsolute(p) ? p : `${base!}${path.sep}${p}`);
  // docs/errors.md "Order of checks" across the whole patch: every file's containment, then every file's secret and policy checks, before any
  // file's existence (a missing or refused first file must not decide the code while a later one lies outside).
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
  const targets: Target[] = [];
  for (const file of files) {
    if (file.headerless && single === null) {
      throw new ToolError('VALIDATION', 'The patch has no ---/+++ file headers, so its target is unknown.', {
        details: { reason: 'no_target', field: 'path' },
        suggestion: 'Pass path: the file the hunks apply to.',
      });
    }
    // Headerless hunks (no ---/+++, so no /dev/null either) patch the `path` file; they create it only when it does
    // not exist and every hunk is pure addition.
    const action: Target['action'] = file.headerless
      ? !singleExists && file.hunks.every((h) => h.lines.every((l) => l.op === '+'))
        ? 'created'
        : 'modified'
      : file.oldPath === null
        ? 'created'
        : file.newPath === null
          ? 'deleted'
          : single === null && file.oldPath !== file.newPath
            ? 'renamed'
            : 'modified';
    const oldName = file.oldPath ?? file.newPath!;
    const newName = file.newPath ?? file.oldPath!;
    // A file this session knows (or expected_hashes names by content) that is gone is OCC_MISMATCH deleted inside the
    // lock, not NOT_FOUND here.
    const knownToSession = (real: string) => {
      const expected = expectedFor(args.expected_hashes, [
        oldName,
        file.rawOldPath,
        file.rawNewPath,
        real,
        path.relative(ctx.policy.roots[0]?.real ?? '/', real),
      ]);
      return deletionIsConflict(ctx, expected)(real);
    };
    const authorizeExisting = async (name: string, raw: string | null, field: string) => {
      const options = { kind: 'file' as const, mustExist: true, followFinal: true, field, knownToSession };
      let stripped: AuthorizedWrite;
      try {
        stripped = await authorizeWrite(rel(name), ctx.policy, options);
      } catch (error) {
        // `diff -u` paths that really start with a/ or b/: retry unstripped. When that is missing too, the envelope
        // names the stripped (real target) path, never the diff's prefix.
        if (error instanceof ToolError && error.code === 'NOT_FOUND' && raw && raw !== name && single === null) {
          try {
            return await authorizeWrite(rel(raw), ctx.policy, { ...options, knownToSession: undefined });
          } catch (rawError) {
            if (rawError instanceof ToolError && rawError.code === 'NOT_FOUND') throw error;
            throw rawError;
          }
        }
        throw error;
      }
      if (stripped.stats || !raw || raw === name || single !== null) return stripped;
      // The stripped path is a known, deleted file: an existing unstripped path is still the target.
      try {
        const unstripped = await authorizeWrite(rel(raw), ctx.policy, { ...options, knownToSession: undefined });
        return unstripped;
      } catch {
        return stripped;
      }
    };
    let source: AuthorizedWrite;
    let dest: AuthorizedWrite;
    if (action === 'created') {
      source = dest = await authorizeWrite(rel(newName), ctx.policy, {
        kind: 'file',
        mustExist: false,
        followFinal: true,
      });
    } else if (action === 'renamed') {
      source = await authorizeExisting(oldName, file.rawOldPath, 'patch');
      dest = await authorizeWrite(rel(newName), ctx.policy, { kind: 'file', mustExist: false, followFinal: true });
      if (dest.stats) {
        throw new ToolError('VALIDATION', `The patch renames to ${dest.absolute}, which already exists.`, {
          path: dest.absolute,
          details: { reason: 'destination_exists' },
        });
      }
    } else {
      source = dest = await authorizeExisting(oldName, file.rawOldPath, 'patch');
    }
    targets.push({ file, action, source, dest, key: oldName ?? single! }); // headerless: keyed by the path argument
  }
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
  return targets;
}

function decode(current: CurrentFile, absolute: string): string {
  const bytes = current.bytes ?? Buffer.alloc(0);
  if (!isUtf8(bytes)) {
    throw new ToolError('VALIDATION', `${absolute} is not valid UTF-8 text; a unified diff cannot patch it.`, {
      path: absolute,
      details: { reason: 'binary', current_hash: current.hash },
    });
  }
  return bytes.toString('utf8');
}

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
    const targets = await resolveTargets(files, args, ctx);
    const isInside = insideRoots(ctx);
    const lockPaths = targets.flatMap((t) => [t.source.real, t.dest.real]);
    const warnings: string[] = [];
    const { result: outcome, statusHash } = await runMutation(ctx, {
      lockPaths,
      expectedStatusHash: args.expected_status_hash,
      statusPaths: [targets[0].source.real, targets[0].dest.real],
      dryRun: args.dry_run,
      decide: async (scope) => {
        const changes: PlannedChange[] = [];
        const results: FileResult[] = [];
        // docs/errors.md "Order of checks" step 9 for every file first: an OCC_MISMATCH (any file) wins; every file needing a hash is listed in
        // one HASH_REQUIRED (all known problems in one envelope); then step 10 (the hunks) per file.
        const currents: CurrentFile[] = [];
        const hashRequired: ToolError[] = [];
        // on_conflict "merge": a modified file's OCC_MISMATCH, merged (or refused) with its hunks below.
        const onConflict = args.on_conflict ?? ctx.config.onConflict;
        const toMerge = new Map<number, OccMismatchError>();
        for (const [i, t] of targets.entries()) {
          // A created file's destination is read too (it must still be absent), through its verified parent.
          const current = await scope.current(t.source.real, {
            wantBytes: true,
            maxBytes: ctx.config.limits.maxEditBytes,
          });
          currents.push(current);
          const expected = expectedFor(args.expected_hashes, [
            t.key,
            t.file.rawOldPath,
            t.file.rawNewPath,
            t.source.absolute,
            t.source.real,
            path.relative(ctx.policy.roots[0]?.real ?? '/', t.source.real),
          ]);
          const occ = () =>
            checkExpectedHash({
              absolute: t.source.absolute,
              real: t.source.real,
              current: { hash: current.hash, bytes: current.bytes ?? undefined },
              expected,
              autoOcc: ctx.config.autoOcc,
              memory: ctx.hashes,
              field: `expected_hashes["${t.key}"]`,
            });
          if (t.action !== 'created' && !current.exists) {
            // Known to the session (or named by content): OCC_MISMATCH deleted. Otherwise it vanished.
            if (deletionIsConflict(ctx, expected)(t.source.real)) occ();
            throw new ToolError('NOT_FOUND', 'No such file or directory.', {
              path: t.source.absolute,
            });
          }
          if (t.action === 'renamed') {
            const dest = await scope.current(t.dest.real, { wantBytes: false, maxBytes: 0 });
            if (dest.exists) {
              throw new OccMismatchError(`The patch renames to ${t.dest.absolute}, which exists now.`, {
                path: t.dest.absolute,
                expectedHash: 'absent',
                currentHash: dest.hash,
                conflict: { reason: 'created' },
              });
            }
          }
          if (t.action === 'created') {
            if (current.exists) {
              throw new OccMismatchError(`The patch creates ${t.dest.absolute}, but it already exists.`, {
                path: t.dest.absolute,
                expectedHash: 'absent',
                currentHash: current.hash,
                conflict: { reason: 'created' },
              });
            }
          } else {
            try {
              const verdict = occ();
              if (verdict.warning) warnings.push(verdict.warning);
            } catch (error) {
              if (onConflict === 'merge' && t.action === 'modified' && error instanceof OccMismatchError) {
                toMerge.set(i, error);
                continue;
              }
              if (!(error instanceof ToolError) || error.code !== 'HASH_REQUIRED') throw error;
              hashRequired.push(error);
            }
          }
        }
        if (hashRequired.length) throw hashRequiredForAll(hashRequired);
        for (const [i, t] of targets.entries()) {
          const current = currents[i];
          const before = t.action === 'created' ? '' : decode(current, t.source.absolute);
          let applied: { text: string; hunks: HunkReport[] };
          let merged: MergedInfo | undefined;
          const mismatch = toMerge.get(i);
          try {
            if (mismatch) {
              // The hunks apply to the version read (their lines are that version's); the merge then goes on disk.
              let onBase: HunkReport[] = [];
              const m = await mergeInstead(ctx, mismatch, t.source.real, current.bytes, async (baseText) => {
                const r = await applyHunksSliced(baseText, t.file, t.source.absolute);
                onBase = r.hunks;
                return r.text;
              });
              applied = { text: m.text, hunks: onBase };
              merged = m.merged;
            } else {
              applied = t.file.hunks.length
                ? await applyHunksSliced(before, t.file, t.source.absolute)
                : { text: before, hunks: [] };
            }
          } catch (error) {
            if (error instanceof PatchFailedError) {
              error.details.current_hash = current.hash;
              error.details.file = t.source.absolute;
            }
            throw error;
          }
          if (t.action === 'deleted' && applied.text !== '') {
            throw new PatchFailedError(
              `The patch deletes ${t.source.absolute}, but its hunks do not cover the whole file.`,
              {
                path: t.source.absolute,
                details: { reason: 'no_match', current_hash: current.hash, file: t.source.absolute },
                suggestion: 'Regenerate the deletion diff from the current file, or use delete_path.',
              },
            );
          }
          if (t.action === 'modified' || t.action === 'renamed') {
            await assertNotRewriteSliced(
              toEolText(before).view,
              toEolText(applied.text).view,
              args.allow_rewrite,
              t.source.absolute,
            );
          }
          const newBytes = t.action === 'deleted' ? null : Buffer.from(applied.text, 'utf8');
          const newHash = newBytes ? hashBytes(newBytes) : null;
          const oldMode = current.stats ? current.stats.mode & 0o7777 : null;
          if (t.action === 'renamed') {
            changes.push({
              real: t.dest.real,
              oldBytes: null,
              oldHash: null,
              oldIdentity: null,
              oldMode: null,
              newBytes,
              newHash,
              dir: scope.parent(t.dest.real)?.dir,
            });
            changes.push({
              real: t.source.real,
              oldBytes: current.bytes,
              oldHash: current.hash,
              oldIdentity: current.stats ? identityOf(current.stats) : null,
              oldMode,
              newBytes: null,
              newHash: null,
              dir: scope.parent(t.source.real)?.dir,
            });
          } else {
            // The commit acts in the directories verified here (a missing parent is created by the commit).
            changes.push({
              real: t.dest.real,
              oldBytes: current.bytes && current.exists ? current.bytes : null,
              oldHash: current.hash,
              oldIdentity: current.stats ? identityOf(current.stats) : null,
              oldMode,
              newBytes,
              newHash,
              dir: scope.parent(t.dest.real)?.dir,
            });
          }
          results.push({
            path: t.dest.real,
            action: t.action,
            ...(t.action === 'renamed' ? { from: t.source.real } : {}),
            hunks: applied.hunks,
            previous_hash: current.hash,
            content_hash: newHash,
            ...(merged ? { merged } : {}),
          });
        }
        return {
          result: results,
          done: `changed ${changes.length} file(s)`,
          history: {
            tool: 'apply_patch',
            files: changes.map((c) => historyFileOf(c.real, c.oldBytes, c.oldMode, c.newHash)),
          },
          effect: () => commitTransaction(changes, { stateDir: ctx.config.stateDir, isInside }),
          remember: () => {
            for (const c of changes) {
              if (c.newBytes) ctx.hashes.remember(c.real, c.newHash!, c.newBytes);
              else ctx.hashes.forget(c.real);
            }
          },
        };
      },
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

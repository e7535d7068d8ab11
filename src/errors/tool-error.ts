/**
 * Typed tool errors (docs/errors.md). Handlers and policy throw these; `to-envelope.ts` turns them (and bare Node errors)
 * into the envelope. Field names follow Node's errno errors (`code`, `path`), as node-tar's error classes do, so
 * the mapper reads a ToolError and an `fs` error the same way. Nothing here formats an envelope.
 */
import type { ErrorCode, Recovery } from './codes.js';

/** Options shared by every ToolError. */
export interface ToolErrorOptions {
  /** Absolute path concerned, or null/undefined. */
  path?: string | null;
  /** Typed values documented per code in codes.ts (numbers are numbers). */
  details?: Record<string, unknown>;
  /** The next call to make. Defaults to a per-code suggestion in the mapper. */
  suggestion?: string;
  /** Overrides the table's `retryable` (issue tools only: docs/issue-tools.md sets it per call). */
  retryable?: boolean;
  /** Overrides the table's `recovery` (issue tools; PATCH_FAILED malformed/no_hunks → fix_arguments). */
  recovery?: Recovery;
  /** The underlying error, kept for logs; never serialized. */
  cause?: unknown;
}

/** A failure with a docs/errors.md code. `message` is one sentence for a person. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  readonly code: ErrorCode;
  readonly path: string | null;
  readonly details: Record<string, unknown>;
  readonly suggestion: string | undefined;
  readonly retryable: boolean | undefined;
  readonly recovery: Recovery | undefined;

  constructor(code: ErrorCode, message: string, options: ToolErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path ?? null;
    this.details = options.details ?? {};
    this.suggestion = options.suggestion;
    this.retryable = options.retryable;
    this.recovery = options.recovery;
  }

  /**
   * Extra members placed in `error` beside `details` (docs/errors.md: OCC_MISMATCH carries `expected_hash`,
   * `current_hash`, `conflict` there). Subclasses override.
   */
  envelopeExtras(): Record<string, unknown> {
    return {};
  }
}

/** What changed between the expected and the current content (docs/errors.md). */
export interface OccConflict {
  /** `overlapping`: on_conflict "merge" found changes of both sides that overlap or touch (docs/errors.md). */
  reason: 'modified' | 'deleted' | 'created' | 'overlapping';
  /** 1-based inclusive line ranges of the current content that differ from the expected content, when known. */
  changed_ranges?: Array<[number, number]>;
  /** current size minus expected size, in bytes, when known. */
  bytes_delta?: number;
  /**
   * `overlapping` only: each region both sides changed, as 1-based inclusive line ranges of the read version (base),
   * the current file (theirs) and the caller's change applied to the read version (ours); an empty side [n, n-1].
   */
  overlapping?: Array<{ base: [number, number]; theirs: [number, number]; ours: [number, number] }>;
  /** Why on_conflict "merge" did not merge (a `modified` conflict): no file content, a fixed sentence. */
  note?: string;
}

/**
 * What a deleted file's OCC_MISMATCH tells the agent. There is nothing to re-read, so "read and rebase" and
 * `retryable: true` would send it in circles: the envelope says `retryable: false` (seed 001 lists OCC_MISMATCH among
 * the codes that MAY be retryable; this conflict cannot be resolved by acting on the envelope and calling again) and
 * `recovery: "fix_arguments"` — the only ways on change the arguments: re-create the file deliberately with
 * `expected_hash: "absent"` (write_file), or stop. Both are within seed 001's values.
 */
export const DELETED_CONFLICT_SUGGESTION =
  'The file was deleted after the version you expected; there is nothing to read. ' +
  'Stop, or re-create it deliberately with write_file and expected_hash: "absent".';

/** OCC_MISMATCH: the file is not what the caller expected (docs/errors.md "Optimistic concurrency"). */
export class OccMismatchError extends ToolError {
  readonly expectedHash: string;
  readonly currentHash: string | null;
  readonly conflict: OccConflict;

  constructor(
    message: string,
    fields: {
      path: string;
      expectedHash: string;
      currentHash: string | null;
      conflict: OccConflict;
      suggestion?: string;
    },
  ) {
    const deleted = fields.conflict.reason === 'deleted';
    super('OCC_MISMATCH', message, {
      path: fields.path,
      suggestion: fields.suggestion ?? (deleted ? DELETED_CONFLICT_SUGGESTION : undefined),
      ...(deleted ? { retryable: false, recovery: 'fix_arguments' as const } : {}),
    });
    this.expectedHash = fields.expectedHash;
    this.currentHash = fields.currentHash;
    this.conflict = fields.conflict;
  }

  override envelopeExtras(): Record<string, unknown> {
    return { expected_hash: this.expectedHash, current_hash: this.currentHash, conflict: this.conflict };
  }
}

/** docs/errors.md PATCH_FAILED details. Lines are 1-based. */
export interface PatchFailedDetails {
  reason: 'no_match' | 'ambiguous' | 'overlap' | 'already_applied' | 'malformed' | 'no_hunks';
  /** edit_file: index of the failing edit in `edits` (0-based). */
  edit_index?: number;
  /** apply_patch: 1-based number of the failing hunk (within its file). */
  hunk?: number;
  hunks?: number;
  /** Number of matches (ambiguous). */
  count?: number;
  expected?: string[];
  nearest?: unknown;
  candidates?: number[];
  current_hash?: string | null;
  /**
   * Every failing hunk (apply_patch, within one file) or edit (edit_file), in order, each with its own reason and
   * diagnosis (all known problems in one envelope). The first is also spread into the top-level fields.
   * Present only when two or more failed (with one, the top-level fields are that one); `failed_count` is the total.
   */
  failures?: Array<Record<string, unknown>>;
  failed_count?: number;
  [key: string]: unknown;
}

/**
 * PATCH_FAILED: an edit or hunk did not apply to the current content; nothing was written. `recovery` defaults to the
 * table's `read_and_rebase`; the patch-text failures (`malformed`, `no_hunks`) pass `fix_arguments` (
 * re-reading the file cannot repair a patch that has no usable hunk — the patch text is the problem).
 */
export class PatchFailedError extends ToolError {
  constructor(
    message: string,
    fields: { path?: string | null; details: PatchFailedDetails; suggestion?: string; recovery?: Recovery },
  ) {
    super('PATCH_FAILED', message, {
      path: fields.path ?? null,
      details: fields.details,
      suggestion: fields.suggestion,
      recovery: fields.recovery,
    });
  }
}

/** One file's fate in a rollback (docs/errors.md ROLLBACK_* details.files). */
export interface RollbackFile {
  path: string;
  status: 'restored' | 'not_restored' | 'left_alone';
  reason?: string;
}

/** ROLLBACK_COMPLETE / ROLLBACK_PARTIAL / ROLLBACK_FAILED: a multi-file change failed part-way. */
export class RollbackError extends ToolError {
  constructor(
    code: 'ROLLBACK_COMPLETE' | 'ROLLBACK_PARTIAL' | 'ROLLBACK_FAILED',
    message: string,
    fields: { files: RollbackFile[]; cause: unknown; causeEnvelope: Record<string, unknown> },
  ) {
    super(code, message, { details: { files: fields.files, cause: fields.causeEnvelope }, cause: fields.cause });
  }
}

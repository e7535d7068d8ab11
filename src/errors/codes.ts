/**
 * The one table of error codes (docs/errors.md, the normative envelope contract).
 *
 * Each code maps to its default `retryable` and `recovery`. Filesystem codes are fixed by this table; issue-tool
 * codes are defaults that `src/vcs` overrides per call (a read may retry a rate limit, a write never does).
 * `src/errors/to-envelope.ts` is the only reader of this table.
 */

/** What the caller should do next. docs/errors.md: the filesystem mapper uses only the first three. */
export type Recovery =
  'read_and_rebase' | 'check_already_applied' | 'fix_arguments' | 'retry_later' | 'fix_environment';

interface CodeInfo {
  readonly retryable: boolean;
  readonly recovery: Recovery;
}

const fix = { retryable: false, recovery: 'fix_arguments' } as const;
const rebase = { retryable: true, recovery: 'read_and_rebase' } as const;
const env = { retryable: false, recovery: 'fix_environment' } as const;
const checkApplied = { retryable: false, recovery: 'check_already_applied' } as const;

export const ERROR_CODES = {
  // ---- docs/errors.md filesystem codes ----
  /** Path (or its resolved target) outside the roots. details: { reason, roots: the real root paths in force } */
  NOT_ALLOWED: fix,
  /** Path missing inside the roots (or hidden by the file policy). details: { near?: up to 5 existing paths } */
  NOT_FOUND: fix,
  /** No sandbox roots are in force. details: {} */
  ROOTS_EMPTY: fix,
  /** Secret filename and no --allow-secrets. details: { pattern } */
  SECRET_DENIED: fix,
  /** File policy, a built-in rule or the OS refused. details: { source: "policy"|"builtin"|"os", rule?, errno? } */
  FILE_POLICY_DENIED: fix,
  /** Mutating call while --readonly. details: { tool } */
  READONLY: fix,
  /** Bad argument or wrong kind of path. details: { reason, field?, expected?, received?, closest? } */
  VALIDATION: fix,
  /** An edit or patch would rewrite nearly the whole file. details: { changed_ratio, threshold } */
  REWRITE_BLOCKED: fix,
  /** expected_hash does not match. Extra fields: expected_hash, current_hash, conflict. */
  OCC_MISMATCH: rebase,
  /** --auto-occ=block and no expected hash is known. details: { current_hash } */
  HASH_REQUIRED: rebase,
  /**
   * A hunk or edit did not apply. details: docs/errors.md PATCH_FAILED details, plus failures/failed_count when several
   * failed. docs/errors.md: recovery read_and_rebase; malformed/no_hunks override it to fix_arguments (the patch text).
   */
  PATCH_FAILED: { retryable: false, recovery: 'read_and_rebase' },
  /** Codex *** Begin Patch format. details: { line } */
  BEGIN_PATCH: fix,
  /** --mutation-budget reached. details: { used, limit } */
  BUDGET_EXCEEDED: fix,
  /** expected_status_hash does not match. details: { current_status_hash } */
  STALE_GIT: rebase,
  /** The tool exists but is disabled in this process. details: { tool } */
  TOOL_UNAVAILABLE: fix,
  /** A multi-file change failed and every file was restored. details: { files, cause } */
  ROLLBACK_COMPLETE: checkApplied,
  /** … only some files could be restored. */
  ROLLBACK_PARTIAL: checkApplied,
  /** … none could be restored. */
  ROLLBACK_FAILED: checkApplied,
  /** An OS failure other than the above. details: { errno, syscall? } */
  IO_ERROR: fix,
  /** A bug. details: { incident_id } (also logged to stderr with the stack). */
  INTERNAL: fix,

  // ---- docs/issue-tools.md issue-tool codes (defaults; src/vcs sets retryable/recovery per call) ----
  GH_CLI_MISSING: env,
  GH_AUTH_REQUIRED: env,
  GH_FORBIDDEN: env,
  GH_NOT_FOUND: fix,
  GH_RATE_LIMIT: { retryable: true, recovery: 'retry_later' },
  GH_NETWORK: { retryable: true, recovery: 'retry_later' },
  GH_AMBIGUOUS: fix,
  GH_REPO_UNRESOLVED: fix,
  GH_OUTPUT_LIMIT: fix,
  GH_NOT_ISSUE: fix,
  GH_HOST_DENIED: fix,
  GH_FAILED: fix,
  GL_AUTH_REQUIRED: env,
  GL_FORBIDDEN: env,
  GL_NOT_FOUND: fix,
  GL_NETWORK: { retryable: true, recovery: 'retry_later' },
  GL_AMBIGUOUS: fix,
  GL_REPO_UNRESOLVED: fix,
  GL_FAILED: fix,
} as const satisfies Record<string, CodeInfo>;

/** Every code the envelope may carry; the compiler rejects a misspelled code anywhere. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** All codes in table order (used by the envelope JSON schema and the pin test). */
export const ALL_ERROR_CODES = Object.keys(ERROR_CODES) as ErrorCode[];

/** All recovery values, in docs/issue-tools.md order. */
export const ALL_RECOVERIES: readonly Recovery[] = [
  'read_and_rebase',
  'check_already_applied',
  'fix_arguments',
  'retry_later',
  'fix_environment',
];

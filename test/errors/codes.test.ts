/**
 * Pins the whole error-code table (src/errors/codes.ts) against SPEC §3.1 and §3.2 and seeds/001: every filesystem
 * code with its retryable and recovery exactly as the SPEC table says (retryable only OCC_MISMATCH, HASH_REQUIRED,
 * STALE_GIT; PATCH_FAILED is read_and_rebase but not retryable; ROLLBACK_* check_already_applied); the §3.2 issue
 * codes and their defaults; the table order; the recovery vocabulary; the envelope schema's enums. Renaming, adding
 * or dropping a code, or changing a flag, turns this red.
 */
import { describe, expect, test } from 'vitest';
import { ALL_ERROR_CODES, ALL_RECOVERIES, ERROR_CODES, type ErrorCode, type Recovery } from '../../src/errors/codes.js';
import { EnvelopeErrorSchema } from '../../src/errors/envelope-schema.js';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import { ToolError } from '../../src/errors/tool-error.js';

/** SPEC §3.1, row by row: code, retryable, recovery. */
const SPEC_FILESYSTEM: Array<[string, boolean, Recovery]> = [
  ['NOT_ALLOWED', false, 'fix_arguments'],
  ['NOT_FOUND', false, 'fix_arguments'],
  ['ROOTS_EMPTY', false, 'fix_arguments'],
  ['SECRET_DENIED', false, 'fix_arguments'],
  ['FILE_POLICY_DENIED', false, 'fix_arguments'],
  ['READONLY', false, 'fix_arguments'],
  ['VALIDATION', false, 'fix_arguments'],
  ['REWRITE_BLOCKED', false, 'fix_arguments'],
  ['OCC_MISMATCH', true, 'read_and_rebase'],
  ['HASH_REQUIRED', true, 'read_and_rebase'],
  ['PATCH_FAILED', false, 'read_and_rebase'],
  ['BEGIN_PATCH', false, 'fix_arguments'],
  ['BUDGET_EXCEEDED', false, 'fix_arguments'],
  ['STALE_GIT', true, 'read_and_rebase'],
  ['TOOL_UNAVAILABLE', false, 'fix_arguments'],
  ['ROLLBACK_COMPLETE', false, 'check_already_applied'],
  ['ROLLBACK_PARTIAL', false, 'check_already_applied'],
  ['ROLLBACK_FAILED', false, 'check_already_applied'],
  ['IO_ERROR', false, 'fix_arguments'],
  ['INTERNAL', false, 'fix_arguments'],
];

/** SPEC §3.2 and seeds/001, with the table's per-code defaults (src/vcs overrides per call). */
const SPEC_ISSUE: Array<[string, boolean, Recovery]> = [
  ['GH_CLI_MISSING', false, 'fix_environment'],
  ['GH_AUTH_REQUIRED', false, 'fix_environment'],
  ['GH_FORBIDDEN', false, 'fix_environment'],
  ['GH_NOT_FOUND', false, 'fix_arguments'],
  ['GH_RATE_LIMIT', true, 'retry_later'],
  ['GH_NETWORK', true, 'retry_later'],
  ['GH_AMBIGUOUS', false, 'fix_arguments'],
  ['GH_REPO_UNRESOLVED', false, 'fix_arguments'],
  ['GH_OUTPUT_LIMIT', false, 'fix_arguments'],
  ['GH_NOT_ISSUE', false, 'fix_arguments'],
  ['GH_HOST_DENIED', false, 'fix_arguments'],
  ['GH_FAILED', false, 'fix_arguments'],
  ['GL_AUTH_REQUIRED', false, 'fix_environment'],
  ['GL_FORBIDDEN', false, 'fix_environment'],
  ['GL_NOT_FOUND', false, 'fix_arguments'],
  ['GL_NETWORK', true, 'retry_later'],
  ['GL_AMBIGUOUS', false, 'fix_arguments'],
  ['GL_REPO_UNRESOLVED', false, 'fix_arguments'],
  ['GL_FAILED', false, 'fix_arguments'],
];

describe('ERROR_CODES pin', () => {
  test('the table is exactly SPEC §3.1 followed by SPEC §3.2, in that order', () => {
    expect(ALL_ERROR_CODES).toEqual([...SPEC_FILESYSTEM, ...SPEC_ISSUE].map(([code]) => code));
    expect(Object.keys(ERROR_CODES)).toEqual(ALL_ERROR_CODES);
  });

  test.each(SPEC_FILESYSTEM)('§3.1 %s: retryable %j, recovery %j', (code, retryable, recovery) => {
    expect(ERROR_CODES[code as ErrorCode]).toEqual({ retryable, recovery });
  });

  test.each(SPEC_ISSUE)('§3.2 %s: default retryable %j, recovery %j', (code, retryable, recovery) => {
    expect(ERROR_CODES[code as ErrorCode]).toEqual({ retryable, recovery });
  });

  test('seeds/001: among filesystem codes only OCC_MISMATCH, HASH_REQUIRED and STALE_GIT are retryable', () => {
    const retryable = SPEC_FILESYSTEM.map(([c]) => c).filter((c) => ERROR_CODES[c as ErrorCode].retryable);
    expect(retryable).toEqual(['OCC_MISMATCH', 'HASH_REQUIRED', 'STALE_GIT']);
  });

  test('seeds/001: recovery groups of the filesystem mapper', () => {
    const group = (r: Recovery) =>
      SPEC_FILESYSTEM.map(([c]) => c).filter((c) => ERROR_CODES[c as ErrorCode].recovery === r);
    expect(group('read_and_rebase')).toEqual(['OCC_MISMATCH', 'HASH_REQUIRED', 'PATCH_FAILED', 'STALE_GIT']);
    expect(group('check_already_applied')).toEqual(['ROLLBACK_COMPLETE', 'ROLLBACK_PARTIAL', 'ROLLBACK_FAILED']);
    expect(group('fix_arguments')).toHaveLength(SPEC_FILESYSTEM.length - 7);
    expect(group('retry_later')).toEqual([]);
    expect(group('fix_environment')).toEqual([]);
  });

  test("the recovery vocabulary is SPEC §3.2's five values", () => {
    expect(ALL_RECOVERIES).toEqual([
      'read_and_rebase',
      'check_already_applied',
      'fix_arguments',
      'retry_later',
      'fix_environment',
    ]);
  });

  test('GitLab has no codes of its own for what GH_RATE_LIMIT, GH_OUTPUT_LIMIT and GH_HOST_DENIED cover', () => {
    for (const code of ['GL_RATE_LIMIT', 'GL_OUTPUT_LIMIT', 'GL_HOST_DENIED', 'GL_CLI_MISSING', 'GL_NOT_ISSUE']) {
      expect(ALL_ERROR_CODES).not.toContain(code);
    }
  });

  test('the envelope schema accepts exactly these codes and recoveries', () => {
    expect(EnvelopeErrorSchema.shape.code.options).toEqual(ALL_ERROR_CODES);
    expect(EnvelopeErrorSchema.shape.recovery.options).toEqual([...ALL_RECOVERIES]);
  });

  test.each(ALL_ERROR_CODES)('%s: a bare ToolError maps to its table defaults and a non-empty suggestion', (code) => {
    const e = toEnvelope(new ToolError(code, 'm')).error;
    expect(e.code).toBe(code);
    expect(e.retryable).toBe(ERROR_CODES[code].retryable);
    expect(e.recovery).toBe(ERROR_CODES[code].recovery);
    expect(e.suggestion.length).toBeGreaterThan(0);
    expect(EnvelopeErrorSchema.safeParse(e).success).toBe(true);
  });
});

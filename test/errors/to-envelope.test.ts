/**
 * Pins the one mapper (SPEC §3, STYLE §4.4): a ToolError becomes its envelope with exactly the keys code, message,
 * path, details, suggestion, retryable, recovery (plus expected_hash, current_hash, conflict only for
 * OccMismatchError); Node errno errors map by errno (ENOENT → NOT_FOUND; EACCES/EPERM → FILE_POLICY_DENIED with
 * details.source "os"; ENOSPC/EIO/EROFS/EMFILE → IO_ERROR with details.errno); anything else is INTERNAL with an
 * incident id that the stderr log line also carries, never VALIDATION; tokens and URL credentials are redacted from
 * message, details and suggestion (and from the incident log).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { ErrorEnvelopeSchema } from '../../src/errors/envelope-schema.js';
import { setIncidentLogger, toEnvelope } from '../../src/errors/to-envelope.js';
import { OccMismatchError, ToolError } from '../../src/errors/tool-error.js';
import { makeTree } from '../helpers/tree.js';

const BASE_KEYS = ['code', 'details', 'message', 'path', 'recovery', 'retryable', 'suggestion'];

/** An errno error as Node's fs throws it (same fields), for errnos a test cannot provoke portably. */
function errnoError(code: string, syscall = 'open', file = '/proj/f.txt'): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: failure, ${syscall} '${file}'`), { code, errno: -1, syscall, path: file });
}

let logged: string[] = [];
let restore: (line: string) => void;
beforeEach(() => {
  logged = [];
  restore = setIncidentLogger((line) => logged.push(line));
});
afterEach(() => {
  setIncidentLogger(restore);
});

describe('ToolError → envelope', () => {
  test('exactly the SPEC keys, values carried over, defaults from the table', () => {
    const envelope = toEnvelope(
      new ToolError('NOT_FOUND', 'No such file: /proj/x.', { path: '/proj/x', details: { n: 3 } }),
    );
    expect(Object.keys(envelope)).toEqual(['error']);
    expect(Object.keys(envelope.error).sort()).toEqual(BASE_KEYS);
    expect(envelope.error).toEqual({
      code: 'NOT_FOUND',
      message: 'No such file: /proj/x.',
      path: '/proj/x',
      details: { n: 3 },
      suggestion: expect.any(String),
      retryable: false,
      recovery: 'fix_arguments',
    });
    expect(ErrorEnvelopeSchema.safeParse(envelope).success).toBe(true);
  });

  test('path defaults to null, details to {}, suggestion to the per-code default', () => {
    const e = toEnvelope(new ToolError('ROOTS_EMPTY', 'No roots.')).error;
    expect(e.path).toBeNull();
    expect(e.details).toEqual({});
    expect(e.suggestion).toMatch(/root/i);
  });

  test("the thrower's suggestion and (issue tools) retryable/recovery overrides win", () => {
    const e = toEnvelope(
      new ToolError('GH_NETWORK', 'Timed out.', {
        suggestion: 'View the issue first.',
        retryable: false,
        recovery: 'check_already_applied',
      }),
    ).error;
    expect(e).toMatchObject({
      suggestion: 'View the issue first.',
      retryable: false,
      recovery: 'check_already_applied',
    });
  });

  test('numbers in details stay numbers through JSON', () => {
    const e = toEnvelope(new ToolError('BUDGET_EXCEEDED', 'Used up.', { details: { used: 3, limit: 3 } }));
    expect(JSON.parse(JSON.stringify(e)).error.details).toEqual({ used: 3, limit: 3 });
  });

  test('OccMismatchError adds expected_hash, current_hash and conflict beside details', () => {
    const hashA = `sha256:${'a'.repeat(64)}`;
    const hashB = `sha256:${'b'.repeat(64)}`;
    const envelope = toEnvelope(
      new OccMismatchError('Changed since read.', {
        path: '/proj/f',
        expectedHash: hashA,
        currentHash: hashB,
        conflict: { reason: 'modified', changed_ranges: [[2, 3]], bytes_delta: 4 },
      }),
    );
    expect(Object.keys(envelope.error).sort()).toEqual(
      [...BASE_KEYS, 'conflict', 'current_hash', 'expected_hash'].sort(),
    );
    expect(envelope.error).toMatchObject({
      code: 'OCC_MISMATCH',
      retryable: true,
      recovery: 'read_and_rebase',
      expected_hash: hashA,
      current_hash: hashB,
      conflict: { reason: 'modified', changed_ranges: [[2, 3]], bytes_delta: 4 },
    });
    expect(ErrorEnvelopeSchema.safeParse(envelope).success).toBe(true);
  });

  test('a deleted file: current_hash null', () => {
    const e = toEnvelope(
      new OccMismatchError('Deleted.', {
        path: '/proj/f',
        expectedHash: `sha256:${'a'.repeat(64)}`,
        currentHash: null,
        conflict: { reason: 'deleted' },
      }),
    ).error;
    expect(e.current_hash).toBeNull();
    expect(e.conflict).toEqual({ reason: 'deleted' });
    // issue 21: nothing to re-read — not retryable, and the arguments must change (expected_hash "absent") or stop.
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
    expect(e.suggestion).toMatch(/expected_hash: "absent"/);
    expect(e.suggestion).not.toMatch(/read the file again/i);
  });

  test('no other code ever carries the OCC fields', () => {
    for (const code of ['NOT_FOUND', 'HASH_REQUIRED', 'STALE_GIT', 'PATCH_FAILED'] as const) {
      expect(
        Object.keys(toEnvelope(new ToolError(code, 'm', { details: { current_hash: 'x' } })).error).sort(),
      ).toEqual(BASE_KEYS);
    }
  });
});

describe('Node errno errors', () => {
  test('a real ENOENT from fs → NOT_FOUND with its path', () => {
    const tree = makeTree();
    const missing = path.join(tree.dir, 'missing.txt');
    try {
      readFileSync(missing);
      throw new Error('unreachable');
    } catch (error) {
      const e = toEnvelope(error).error;
      expect(e).toMatchObject({ code: 'NOT_FOUND', path: missing, retryable: false, recovery: 'fix_arguments' });
      expect(Object.keys(e).sort()).toEqual(BASE_KEYS);
    } finally {
      tree.cleanup();
    }
  });

  test('a real EISDIR from fs → VALIDATION is_directory (a wrong kind of path, SPEC §3.1)', () => {
    const tree = makeTree();
    try {
      readFileSync(tree.dir);
      throw new Error('unreachable');
    } catch (error) {
      expect(toEnvelope(error).error).toMatchObject({ code: 'VALIDATION', details: { reason: 'is_directory' } });
    } finally {
      tree.cleanup();
    }
  });

  test.each(['EACCES', 'EPERM'])('%s → FILE_POLICY_DENIED, details.source "os"', (code) => {
    const e = toEnvelope(errnoError(code)).error;
    expect(e).toMatchObject({
      code: 'FILE_POLICY_DENIED',
      path: '/proj/f.txt',
      details: { source: 'os', errno: code },
    });
    expect(e.retryable).toBe(false);
  });

  test.each(['ENOSPC', 'EIO', 'EROFS', 'EMFILE', 'ENFILE', 'EDQUOT', 'EXDEV'])(
    '%s → IO_ERROR with details.errno',
    (code) => {
      const e = toEnvelope(errnoError(code, 'write')).error;
      expect(e).toMatchObject({ code: 'IO_ERROR', path: '/proj/f.txt', details: { errno: code, syscall: 'write' } });
      expect(e.message).toContain(code);
      expect(e.retryable).toBe(false);
      expect(e.recovery).toBe('fix_arguments');
    },
  );

  test('an unknown errno is IO_ERROR, never VALIDATION', () => {
    const e = toEnvelope(errnoError('EWEIRD')).error;
    expect(e.code).toBe('IO_ERROR');
    expect(e.details).toMatchObject({ errno: 'EWEIRD' });
  });

  test('an errno error without a path → path null', () => {
    const e = toEnvelope(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' })).error;
    expect(e).toMatchObject({ code: 'IO_ERROR', path: null, details: { errno: 'ENOSPC' } });
  });
});

describe('unknown failures → INTERNAL with an incident id', () => {
  test.each<[string, unknown]>([
    ['a plain Error', new Error('boom')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a Node internal ERR_* code', Object.assign(new TypeError('bad arg'), { code: 'ERR_INVALID_ARG_TYPE' })],
    ['a zod error', z.string().safeParse(1).error],
    ['a thrown string', 'just a string'],
    ['undefined', undefined],
    ['null', null],
    ['a plain object', { code: 'VALIDATION', message: 'pretending' }],
  ])('%s', (_label, thrown) => {
    const e = toEnvelope(thrown).error;
    expect(e.code).toBe('INTERNAL');
    expect(e.code).not.toBe('VALIDATION');
    expect(e.retryable).toBe(false);
    const id = e.details.incident_id as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(e.message).toContain(id);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(id);
    expect(Object.keys(e).sort()).toEqual(BASE_KEYS);
  });

  test('the log line carries the stack; the envelope does not carry the internal message', () => {
    const e = toEnvelope(new Error('internal detail /secret/place')).error;
    expect(logged[0]).toContain('internal detail /secret/place');
    expect(logged[0]).toMatch(/at .*to-envelope\.test\.ts/);
    expect(JSON.stringify(e)).not.toContain('/secret/place');
  });

  test('every incident gets its own id', () => {
    const a = toEnvelope(new Error('a')).error.details.incident_id;
    const b = toEnvelope(new Error('b')).error.details.incident_id;
    expect(a).not.toBe(b);
  });
});

describe('redaction', () => {
  const TOKENS: Array<[string, string]> = [
    ['GitHub classic token', `ghp_${'A1b2C3d4E5'.repeat(3)}abcdef`],
    ['GitHub OAuth token', `gho_${'Z9y8X7w6V5'.repeat(3)}uvwxyz`],
    ['GitHub fine-grained token', `github_pat_11ABCDEFG0_${'x'.repeat(40)}`],
    ['GitLab token', 'glpat-AbCdEfGhIj1234567890'],
    ['URL credentials', 'https://alice:s3cr3t-pass@gitlab.example.com/group/repo.git'],
    ['URL token only', 'https://x-access-token@github.com/o/r.git'],
    ['Authorization header', 'Authorization: Bearer x'],
    ['Authorization token header', 'authorization: token abc123def456'],
    ['private token param', 'PRIVATE-TOKEN: glcbt-qwertyuiop'],
  ];
  const SECRET_PARTS: Record<string, string[]> = {
    'URL credentials': ['alice', 's3cr3t-pass'],
    'URL token only': ['x-access-token'],
    'Authorization header': ['Bearer x'],
    'Authorization token header': ['abc123def456'],
    'private token param': ['qwertyuiop'],
  };

  test.each(TOKENS)('%s is redacted from message, details (nested) and suggestion', (label, token) => {
    const e = toEnvelope(
      new ToolError('GH_FAILED', `gh failed: ${token} rejected`, {
        details: { stderr_first_line: `error: ${token}`, nested: { list: [token, 1, true, null] } },
        suggestion: `Retry without ${token}.`,
      }),
    ).error;
    const text = JSON.stringify(e);
    for (const part of SECRET_PARTS[label] ?? [token]) expect(text).not.toContain(part);
    expect(e.message).toContain('[REDACTED]');
    expect(e.suggestion).toContain('[REDACTED]');
    expect(JSON.stringify(e.details)).toContain('[REDACTED]');
    expect((e.details.nested as { list: unknown[] }).list.slice(1)).toEqual([1, true, null]);
  });

  // Forge error bodies are often JSON or shell-quoted: the quote must not shield the value.
  test.each([
    ['{"password": "hunter2-pw"}', 'hunter2-pw'],
    ['{"access_token":"abc123secretvalue"}', 'abc123secretvalue'],
    ["password='hunter2-pw'", 'hunter2-pw'],
    ['token: "abc123secretvalue"', 'abc123secretvalue'],
    ['api_key=abc123secretvalue&x=1', 'abc123secretvalue'],
  ])('quoted credential %j is redacted', (text, secret) => {
    const e = toEnvelope(new ToolError('GL_FAILED', `GitLab said ${text}`, { details: { body: text } })).error;
    expect(JSON.stringify(e)).not.toContain(secret);
    expect(e.message).toContain('[REDACTED]');
  });

  test('the host of a credentialed URL survives (only the credential goes)', () => {
    const e = toEnvelope(
      new ToolError('GL_FAILED', 'push to https://alice:pw@gitlab.example.com/g/r.git failed'),
    ).error;
    expect(e.message).toContain('gitlab.example.com/g/r.git');
    expect(e.message).not.toContain('alice');
  });

  test('tokens in an internal error are redacted from the incident log', () => {
    const token = `ghp_${'Q'.repeat(36)}`;
    toEnvelope(new Error(`gh said ${token}`));
    expect(logged[0]).not.toContain(token);
    expect(logged[0]).toContain('[REDACTED]');
  });

  test("tokens in an errno error's message never surface (the mapper writes its own message)", () => {
    const token = `glpat-${'k'.repeat(20)}`;
    const e = toEnvelope(Object.assign(new Error(`EIO: remote said ${token}`), { code: 'EIO', syscall: 'read' })).error;
    expect(e.code).toBe('IO_ERROR');
    expect(JSON.stringify(e)).not.toContain(token);
  });

  test('OCC extras pass the same filter', () => {
    const e = toEnvelope(
      new OccMismatchError(`changed by https://bob:pw@host/x`, {
        path: '/p',
        expectedHash: 'sha256:0',
        currentHash: null,
        conflict: { reason: 'deleted' },
      }),
    ).error;
    expect(e.message).not.toContain('bob:pw');
  });
});

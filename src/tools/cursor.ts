/**
 * Continuation cursors of every paged tool (list_directory, search_files, git_diff, the issue tools' list and view):
 * the one module that issues and accepts them. A cursor cannot be minted or altered: it carries the resume point and
 * a fingerprint of the query it belongs to, authenticated with HMAC-SHA256 under a key drawn at random when the
 * process starts and never written anywhere. docs/security.md "Finding the repository and continuation cursors".
 *
 * Format (ASCII): `<process id>.<payload>.<mac>`, where the process id is 8 random bytes (base64url, 11 characters)
 * that say which process issued it (not secret), the payload is base64url of the JSON `{"v":2,"q":fingerprint,
 * "p":position}`, and the mac is base64url of HMAC-SHA256(key, `fs-tools cursor v2\n<process id>\n<payload>`) —
 * over the cursor's full contents, the query fingerprint included.
 *
 * Accepting one, in this order (every refusal is `VALIDATION`, field `cursor`, recovery fix_arguments: never INTERNAL):
 * shape and size (`invalid_cursor`) → issued by another process, e.g. before a restart (`stale_cursor`) → the mac
 * (`invalid_cursor`: altered or not issued here) → the fingerprint (`cursor_mismatch`: another call's cursor) → the
 * position's fields, each checked for type and range by the tool's schema even though the mac already vouches for
 * them (`invalid_cursor`; defence in depth).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';

/** The HMAC key of this process: 32 random bytes, in memory only. */
const KEY = randomBytes(32);
/** Which process issued a cursor (so a cursor of another one is told apart from a forged one); not secret. */
const PROCESS_ID = randomBytes(8).toString('base64url');
/** Characters of a process id, a payload and a mac (base64url). */
const B64URL = /^[A-Za-z0-9_-]+$/;
/** Characters of HMAC-SHA256 in base64url (32 bytes). */
const MAC_CHARS = 43;
/**
 * Most characters of a cursor accepted, far above any issued: the longest is a listing's, naming a path under
 * PATH_MAX plus one name (at most 6 JSON bytes a UTF-16 unit, 4/3 of that in base64url: under 40 KiB).
 */
export const MAX_CURSOR_CHARS = 256 * 1024;

/** A count or index inside a cursor: a non-negative integer below 2^31 (no page, file or text is longer). */
export const CursorCount = z
  .number()
  .int()
  .min(0)
  .max(2 ** 31 - 1);

/**
 * A relative path inside a cursor (where a walk resumes): `/`-separated names, none empty, `.` or `..`, no NUL, at
 * most MAX_CURSOR_CHARS. The walk only compares it with the names it reads (no path is opened from it).
 */
export const CursorPath = z
  .string()
  .min(1)
  .max(MAX_CURSOR_CHARS)
  .refine((p) => !p.includes('\0') && p.split('/').every((c) => c !== '' && c !== '.' && c !== '..'));

/** A fingerprint of the arguments that define a paged query (everything but cursor and page size). */
export function queryFingerprint(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16);
}

/** The mac of `payload` issued by process `id` under this process's key. */
function macOf(id: string, payload: string): Buffer {
  return createHmac('sha256', KEY).update(`fs-tools cursor v2\n${id}\n${payload}`).digest();
}

/**
 * An upper bound, in bytes (a cursor is ASCII), of `encodeCursor(queryFingerprint(…), { after })` for an `after` of
 * `afterLength` UTF-16 code units: each costs at most 6 bytes of JSON (`\u00XX`), the object around it 47
 * (`{"v":2,"q":"<16>","p":{"after":""}}`; 48 counted), base64url makes 4 characters of 3 bytes, and the process id,
 * the mac and the two dots add 56. O(1): a listing asks it for every entry it adds (a long path's cursor is
 * kilobytes, and it appears twice in a truncated page).
 */
export function afterCursorBytesBound(afterLength: number): number {
  return Math.ceil(((48 + 6 * afterLength) * 4) / 3) + PROCESS_ID.length + MAC_CHARS + 2;
}

/** Issues the cursor of resume point `position` for the query with this fingerprint. */
export function encodeCursor(fingerprint: string, position: Record<string, unknown>): string {
  const payload = Buffer.from(JSON.stringify({ v: 2, q: fingerprint, p: position }), 'utf8').toString('base64url');
  return `${PROCESS_ID}.${payload}.${macOf(PROCESS_ID, payload).toString('base64url')}`;
}

/** VALIDATION for a cursor refused with `reason`. */
function refused(reason: 'invalid_cursor' | 'stale_cursor' | 'cursor_mismatch', message: string): ToolError {
  return new ToolError('VALIDATION', message, {
    details: { reason, field: 'cursor' },
    suggestion:
      reason === 'cursor_mismatch'
        ? 'Repeat the original arguments with the cursor, or call again without cursor to start from the first page.'
        : 'Call again without cursor to start from the first page (pass next_cursor exactly as returned, in the same server process).',
  });
}

/**
 * Accepts a cursor issued by `encodeCursor` in this process for the query with this fingerprint, and returns its
 * position as `position` (the tool's schema of each field's type and range) parses it.
 * @throws ToolError VALIDATION (field cursor) with details.reason `invalid_cursor` (malformed, over MAX_CURSOR_CHARS,
 *   altered, not issued by this server, or a field out of range), `stale_cursor` (issued by another server process,
 *   e.g. before a restart), `cursor_mismatch` (issued for a call with other arguments)
 */
export function decodeCursor<T>(cursor: string, fingerprint: string, position: z.ZodType<T>): T {
  const invalid = () =>
    refused('invalid_cursor', 'The cursor is not one this server issued (malformed or altered); it was not used.');
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_CHARS) throw invalid();
  const parts = cursor.split('.');
  if (parts.length !== 3 || !parts.every((p) => B64URL.test(p))) throw invalid();
  const [id, payload, mac] = parts;
  if (id !== PROCESS_ID) {
    if (id.length === PROCESS_ID.length && mac.length === MAC_CHARS)
      throw refused(
        'stale_cursor',
        'The cursor was issued by another server process (the server restarted, or it belongs to another session); cursors are valid only in the process that issued them.',
      );
    throw invalid();
  }
  const given = Buffer.from(mac, 'base64url');
  const expected = macOf(id, payload);
  if (mac.length !== MAC_CHARS || given.length !== expected.length || !timingSafeEqual(given, expected))
    throw invalid();
  // Authenticated from here on; still parsed and checked as if it were not (defence in depth).
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof value !== 'object' || value === null || (value as { v?: unknown }).v !== 2) throw invalid();
  const { q, p } = value as { q?: unknown; p?: unknown };
  if (q !== fingerprint)
    throw refused('cursor_mismatch', 'The cursor belongs to a call with other arguments; it was not used.');
  const parsed = position.safeParse(p);
  if (!parsed.success) throw invalid();
  return parsed.data;
}

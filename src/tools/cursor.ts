/**
 * Opaque continuation cursors for paged tools (list_directory, search_files). A cursor carries the resume point and
 * a fingerprint of the query it belongs to, so a cursor replayed with other arguments is refused instead of
 * silently skipping or repeating results.
 */
import { createHash } from 'node:crypto';
import { ToolError } from '../errors/tool-error.js';

/** A fingerprint of the arguments that define a paged query (everything but cursor and page size). */
export function queryFingerprint(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16);
}

/**
 * An upper bound, in bytes (base64url is ASCII), of `encodeCursor(queryFingerprint(…), { after })` for an `after` of
 * `afterLength` UTF-16 code units: each costs at most 6 bytes of JSON (`\u00XX`), the object around it 41
 * (`{"v":1,"q":"<16>","after":""}`; 48 counted), and base64url makes 4 characters of 3 bytes. O(1): a listing asks it
 * for every entry it adds (a long path's cursor is kilobytes, and it appears twice in a truncated page).
 */
export function afterCursorBytesBound(afterLength: number): number {
  return Math.ceil(((48 + 6 * afterLength) * 4) / 3);
}

/** Encodes a resume point. */
export function encodeCursor(fingerprint: string, position: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ v: 1, q: fingerprint, ...position }), 'utf8').toString('base64url');
}

/**
 * Decodes a cursor made by `encodeCursor` for the same query.
 * @throws ToolError VALIDATION (reason invalid_cursor) for garbage or a cursor of another query
 */
export function decodeCursor(cursor: string, fingerprint: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = null;
  }
  const obj = value as { v?: unknown; q?: unknown } | null;
  if (!obj || typeof obj !== 'object' || obj.v !== 1) {
    throw new ToolError('VALIDATION', 'The cursor is not one this server issued.', {
      details: { reason: 'invalid_cursor', field: 'cursor' },
      suggestion: 'Pass next_cursor exactly as returned, or omit cursor to start again.',
    });
  }
  if (obj.q !== fingerprint) {
    throw new ToolError('VALIDATION', 'The cursor belongs to a call with other arguments.', {
      details: { reason: 'cursor_mismatch', field: 'cursor' },
      suggestion: 'Repeat the original arguments with the cursor, or omit cursor to start again.',
    });
  }
  return obj;
}

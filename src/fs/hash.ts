/**
 * Content hashes (docs/errors.md "Optimistic concurrency"): `sha256:` + 64 lower-case hex digits over the file's raw bytes (BOM and line endings
 * included), always the whole file.
 */
import { createHash, hash as oneShotHash, type Hash } from 'node:crypto';
import { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import { processSlot } from '../process-slots.js';

export const HASH_PREFIX = 'sha256:';

/** Pattern every content hash matches. */
export const CONTENT_HASH_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** A content hash read back from disk (journal entries, undo history records). */
export const ContentHashSchema = z.string().regex(CONTENT_HASH_PATTERN);

/**
 * The rules of a saved old version read back from disk (journal entries, undo history records): `old_base64` and
 * `old_hash` are both null (the file did not exist) or both set, and the hash is that of the saved bytes.
 */
export function savedVersionChecked<T extends z.ZodType<{ old_base64: string | null; old_hash: string | null }>>(
  schema: T,
): T {
  return schema
    .refine(
      (f) => (f.old_base64 === null) === (f.old_hash === null),
      'old_base64 and old_hash are both null or both set',
    )
    .refine(
      (f) => f.old_base64 === null || hashBytes(Buffer.from(f.old_base64, 'base64')) === f.old_hash,
      'old_base64 does not match old_hash',
    );
}

/**
 * Hash of a byte buffer, in one shot (`crypto.hash`: no Hash object; for a few KB about half the cost of
 * createHash + update + digest).
 */
export function hashBytes(bytes: Uint8Array): string {
  return HASH_PREFIX + oneShotHash('sha256', bytes, 'hex');
}

/** How many small buffers `hashRecentBytes` remembers with their hashes. */
export const RECENT_HASHES = 8;

/** The largest buffer `hashRecentBytes` remembers, bytes (read_file's one-step small read: src/tools/read-one.ts). */
export const RECENT_HASH_MAX_BYTES = 64 * 1024;

/**
 * The buffers `hashRecentBytes` hashed last (private copies) with their hashes, oldest first: at most RECENT_HASHES
 * entries of at most RECENT_HASH_MAX_BYTES each (512 KiB in all).
 */
const recentHashes = processSlot('fs/hash', () => [] as { bytes: Buffer; hash: string }[]);

/**
 * `hashBytes(bytes)`, recalled when the same bytes were hashed lately: a small file read again unchanged (an agent
 * re-reading a file it edits; every read_file of the bench) costs a comparison (memcmp, about 0.5 µs for 4 KB) instead
 * of a SHA-256 (about 10 µs). The hash is a function of the bytes alone and the bytes are compared in full, so a
 * recalled hash is the one `hashBytes` would compute: no identity, stamp or path is trusted, and a file changed in
 * any way (even within one timestamp tick, at the same size) is hashed afresh. Buffers over RECENT_HASH_MAX_BYTES are
 * hashed and not remembered. Callers are the read paths, whose bytes the server already holds (the session's hash
 * register keeps a whole file read: src/policy/occ.ts).
 */
export function hashRecentBytes(bytes: Uint8Array): string {
  if (bytes.length > RECENT_HASH_MAX_BYTES) return hashBytes(bytes);
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let i = recentHashes.length - 1; i >= 0; i--) {
    const entry = recentHashes[i];
    if (entry.bytes.length === view.length && entry.bytes.equals(view)) return entry.hash;
  }
  const hash = hashBytes(view);
  // A private copy: the caller's buffer may be reused or be a slice of a shared pool.
  recentHashes.push({ bytes: Buffer.from(view), hash });
  if (recentHashes.length > RECENT_HASHES) recentHashes.shift();
  return hash;
}

/** An incremental hasher for streaming reads. */
export function createContentHasher(): { update(chunk: Uint8Array): void; digest(): string } {
  const h: Hash = createHash('sha256');
  return {
    update: (chunk) => {
      h.update(chunk);
    },
    digest: () => HASH_PREFIX + h.digest('hex'),
  };
}

/** How far a read may go: a file's reported size, the tool's cap, and the path for the error. */
export interface ContentBound {
  /** The size fstat reported when the file was opened. */
  reportedSize: number;
  /** The tool's cap on bytes read from a file that holds more than it reports. */
  maxBytes: number;
  /** The file's path, for the error (null: not known here). */
  path: string | null;
}

/**
 * A read that went past both the file's size (as fstat reports it now) and the tool's cap: the file does not report
 * its size (procfs and sysfs files say 0 and can be endless, e.g. /proc/PID/pagemap), so it is never read to its end
 * (docs/security.md "Bounded work"). VALIDATION reason file_too_large with `details.size` (the reported size) and
 * `details.limit`.
 */
export function contentPastSizeError(bound: ContentBound): ToolError {
  return new ToolError(
    'VALIDATION',
    `${bound.path ?? 'The file'} reports ${bound.reportedSize} bytes but holds more than ${bound.maxBytes} (a file that does not ` +
      'report its size, like those under /proc); it is not read to its end.',
    {
      path: bound.path,
      details: { reason: 'file_too_large', size: bound.reportedSize, limit: bound.maxBytes },
      suggestion: 'Files that do not report their size are not read, hashed or edited past the cap.',
    },
  );
}

/**
 * Checks a read loop that has read `pos` bytes so far against `bound`: within max(reported size, cap) it passes at
 * once; past it the file is fstat'ed again (a regular file that grew legitimately has a larger size now) and the read
 * may go on up to max(new size, cap). The reported size is then updated.
 * @throws ToolError VALIDATION file_too_large (contentPastSizeError)
 */
export async function checkContentBound(
  bound: ContentBound,
  pos: number,
  stat: () => Promise<{ size: number }>,
): Promise<void> {
  if (pos <= Math.max(bound.reportedSize, bound.maxBytes)) return;
  const now = (await stat()).size;
  if (pos > Math.max(now, bound.maxBytes)) throw contentPastSizeError(bound);
  bound.reportedSize = now;
}

/**
 * Streams an open file through the hasher (1 MiB chunks; bounded memory), never past `bound` (checkContentBound).
 * @throws ToolError VALIDATION file_too_large for a file holding more than it reports and more than the cap
 */
export async function hashFileHandle(
  handle: import('node:fs/promises').FileHandle,
  bound: ContentBound,
): Promise<string> {
  const hasher = createContentHasher();
  const buf = Buffer.allocUnsafe(1024 * 1024);
  let pos = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
    if (bytesRead === 0) break;
    pos += bytesRead;
    await checkContentBound(bound, pos, () => handle.stat());
    hasher.update(buf.subarray(0, bytesRead));
  }
  return hasher.digest();
}

/** How far past its limit `readAtMost` may read (one page: enough to see the file is over it). */
const OVERSHOOT_BYTES = 4096;

/**
 * Reads an open file from offset 0 up to `limit` bytes and at most OVERSHOOT_BYTES more — never to its end when it
 * holds more: a caller sees a file over `limit` (the result is longer than `limit`) without loading it, whatever fstat
 * said its size was (a procfs file reports 0). The buffer starts at the reported size (at least 64 KiB) and doubles
 * as the reads fill it; reads stay multiples of 8 bytes where the limit is (/proc/PID/pagemap refuses others).
 */
export async function readAtMost(
  handle: import('node:fs/promises').FileHandle,
  limit: number,
  reportedSize: number,
): Promise<Buffer> {
  const most = limit + OVERSHOOT_BYTES;
  let buf = Buffer.allocUnsafe(Math.min(most, Math.max(reportedSize + 1, 64 * 1024)));
  let filled = 0;
  for (;;) {
    if (filled === buf.length) {
      if (buf.length >= most) break;
      const bigger = Buffer.allocUnsafe(Math.min(most, buf.length * 2));
      buf.copy(bigger, 0, 0, filled);
      buf = bigger;
    }
    const { bytesRead } = await handle.read(buf, filled, buf.length - filled, filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buf.subarray(0, filled);
}

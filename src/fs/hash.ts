/**
 * Content hashes (SPEC §5): `sha256:` + 64 lower-case hex digits over the file's raw bytes (BOM and line endings
 * included), always the whole file.
 */
import { createHash, hash as oneShotHash, type Hash } from 'node:crypto';
import { z } from 'zod';

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
 * createHash + update + digest, issue #19).
 */
export function hashBytes(bytes: Uint8Array): string {
  return HASH_PREFIX + oneShotHash('sha256', bytes, 'hex');
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

/** Streams an open file through the hasher (1 MiB chunks; bounded memory). */
export async function hashFileHandle(handle: import('node:fs/promises').FileHandle): Promise<string> {
  const hasher = createContentHasher();
  const buf = Buffer.allocUnsafe(1024 * 1024);
  let pos = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
    if (bytesRead === 0) break;
    hasher.update(buf.subarray(0, bytesRead));
    pos += bytesRead;
  }
  return hasher.digest();
}

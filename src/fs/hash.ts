/**
 * Content hashes (SPEC §5): `sha256:` + 64 lower-case hex digits over the file's raw bytes (BOM and line endings
 * included), always the whole file.
 */
import { createHash, type Hash } from 'node:crypto';

export const HASH_PREFIX = 'sha256:';

/** Pattern every content hash matches. */
export const CONTENT_HASH_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** Hash of a byte buffer. */
export function hashBytes(bytes: Uint8Array): string {
  return HASH_PREFIX + createHash('sha256').update(bytes).digest('hex');
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

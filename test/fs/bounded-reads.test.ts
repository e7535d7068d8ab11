/**
 * Reads of files that report a size they do not have are bounded (docs/security.md "Bounded work"): a procfs file
 * reports 0 bytes and may never end (/proc/PID/pagemap: 8 bytes per page of the whole address space), and reading
 * or hashing one to its end took the server down (out of memory) or held a call for minutes. Every reader stops at
 * max(reported size, its cap): the mutation pipeline's read of the current file (bytes and hash-only), the bounded
 * buffer reader, the streaming hash, and read_file's scan. Linux only (/proc).
 */
import { writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import { hashBytes, hashFileHandle, readAtMost } from '../../src/fs/hash.js';
import { readCurrentIn } from '../../src/fs/read-current.js';
import { readRange } from '../../src/fs/read-range.js';
import { VerifiedDir } from '../../src/fs/verified-dir.js';
import { makeTree } from '../helpers/tree.js';

const ENDLESS = '/proc/self/pagemap';
const onLinux = process.platform === 'linux' ? describe : describe.skip;

async function failure(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    return toEnvelope(error).error;
  }
  throw new Error('expected a failure');
}

onLinux('a file that reports 0 bytes and never ends', () => {
  it('readCurrentIn: bytes are read up to the cap, then VALIDATION file_too_large; hash-only stops there too', async () => {
    const self = `/proc/${process.pid}`;
    const dir = VerifiedDir.open(self, (p) => p === self || p.startsWith(`${self}/`));
    try {
      expect(dir.lstat('pagemap')?.size).toBe(0);
      const cap = 1024 * 1024;
      const withBytes = await failure(readCurrentIn(dir, 'pagemap', { wantBytes: true, maxBytes: cap }));
      expect(withBytes.code).toBe('VALIDATION');
      expect(withBytes.details).toMatchObject({ reason: 'file_too_large', size: 0, limit: cap });
      for (const options of [
        { wantBytes: false, maxBytes: cap },
        { wantBytes: true, maxBytes: cap, hashOnlyWhenLarge: true },
      ]) {
        const e = await failure(readCurrentIn(dir, 'pagemap', options));
        expect(e.details).toEqual({ reason: 'file_too_large', size: 0, limit: cap });
        expect(e.path).toBe(`${self}/pagemap`);
      }
    } finally {
      dir.close();
    }
  });

  it('readAtMost reads past the limit by at most one page; hashFileHandle fails closed past the cap', async () => {
    const handle = await open(ENDLESS, 'r');
    try {
      const bytes = await readAtMost(handle, 200_000, 0);
      expect(bytes.length).toBeGreaterThan(200_000);
      expect(bytes.length).toBeLessThanOrEqual(200_000 + 4096);
      const e = await failure(hashFileHandle(handle, { reportedSize: 0, maxBytes: 3 * 1024 * 1024, path: ENDLESS }));
      expect(e.details).toEqual({ reason: 'file_too_large', size: 0, limit: 3 * 1024 * 1024 });
    } finally {
      await handle.close();
    }
  });

  it("read_file's scan stops at maxScanBytes (it never reads to the end)", async () => {
    const handle = await open(ENDLESS, 'r');
    try {
      const stats = await handle.stat();
      const started = Date.now();
      let result: unknown;
      try {
        result = await readRange(
          handle,
          { kind: 'head', lines: 1 },
          {
            maxBytes: 4096,
            textBoundaries: false,
            stats,
            maxScanBytes: 2 * 1024 * 1024,
          },
        );
      } catch (error) {
        result = toEnvelope(error).error;
      }
      // Either pagemap's short reads end the scan early (a regular file's short read is its end) or the cap does.
      const r = result as { code?: string; details?: Record<string, unknown>; size?: number };
      if (r.code !== undefined) expect(r.details).toMatchObject({ reason: 'file_too_large', limit: 2 * 1024 * 1024 });
      else expect(r.size).toBeLessThanOrEqual(2 * 1024 * 1024);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await handle.close();
    }
  });

  it('a regular file that grows while it is hashed is hashed whole (its new size is re-read), not refused', async () => {
    const tree = makeTree({ 'f.bin': Buffer.alloc(3 * 1024 * 1024, 1) }, 'fs-tools-bounded-reads-');
    try {
      const file = path.join(tree.dir, 'f.bin');
      const handle = await open(file, 'r');
      try {
        const reported = (await handle.stat()).size;
        writeFileSync(file, Buffer.alloc(6 * 1024 * 1024, 1)); // same inode, twice the size
        const hash = await hashFileHandle(handle, { reportedSize: reported, maxBytes: 1024 * 1024, path: file });
        expect(hash).toBe(hashBytes(Buffer.alloc(6 * 1024 * 1024, 1)));
      } finally {
        await handle.close();
      }
    } finally {
      tree.cleanup();
    }
  });
});

/**
 * `hashRecentBytes` (src/fs/hash.ts): a small buffer hashed lately has its hash recalled after a full comparison of
 * the bytes. Pins that every answer is the hash `hashBytes` computes for the bytes given now, whatever was hashed
 * before: the same bytes again, one byte changed at the same length, the caller's buffer changed in place after it was
 * hashed (the cache holds a copy), a view at an offset into a larger buffer, content going back to an earlier version
 * (ABA) within and beyond the entries kept, and a buffer over the size limit. The real server's read path is attacked
 * in test/attacks/occ-reread.test.ts (same size, inode and mtime; truncate and rewrite; rename over; rewrites while
 * 8 reads are in flight).
 */
import { describe, expect, it } from 'vitest';
import { hashBytes, hashRecentBytes, RECENT_HASH_MAX_BYTES, RECENT_HASHES } from '../../src/fs/hash.js';

const text = (s: string) => Buffer.from(s.repeat(200));

describe('hashRecentBytes', () => {
  it('answers the hash of the bytes given now', () => {
    const a = text('alpha ');
    expect(hashRecentBytes(a)).toBe(hashBytes(a));
    expect(hashRecentBytes(Buffer.from(a))).toBe(hashBytes(a)); // recalled: an equal copy
    const b = Buffer.from(a);
    b[b.length >> 1] ^= 1; // one byte changed, same length
    expect(hashRecentBytes(b)).toBe(hashBytes(b));
    expect(hashRecentBytes(b)).not.toBe(hashBytes(a));
  });

  it('keeps its own copy: a caller changing its buffer afterwards gets the new hash', () => {
    const buf = text('bravo ');
    const before = hashRecentBytes(buf);
    buf.fill(0x7a, 0, 10);
    expect(hashRecentBytes(buf)).toBe(hashBytes(buf));
    expect(hashRecentBytes(buf)).not.toBe(before);
  });

  it('hashes a view at an offset as its own bytes', () => {
    const whole = Buffer.concat([Buffer.from('prefix-'), text('charlie '), Buffer.from('-suffix')]);
    const view = whole.subarray(7, whole.length - 7);
    expect(hashRecentBytes(view)).toBe(hashBytes(text('charlie ')));
    expect(hashRecentBytes(new Uint8Array(view.buffer, view.byteOffset, view.length))).toBe(hashBytes(view));
  });

  it('content going back to an earlier version (ABA), within and beyond the entries kept', () => {
    const versions = Array.from({ length: RECENT_HASHES + 3 }, (_, i) => text(`v${i} `));
    for (const v of versions) expect(hashRecentBytes(v)).toBe(hashBytes(v));
    for (const v of [...versions].reverse()) expect(hashRecentBytes(Buffer.from(v))).toBe(hashBytes(v));
  });

  it('hashes an empty buffer and one over the limit as hashBytes does', () => {
    expect(hashRecentBytes(Buffer.alloc(0))).toBe(hashBytes(Buffer.alloc(0)));
    const big = Buffer.alloc(RECENT_HASH_MAX_BYTES + 1, 0x61);
    expect(hashRecentBytes(big)).toBe(hashBytes(big));
    big[0] = 0x62;
    expect(hashRecentBytes(big)).toBe(hashBytes(big));
  });
});

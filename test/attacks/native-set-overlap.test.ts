/**
 * Review of the addon's required set (`anyOf`, interface version 2: native/fs_tools_native.c, src/fs/native-reader.ts
 * `packByteSet`), attacked through the primitive with real files:
 * - a set that shares its memory with `meta`: the addon validates the set, then zeroes the file's meta[1] and meta[2]
 *   before it tests the set; zeroing part of a length field shortens that string, and the next length is then read
 *   from inside the old string's bytes — a length that points far past the set's end (AddressSanitizer: a
 *   heap-buffer-overflow read of 100000 bytes in `contains_any`). The addon must refuse the call (TypeError), as it
 *   refuses `out` over `meta`, the needle or the set;
 * - a needle that shares its memory with `meta`: the needle would change under the test (a file the JavaScript path
 *   matches dropped); refused the same way.
 * - a set in a SharedArrayBuffer: another thread flipping one of its lengths between the addon's check and its test
 *   made it read past the set's end (AddressSanitizer: heap-buffer-overflow in `contains_any`, a worker rewriting the
 *   length in a loop); a shared set or needle is refused, and `contains_any` bounds every length it reads besides.
 * Nothing is read past a buffer and no file is opened for a refused call (the meta stays as it was).
 */
import { mkdtempSync, openSync, closeSync, realpathSync, rmSync, writeFileSync, constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packByteSet } from '../../src/fs/native-reader.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const addon = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-set-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe.runIf(addon !== null)('the addon: a required set or needle over meta', () => {
  writeFileSync(path.join(base, 'big.txt'), 'a'.repeat(200_000));

  it('a set sharing memory with meta: a TypeError, not a read past the set', () => {
    const fd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      // One buffer of 65566 bytes: "zz", then one string of 65556 bytes ('a'…) to the end. meta[1] and meta[2] are
      // bytes 8..23: zeroing them turns the second length into 20, and the next length is read at byte 30.
      const ab = new ArrayBuffer(65_566);
      const set = new Uint8Array(ab);
      const dv = new DataView(ab);
      dv.setUint32(0, 2, true);
      set.set([0x7a, 0x7a], 4);
      dv.setUint32(6, 20 + (1 << 16), true);
      set.fill(0x61, 10);
      dv.setUint32(30, 100_000, true);
      const wellFormedBefore = Buffer.from(set);
      const meta = new Float64Array(ab, 0, 3);
      expect(() => addon!.readFiles(fd, ['big.txt'], 0, 1e6, null, new Uint8Array(300_000), meta, set)).toThrow(
        /overlaps/,
      );
      // Refused before any file was answered: the set (and the meta over it) unchanged.
      expect(Buffer.from(set).equals(wellFormedBefore)).toBe(true);
      // The same set in a buffer of its own is answered (no string of it is in the file: no_match).
      const own = new Float64Array(3);
      expect(addon!.readFiles(fd, ['big.txt'], 0, 1e6, null, new Uint8Array(300_000), own, Buffer.from(set))).toBe(1);
      expect(own[0]).toBe(4);
    } finally {
      closeSync(fd);
    }
  });

  it('a set or a needle in a SharedArrayBuffer: a TypeError (another thread could change it during the test)', () => {
    const fd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const packed = packByteSet([Buffer.from('zz'), Buffer.from('aa')]);
      const sharedSet = new Uint8Array(new SharedArrayBuffer(packed.length));
      sharedSet.set(packed);
      const sharedNeedle = new Uint8Array(new SharedArrayBuffer(2)).fill(0x61);
      const meta = new Float64Array(3).fill(7);
      const out = new Uint8Array(300_000);
      expect(() => addon!.readFiles(fd, ['big.txt'], 0, 1e6, null, out, meta, sharedSet)).toThrow(TypeError);
      expect(() => addon!.readFiles(fd, ['big.txt'], 0, 1e6, sharedNeedle, out, meta)).toThrow(TypeError);
      expect(Array.from(meta)).toEqual([7, 7, 7]); // refused before any file was answered
      // The same set and needle in buffers of their own: a candidate.
      expect(addon!.readFiles(fd, ['big.txt'], 0, 1e6, Buffer.from('aa'), out, meta, packed)).toBe(1);
      expect(Array.from(meta)).toEqual([0, 0, 200_000]);
    } finally {
      closeSync(fd);
    }
  });

  it('a needle or a set anywhere in meta is refused; apart from it, the same call is answered', () => {
    const fd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const ab = new ArrayBuffer(64);
      const meta = new Float64Array(ab, 0, 3);
      const inMeta = new Uint8Array(ab, 20, 2); // inside meta[2]
      inMeta.set([0x61, 0x61]);
      const out = new Uint8Array(300_000);
      expect(() => addon!.readFiles(fd, ['big.txt'], 0, 1e6, inMeta, out, meta)).toThrow(/overlaps/);
      const setInMeta = new Uint8Array(ab, 8, 6);
      setInMeta.set(packByteSet([Buffer.from('aa')]));
      expect(() => addon!.readFiles(fd, ['big.txt'], 0, 1e6, null, out, meta, setInMeta)).toThrow(/overlaps/);
      // Beside meta in the same buffer (no byte shared): answered, a candidate.
      const beside = new Uint8Array(ab, 24, 6);
      beside.set(packByteSet([Buffer.from('aa')]));
      expect(addon!.readFiles(fd, ['big.txt'], 0, 1e6, new Uint8Array(ab, 32, 2).fill(0x61), out, meta, beside)).toBe(
        1,
      );
      expect(Array.from(meta)).toEqual([0, 0, 200_000]);
    } finally {
      closeSync(fd);
    }
  });
});

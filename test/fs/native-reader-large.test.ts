/**
 * The native reader's read-first path (native/fs_tools_native.c) on a file over 2 GiB with a cap above it
 * (`--max-search-file-bytes` has no upper bound): Linux returns at most 2 GiB less a page (MAX_RW_COUNT) from one
 * `pread`, so a single read comes back short in the middle of the file; taken as the end of the file, a match past
 * it is missed. The JavaScript path reads to the size fstat reports. Heavy (a 2 GiB file and buffer): runs with
 * FS_TOOLS_HEAVY_TESTS=1 only.
 */
import { closeSync, constants, mkdtempSync, openSync, realpathSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { NATIVE_CODES } from '../../src/fs/native-reader.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const loaded = loadBuiltAddon()?.addon ?? null;
const heavy = process.env.FS_TOOLS_HEAVY_TESTS === '1';
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-large-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

it.runIf(loaded !== null && heavy)(
  'finds a needle past the first 2 GiB of a text file within the cap',
  () => {
    const chunk = Buffer.alloc(64 * 1024 * 1024, 'a');
    const size = 2 ** 31 + 64 * 1024;
    const fd = openSync(path.join(base, 'big.txt'), 'w');
    try {
      let at = 0;
      while (at < size - 6) at += writeSync(fd, chunk, 0, Math.min(chunk.length, size - 6 - at), at);
      writeSync(fd, Buffer.from('NEEDLE'), 0, 6, at);
    } finally {
      closeSync(fd);
    }
    const dirfd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const out = Buffer.allocUnsafe(size);
      const meta = new Float64Array(3).fill(-1);
      expect(loaded!.readFiles(dirfd, ['big.txt'], 0, 3e9, Buffer.from('NEEDLE'), out, meta)).toBe(1);
      expect([...meta]).toEqual([NATIVE_CODES.candidate, 0, size]);
      expect(out.subarray(size - 6).toString()).toBe('NEEDLE');
    } finally {
      closeSync(dirfd);
    }
  },
  300_000,
);

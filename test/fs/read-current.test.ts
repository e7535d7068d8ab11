/**
 * Reading files as they are now (src/fs/read-current.ts, src/fs/open-file.ts, src/fs/text.ts), in-process on real
 * files. Pins:
 *  - readCurrent: a missing file is `exists: false`; bytes and hash agree; over maxBytes it is VALIDATION
 *    file_too_large unless hashOnlyWhenLarge (then the hash of the whole file and no bytes); a FIFO is
 *    FILE_POLICY_DENIED special_file (never opened for reading); isDirectory does not follow links;
 *  - openForRead / openForReadSync / readSmallFileSync on an inside file: the bytes, the regular-file check, and
 *    readSmallFileSync's null (nothing read) for a file over its cap; readWholeSync reads up to size + 1 bytes, with
 *    the same answers when told the size is fstat's (it then stops at that size);
 *  - the text facts: line-ending style from counts, the UTF-8 BOM, binary detection on whole files and prefixes.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hashBytes } from '../../src/fs/hash.js';
import { openForRead, openForReadSync, readSmallFileSync, readWholeSync } from '../../src/fs/open-file.js';
import { isDirectory, readCurrent } from '../../src/fs/read-current.js';
import { eolFromCounts, hasUtf8Bom, looksBinary } from '../../src/fs/text.js';
import type { AllowedPath } from '../../src/policy/resolve-path.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ 'a.txt': 'hello\n', big: 'x'.repeat(5000), d: {} }, 'fs-tools-read-current-');
afterAll(() => T.cleanup());
const inside = (p: string): boolean => p === T.dir || p.startsWith(`${T.dir}/`);
const at = (name: string) => path.join(T.dir, name) as AllowedPath;
execFileSync('mkfifo', [at('fifo')]);
symlinkSync(at('d'), at('dlink'));

describe('readCurrent', () => {
  it('reports a missing file as absent', async () => {
    expect(await readCurrent(at('none'), inside, { wantBytes: true, maxBytes: 10 })).toEqual({
      exists: false,
      hash: null,
      bytes: null,
      stats: null,
    });
  });

  it('returns bytes and their hash, or the hash alone', async () => {
    const r = await readCurrent(at('a.txt'), inside, { wantBytes: true, maxBytes: 100 });
    expect([r.exists, r.bytes?.toString(), r.hash]).toEqual([true, 'hello\n', hashBytes(Buffer.from('hello\n'))]);
    const h = await readCurrent(at('a.txt'), inside, { wantBytes: false, maxBytes: 1 });
    expect([h.bytes, h.hash]).toEqual([null, r.hash]);
  });

  it('over maxBytes: file_too_large, or with hashOnlyWhenLarge the whole-file hash without bytes', async () => {
    await expect(readCurrent(at('big'), inside, { wantBytes: true, maxBytes: 100 })).rejects.toMatchObject({
      code: 'VALIDATION',
      details: { reason: 'file_too_large', size: 5000, limit: 100 },
    });
    const r = await readCurrent(at('big'), inside, { wantBytes: true, maxBytes: 100, hashOnlyWhenLarge: true });
    expect([r.bytes, r.hash]).toEqual([null, hashBytes(Buffer.from('x'.repeat(5000)))]);
  });

  it('a FIFO is FILE_POLICY_DENIED special_file', async () => {
    await expect(readCurrent(at('fifo'), inside, { wantBytes: true, maxBytes: 100 })).rejects.toMatchObject({
      code: 'FILE_POLICY_DENIED',
      details: { rule: 'special_file' },
    });
  });

  it('isDirectory is true for a directory only, not for a link to one', async () => {
    expect([await isDirectory(at('d')), await isDirectory(at('dlink')), await isDirectory(at('a.txt'))]).toEqual([
      true,
      false,
      false,
    ]);
    expect(await isDirectory(at('none'))).toBe(false);
  });
});

describe('open-file', () => {
  it('opens an inside regular file, async and sync, and refuses a directory', async () => {
    const { handle, stats } = await openForRead(at('a.txt'), inside);
    try {
      expect([(await handle.readFile()).toString(), stats.size]).toEqual(['hello\n', 6]);
    } finally {
      await handle.close();
    }
    const { fd } = openForReadSync(at('a.txt'), inside);
    closeSync(fd);
    await expect(openForRead(at('d'), inside)).rejects.toMatchObject({ code: 'FILE_POLICY_DENIED' });
    expect(() => openForReadSync(at('d'), inside)).toThrow(expect.objectContaining({ code: 'FILE_POLICY_DENIED' }));
  });

  it('readSmallFileSync reads a small file whole and returns null, reading nothing, over its cap', () => {
    expect(readSmallFileSync(at('a.txt'), inside, 100)?.bytes.toString()).toBe('hello\n');
    expect(readSmallFileSync(at('big'), inside, 100)).toBeNull();
  });

  it('readWholeSync reads up to size + 1 bytes (a file that grew shows it)', () => {
    const fd = openSync(at('big'), 'r');
    try {
      expect(readWholeSync(fd, 5000).length).toBe(5000);
      expect(readWholeSync(fd, 10).length).toBe(11);
    } finally {
      closeSync(fd);
    }
  });

  it('readWholeSync with the fstat size answers as without it: the whole file, a grown one one byte over, a shrunk one short', () => {
    const fd = openSync(at('big'), 'r');
    try {
      // The size fstat said (the read stops there: one read), a grown file (more than fstat said), a shrunk one.
      for (const size of [5000, 10, 4999, 6000]) {
        const flagged = readWholeSync(fd, size, true);
        expect(flagged.equals(readWholeSync(fd, size))).toBe(true);
        expect(flagged.length).toBe(Math.min(5000, size + 1));
      }
      expect(readWholeSync(fd, 5000, true).toString()).toBe('x'.repeat(5000));
    } finally {
      closeSync(fd);
    }
  });
});

describe('text facts', () => {
  it('line-ending style, BOM and binary detection', () => {
    expect([eolFromCounts(0, 0), eolFromCounts(0, 2), eolFromCounts(2, 0), eolFromCounts(1, 1)]).toEqual([
      'none',
      'lf',
      'crlf',
      'mixed',
    ]);
    expect([hasUtf8Bom(Buffer.from([0xef, 0xbb, 0xbf, 0x41])), hasUtf8Bom(Buffer.from('ab'))]).toEqual([true, false]);
    const euro = Buffer.from('a€'); // 61 e2 82 ac
    expect(looksBinary(Buffer.from('text'), true)).toBe(false);
    expect(looksBinary(Buffer.from([0x61, 0, 0x62]), false)).toBe(true);
    expect(looksBinary(euro.subarray(0, 3), false)).toBe(false); // a prefix cut mid-character
    expect(looksBinary(euro.subarray(0, 3), true)).toBe(true); // the whole file: invalid UTF-8
    expect(looksBinary(Buffer.from([0xff, 0xfe, 0xfd, 0xfc, 0x41]), false)).toBe(true);
  });
});

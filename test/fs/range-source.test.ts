/**
 * The sources a range read reads from (src/fs/range-source.ts): bytes already in memory answer as the file's handle
 * would — a read inside, across and past the end, and the facts — and only they expose their bytes.
 */
import { closeSync, fstatSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bytesSource, fdSource, inMemoryBytes } from '../../src/fs/range-source.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-range-source-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('range sources', () => {
  const file = path.join(dir, 'f.txt');
  const content = Buffer.from('0123456789');
  writeFileSync(file, content);

  it('bytesSource: reads inside, across and past the end like a handle; stat gives the facts; its bytes are exposed', async () => {
    const fd = openSync(file, 'r');
    try {
      const stats = fstatSync(fd);
      const source = bytesSource(content, stats);
      const buf = Buffer.alloc(8, 0x2e);
      expect((await source.read(buf, 0, 4, 2)).bytesRead).toBe(4);
      expect(buf.toString()).toBe('2345....');
      const across = Buffer.alloc(8, 0x2e);
      expect((await source.read(across, 2, 6, 7)).bytesRead).toBe(3);
      expect(across.toString()).toBe('..789...');
      const past = Buffer.alloc(4, 0x2e);
      expect((await source.read(past, 0, 4, 20)).bytesRead).toBe(0);
      expect(past.toString()).toBe('....');
      expect((await source.stat()).size).toBe(10);
      expect(inMemoryBytes(source)).toBe(content);
    } finally {
      closeSync(fd);
    }
  });

  it('fdSource: the same answers from the descriptor; it exposes no bytes', async () => {
    const fd = openSync(file, 'r');
    try {
      const source = fdSource(fd);
      const buf = Buffer.alloc(4);
      expect((await source.read(buf, 0, 4, 6)).bytesRead).toBe(4);
      expect(buf.toString()).toBe('6789');
      expect((await source.read(Buffer.alloc(4), 0, 4, 20)).bytesRead).toBe(0);
      expect((await source.stat()).size).toBe(10);
      expect(inMemoryBytes(source)).toBeUndefined();
    } finally {
      closeSync(fd);
    }
  });
});

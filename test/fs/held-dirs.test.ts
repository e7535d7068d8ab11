/**
 * Directories held open between calls (src/fs/held-dirs.ts `withHeldDirSync`, issue #19), in-process on real
 * trees. Pins:
 *  - a second call on the same directory reuses the held descriptor (no new open);
 *  - a held directory is proven again before each use: one moved away and replaced is opened afresh (the new one is
 *    read, never the old one, wherever it went); one swapped for a link to outside is NOT_ALLOWED (symlink_swapped)
 *    and nothing outside is opened; one deleted is ENOENT;
 *  - at most HELD_DIRS_MAX are held (the process's descriptors stay bounded), the least recently used closed first;
 *  - the held directory answers containment with the predicate of the call using it now;
 *  - none is held once HELD_DIRS_IDLE_MS passed without a use (review: a held directory kept its mount busy);
 *  - releaseHeldDirs closes them all.
 */
import {
  closeSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { HELD_DIRS_IDLE_MS, HELD_DIRS_MAX, releaseHeldDirs, withHeldDirSync } from '../../src/fs/held-dirs.js';
import { DESCRIPTOR_RELATIVE, type VerifiedDir } from '../../src/fs/verified-dir.js';
import { ToolError } from '../../src/errors/tool-error.js';
import { makeTree } from '../helpers/tree.js';

const T = makeTree({ root: { d: { x: 'one' } }, out: { x: 'OUTSIDE' } }, 'fs-tools-held-dirs-');
afterAll(() => T.cleanup());
afterEach(() => releaseHeldDirs());
const R = path.join(T.dir, 'root');
const D = path.join(R, 'd');
const OUT = path.join(T.dir, 'out');
const inside = (p: string): boolean => p === R || p.startsWith(`${R}/`);

/** Reads entry `name` of `dir` through a held descriptor; returns the content and the descriptor number used. */
function readVia(dir: string, name: string, isInside = inside): { text: string; fd: number } {
  return withHeldDirSync(dir, isInside, (d: VerifiedDir) => {
    const fd = d.openFileSync(name, { flags: 0 });
    try {
      return { text: readFileSync(fd, 'utf8'), fd: d.fd };
    } finally {
      closeSync(fd);
    }
  });
}

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

describe.runIf(DESCRIPTOR_RELATIVE)('withHeldDirSync', () => {
  it('reuses the held descriptor on the next call', () => {
    const first = readVia(D, 'x');
    const second = readVia(D, 'x');
    expect(first.text).toBe('one');
    expect(second.fd).toBe(first.fd);
  });

  it('a held directory hands out no open-time stat (it would be stale by the next call: a walk keys listings by it)', () => {
    const taken: Array<unknown> = [];
    // The first call opens and holds it, the second reuses it: neither may hand out the open's stat.
    withHeldDirSync(D, inside, (d: VerifiedDir) => taken.push(d.takeOpenStat()));
    withHeldDirSync(D, inside, (d: VerifiedDir) => taken.push(d.takeOpenStat()));
    expect(taken).toEqual([null, null]);
  });

  it('opens afresh a directory moved away and replaced since: the new one is read, never the old one', () => {
    const before = readVia(D, 'x');
    renameSync(D, path.join(R, 'd.old'));
    mkdirSync(D);
    writeFileSync(path.join(D, 'x'), 'two');
    try {
      const after = readVia(D, 'x');
      expect(after.text).toBe('two');
      expect(before.text).toBe('one');
    } finally {
      rmSync(D, { recursive: true });
      renameSync(path.join(R, 'd.old'), D);
    }
  });

  it('refuses a directory swapped for a link to outside (NOT_ALLOWED), opening nothing there', () => {
    readVia(D, 'x');
    renameSync(D, path.join(R, 'd.old'));
    symlinkSync(OUT, D);
    try {
      let opened = false;
      let thrown: unknown;
      try {
        withHeldDirSync(D, inside, () => (opened = true));
      } catch (error) {
        thrown = error;
      }
      expect(opened).toBe(false);
      expect(thrown).toBeInstanceOf(ToolError);
      expect((thrown as ToolError).code).toBe('NOT_ALLOWED');
      expect((thrown as ToolError).details.reason).toBe('symlink_swapped');
    } finally {
      rmSync(D);
      renameSync(path.join(R, 'd.old'), D);
    }
  });

  it('fails with ENOENT for a held directory deleted since', () => {
    const gone = path.join(R, 'gone');
    mkdirSync(gone);
    writeFileSync(path.join(gone, 'x'), 'soon gone');
    readVia(gone, 'x');
    rmSync(gone, { recursive: true });
    expect(() => readVia(gone, 'x')).toThrow(expect.objectContaining({ code: 'ENOENT' }) as Error);
  });

  it('holds at most HELD_DIRS_MAX directories, least recently used closed first', () => {
    const many = Array.from({ length: HELD_DIRS_MAX + 8 }, (_, i) => path.join(R, `m${i}`));
    for (const dir of many) {
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'x'), dir);
    }
    const baseline = openDescriptors();
    const first = readVia(many[0], 'x');
    for (const dir of many.slice(1)) expect(readVia(dir, 'x').text).toBe(dir);
    expect(openDescriptors()).toBeLessThanOrEqual(baseline + HELD_DIRS_MAX);
    // The first one was closed and is opened again when it is used again.
    expect(readVia(many[0], 'x').text).toBe(many[0]);
    expect(first.text).toBe(many[0]);
  });

  it('answers containment with the predicate of the call using it now', () => {
    const none = (): boolean => false;
    expect(withHeldDirSync(D, inside, (d) => d.isInside(D))).toBe(true);
    expect(withHeldDirSync(D, none, (d) => d.isInside(D))).toBe(false);
  });

  it('closes every held directory once none was used for HELD_DIRS_IDLE_MS, and not before', () => {
    vi.useFakeTimers();
    try {
      const baseline = openDescriptors();
      readVia(D, 'x');
      vi.advanceTimersByTime(HELD_DIRS_IDLE_MS / 2);
      readVia(D, 'x'); // used again: the idle time starts over
      vi.advanceTimersByTime(HELD_DIRS_IDLE_MS * 0.75);
      expect(openDescriptors()).toBe(baseline + 1);
      vi.advanceTimersByTime(HELD_DIRS_IDLE_MS);
      expect(openDescriptors()).toBe(baseline);
      expect(readVia(D, 'x').text).toBe('one'); // opened afresh
    } finally {
      vi.useRealTimers();
    }
  });

  it('releaseHeldDirs closes every held descriptor', () => {
    const baseline = openDescriptors();
    readVia(D, 'x');
    expect(openDescriptors()).toBe(baseline + 1);
    releaseHeldDirs();
    expect(openDescriptors()).toBe(baseline);
  });
});

/**
 * Attack on the git view's native entry-kinds batches (src/vcs/git-native-stat.ts `entryKinds`, git-verify.ts
 * `checkEntryDirectories`; docs/security.md "Bounded work": no call holds the event loop > ~100 ms), the deep side of
 * git-entry-kinds-batch-loop.test.ts. One index entry `a/a/…/a/f` 2,000 directories deep names 2,000 work-tree
 * directories, each path up to 4,000 bytes: fewer than one batch's 2,048 paths, but a statx walks every component, so
 * one batch of them all held the event loop 157-169 ms (4 MB of paths). Batches are bounded by bytes too (64 KiB:
 * 63 batches, the longest 3-4 ms). Pinned here: the longest run between two event-loop turns over that chain stays
 * under BOUND_MS with the addon and without; and the batches still find a directory link far past the first batch
 * (the 5,001st of 6,000 directories), so chunking skips none.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { NativeAddon } from '../../src/fs/native-reader.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';
import { longestRun } from '../helpers/stall-watchdog.js';

const state = vi.hoisted(() => ({ addon: null as NativeAddon | null }));
vi.mock('../../src/fs/native-load.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/fs/native-load.js')>()),
  mainThreadNativeAddon: () => state.addon,
}));
const { checkEntryDirectories } = await import('../../src/vcs/git-verify.js');
const { Slicer } = await import('../../src/vcs/slicer.js');

/** The SPEC's ~100 ms. */
const BOUND_MS = 100;
const DEPTH = 2000;

const loaded = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-entry-kinds-deep-')));
// rmSync recurses once per level and overflows the stack on a 2,000-deep chain.
afterAll(() => execFileSync('rm', ['-rf', base]));

/** `checkEntryDirectories` of `directories` under `top` with `addon` in the main thread (null: the lstat path). */
async function check(top: string, directories: Buffer[], addon: NativeAddon | null, locate: (p: string) => void) {
  state.addon = addon;
  try {
    await checkEntryDirectories(top, directories, { locate } as never, new Slicer());
  } finally {
    state.addon = null;
  }
}

describe.runIf(loaded !== null)('the work-tree directories of a deep index entry', () => {
  it(`checkEntryDirectories over a ${DEPTH}-deep chain never holds the event loop > ${BOUND_MS} ms`, async () => {
    const top = path.join(base, 'deep');
    const rel = Array<string>(DEPTH).fill('a').join('/');
    mkdirSync(path.join(top, rel), { recursive: true });
    const entry = Buffer.from(`${rel}/f`);
    const directories: Buffer[] = [];
    for (let slash = entry.indexOf(0x2f); slash >= 0; slash = entry.indexOf(0x2f, slash + 1))
      directories.push(entry.subarray(0, slash));
    expect(directories).toHaveLength(DEPTH);
    const located: string[] = [];
    const locate = (p: string) => void located.push(p);
    const run = (addon: NativeAddon | null) => longestRun(() => check(top, directories, addon, locate));
    const js = [await run(null), await run(null)];
    const native = [await run(loaded), await run(loaded)];
    console.log(
      `a ${DEPTH}-deep chain, longest run between event-loop turns: JavaScript path ` +
        `${js.map((t) => t.toFixed(0)).join('/')} ms, native batches ${native.map((t) => t.toFixed(0)).join('/')} ms`,
    );
    expect(located).toEqual([]); // no directory of the chain is a link
    expect(Math.min(...js)).toBeLessThan(BOUND_MS);
    expect(Math.min(...native)).toBeLessThan(BOUND_MS);
  }, 120_000);

  it('the batches find a directory link past the first batch, as the lstat path does', async () => {
    const top = path.join(base, 'wide');
    const outside = path.join(base, 'outside');
    mkdirSync(outside, { recursive: true });
    const directories: Buffer[] = [];
    for (let i = 0; i < 6000; i++) {
      const name = `d${String(i).padStart(4, '0')}`;
      if (i === 5000) symlinkSync(outside, path.join(top, name));
      else mkdirSync(path.join(top, name), { recursive: true });
      directories.push(Buffer.from(name));
    }
    for (const addon of [loaded, null]) {
      const located: string[] = [];
      await check(top, directories, addon, (p) => void located.push(p));
      expect(located, addon === null ? 'lstat path' : 'native batches').toEqual([path.join(top, 'd5000')]);
    }
  }, 120_000);
});

/**
 * Attack on the git view's native entry-kinds batch (src/vcs/git-native-stat.ts `entryKinds`, docs/security.md
 * "Bounded work": no call holds the event loop > ~100 ms). A hostile repository's index can name hundreds of thousands
 * of entries each in a directory of its own (`d000000/f` …; a 128 MiB index holds about a million). main lstats those
 * work-tree directories one at a time with a slicer check between them, so `checkEntryDirectories` yields every ~2 ms.
 * r18-git packs every directory path into one buffer and hands the whole list to one synchronous statx batch on the
 * main thread, on every git call (the index and its directory list are kept between calls, the batch is not).
 *
 * Measured here in one process, the same minute: `checkEntryDirectories` over 150,000 existing directories, first on
 * the JavaScript path (no addon in the main thread, as `--native=off` or main), then with the addon; the longest run
 * between two event-loop turns (setImmediate ticks) must stay under BOUND_MS on both. Over a real server (250,000
 * directories, load 15 on 2 cores) a list_allowed_directories probe waited 1.7-4.0 s against 1.3-1.6 s of an idle
 * server at the same moments.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
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
const DIRECTORIES = 150_000;

const loaded = loadBuiltAddon()?.addon ?? null;
const top = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-entry-kinds-loop-')));
afterAll(() => rmSync(top, { recursive: true, force: true }));

describe.runIf(loaded !== null)('the work-tree directories of a wide index', () => {
  it(`checkEntryDirectories over ${DIRECTORIES} directories never holds the event loop > ${BOUND_MS} ms`, async () => {
    const directories: Buffer[] = [];
    for (let i = 0; i < DIRECTORIES; i++) {
      const name = `d${String(i).padStart(6, '0')}`;
      mkdirSync(path.join(top, name));
      directories.push(Buffer.from(name));
    }
    const verify = {
      locate: () => {
        throw new Error('no directory here is a link');
      },
    } as never;
    const run = async (addon: NativeAddon | null): Promise<number> => {
      state.addon = addon;
      try {
        return await longestRun(() => checkEntryDirectories(top, directories, verify, new Slicer()));
      } finally {
        state.addon = null;
      }
    };
    const js = [await run(null), await run(null)];
    const native = [await run(loaded), await run(loaded)];
    console.log(
      `${DIRECTORIES} entry directories, longest run between event-loop turns: JavaScript path ` +
        `${js.map((t) => t.toFixed(0)).join('/')} ms, native batch ${native.map((t) => t.toFixed(0)).join('/')} ms`,
    );
    expect(Math.min(...js)).toBeLessThan(BOUND_MS);
    expect(Math.min(...native)).toBeLessThan(BOUND_MS);
  }, 300_000);
});

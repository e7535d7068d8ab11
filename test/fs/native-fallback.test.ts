/**
 * Content search without the native addon (issue #19): the reader threads fall back to the JavaScript path, with the
 * same results, when the addon is switched off (`--native=off`: `SearchReaderPool.setNative(false)`), when the file is
 * missing next to the worker, and when it fails to load (a corrupt file); and they do load it when it is there. Which
 * path ran is read from /proc/self/maps (reader threads are threads of this process: a loaded addon is mapped), so
 * the order of the cases matters: every case that must not load it runs before the one that does.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon, nativeAddonUrl } from '../../src/fs/native-reader.js';
import { SearchReaderPool, type ReaderOptions } from '../../src/fs/search-reader.js';

const DIST = new URL('../../dist/', import.meta.url);
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-native-fallback-')));
const root = path.join(base, 'root');
afterAll(() => rmSync(base, { recursive: true, force: true }));

const files = Array.from({ length: 40 }, (_, i) => {
  const p = path.join(root, `d${i % 3}`, `f${i}.txt`);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, i % 4 === 0 ? `x\nneedle ${i}\n` : i % 4 === 1 ? Buffer.from([0x6e, 0, 0x65]) : `hay ${i}\n`);
  return p;
});
const options: ReaderOptions = {
  roots: [{ real: root }],
  maxFileBytes: 1e6,
  keepMaxBytes: 1e5,
  needle: Buffer.from('needle'),
  match: { source: 'needle \\d+', flags: 'u', bounded: true },
};
const expected = files.map((_, i) =>
  i % 4 === 0 ? { kind: 'hits', hits: [[1, 0]] } : { kind: i % 4 === 1 ? 'binary' : 'no_match' },
);
const search = async (pool: SearchReaderPool) => {
  const session = pool.session(options);
  const got = await Promise.all(files.map((f) => session.read(f)));
  return got.map((r) => (r.kind === 'hits' ? { kind: r.kind, hits: r.hits } : { kind: r.kind }));
};
const mapped = () => readFileSync('/proc/self/maps', 'utf8').includes('fs_tools_native.node');

/** A copy of the bundled worker in its own directory, with `native` (if any) as its addon. */
function workerCopy(native: Buffer | null): URL {
  const dir = mkdtempSync(path.join(base, 'worker-'));
  copyFileSync(new URL('search-reader-worker.js', DIST), path.join(dir, 'search-reader-worker.js'));
  if (native) {
    const addon = nativeAddonUrl(pathToFileURL(`${dir}/`));
    mkdirSync(path.dirname(addon.pathname), { recursive: true });
    writeFileSync(addon, native);
  }
  return pathToFileURL(path.join(dir, 'search-reader-worker.js'));
}

describe('reader threads without the addon', () => {
  it('switched off (--native=off): the JavaScript path, the same results, the addon never loaded', async () => {
    expect(mapped()).toBe(false);
    const pool = new SearchReaderPool(2, new URL('search-reader-worker.js', DIST));
    pool.setNative(false);
    expect(await search(pool)).toEqual(expected);
    expect(mapped()).toBe(false);
  });

  it('missing next to the worker: the JavaScript path', async () => {
    const pool = new SearchReaderPool(1, workerCopy(null));
    expect(await search(pool)).toEqual(expected);
    expect(mapped()).toBe(false);
  });

  it('failing to load (a corrupt file, a file that is not an addon): the JavaScript path', async () => {
    const corrupt = new SearchReaderPool(1, workerCopy(Buffer.from('\x7fELF not really')));
    expect(await search(corrupt)).toEqual(expected);
    const script = new SearchReaderPool(1, workerCopy(Buffer.from('module.exports = { abi: 1 };')));
    expect(await search(script)).toEqual(expected);
    expect(mapped()).toBe(false);
    const broken = mkdtempSync(path.join(base, 'broken-'));
    writeFileSync(path.join(broken, 'x.node'), 'garbage');
    expect(loadNativeAddon(pathToFileURL(path.join(broken, 'x.node')))).toBeNull();
  });

  it.runIf(spawnSync('cc', ['--version']).status === 0)(
    'present (built into dist/ where a compiler exists): the reader threads load it, with the same results',
    async () => {
      const pool = new SearchReaderPool(2, new URL('search-reader-worker.js', DIST));
      expect(await search(pool)).toEqual(expected);
      expect(mapped()).toBe(true);
    },
  );
});

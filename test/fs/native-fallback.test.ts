/**
 * Content search without the native addon (issue #19): the reader threads fall back to the JavaScript path, with the
 * same results, when the addon is switched off (`--native=off`: `SearchReaderPool.setNativeAddon(null)`), when the
 * start-up load finds no file, one that is not the one built (a digest mismatch: a corrupt file, a file that is not an
 * addon), or none recorded; and they do use it when it loaded. Which path ran is read from /proc/self/maps (reader
 * threads are threads of this process: a loaded addon is mapped), so the order of the cases matters: every case that
 * must not load it runs before the one that does.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeAddon, nativeAddonUrl } from '../../src/fs/native-load.js';
import { attachNativeAddon } from '../../src/fs/native-reader.js';
import { SearchReaderPool } from '../../src/fs/search-reader.js';
import type { ReaderOptions } from '../../src/fs/search-reader-protocol.js';
import { fileSha256, loadBuiltAddon, workerCode } from '../helpers/worker-code.js';

const WORKER = await workerCode('search-reader-worker');
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

/** An installed layout in its own directory with `bytes` (if any) as its addon; returns the addon's URL. */
function installedAddon(bytes: Buffer | null): URL {
  const dir = mkdtempSync(path.join(base, 'install-'));
  const addon = nativeAddonUrl(pathToFileURL(`${dir}/`));
  if (bytes) {
    mkdirSync(path.dirname(addon.pathname), { recursive: true });
    writeFileSync(addon, bytes);
  }
  return addon;
}
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('reader threads without the addon', () => {
  it('switched off (--native=off): the JavaScript path, the same results, the addon never loaded', async () => {
    expect(mapped()).toBe(false);
    const pool = new SearchReaderPool(2, WORKER);
    pool.setNativeAddon(null);
    expect(await search(pool)).toEqual(expected);
    expect(mapped()).toBe(false);
  });

  it('missing, or no digest recorded (a build without it; src/ alone): nothing loads', () => {
    expect(loadNativeAddon(installedAddon(null), 'a'.repeat(64))).toEqual({ loaded: null, reason: 'missing' });
    const bytes = Buffer.from('\x7fELF whatever');
    expect(loadNativeAddon(installedAddon(bytes), null)).toEqual({ loaded: null, reason: 'no_digest' });
    // src/ run by vitest records no digest: the default load finds none.
    expect(loadNativeAddon()).toEqual({ loaded: null, reason: 'no_digest' });
    expect(mapped()).toBe(false);
  });

  it('a file that is not the one built (corrupt, a script, a FIFO): refused before anything is mapped', () => {
    const built = fileSha256(nativeAddonUrl(new URL('../../dist/', import.meta.url))) ?? 'b'.repeat(64);
    for (const bytes of [Buffer.from('\x7fELF not really'), Buffer.from('module.exports = { abi: 1 };')]) {
      expect(loadNativeAddon(installedAddon(bytes), built)).toEqual({ loaded: null, reason: 'digest_mismatch' });
    }
    // The right digest of bytes that are no addon: checked, copied, and refused by the loader (no throw).
    const garbage = Buffer.from('garbage');
    const garbageUrl = installedAddon(garbage);
    expect(loadNativeAddon(garbageUrl, sha256(garbage))).toEqual({ loaded: null, reason: 'not_loadable' });
    // Each private copy it tried (temporary directory, /dev/shm, the addon's own directory) is gone.
    const mine = new RegExp(`^fs-tools-native-\\d+-${process.pid}-`);
    for (const dir of [os.tmpdir(), '/dev/shm', path.dirname(garbageUrl.pathname)]) {
      expect(readdirSync(dir).filter((n) => mine.test(n))).toEqual([]);
    }
    const fifo = installedAddon(null);
    mkdirSync(path.dirname(fifo.pathname), { recursive: true });
    spawnSync('mkfifo', [fifo.pathname]);
    expect(loadNativeAddon(fifo, built)).toEqual({ loaded: null, reason: 'missing' });
    expect(mapped()).toBe(false);
    // A thread never attaches to a file by name, only to this process's descriptor of the loaded copy.
    expect(attachNativeAddon(fifo.pathname)).toBeNull();
  });

  it.runIf(spawnSync('cc', ['--version']).status === 0)(
    'present (built into dist/ where a compiler exists): loaded from a private copy, the reader threads use it',
    async () => {
      const loaded = loadBuiltAddon();
      expect(loaded?.path).toMatch(/^\/proc\/self\/fd\/\d+$/);
      // The copy has no name left: mapped as deleted, in a private directory that is gone too.
      const line = readFileSync('/proc/self/maps', 'utf8')
        .split('\n')
        .find((l) => l.includes('fs_tools_native.node'));
      expect(line).toMatch(/\/fs-tools-native-\d+-\d+-\d+-\w{6}\/fs_tools_native\.node \(deleted\)$/);
      const pool = new SearchReaderPool(2, WORKER);
      pool.setNativeAddon(loaded!.path);
      expect(await search(pool)).toEqual(expected);
    },
  );
});

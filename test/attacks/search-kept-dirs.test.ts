/**
 * Attacks on the verified directories a content-search reader thread keeps from one batch of a search to the next
 * (src/fs/search-reader-read.ts `keepDir`, src/fs/search-reader-worker.ts): what a kept chain of directory
 * descriptors must never change is what a batch reads. Between two batches of one search, each identity the chain
 * rests on is changed — the directory itself replaced, an ancestor moved out of the roots, an ancestor swapped for a
 * link to a directory outside, the roots themselves (another search) — and the second batch must answer exactly what
 * a batch that opened everything afresh answers, with no byte of anything outside the roots. Both paths (the native
 * addon and JavaScript). Through the real server: after a search the reader threads hold no descriptor of the tree
 * once idle.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { NativeAddon } from '../../src/fs/native-reader.js';
import type { ReaderOptions, ReadOutcome } from '../../src/fs/search-reader-protocol.js';
import { closeDir, keepDir, readBatch, readerState, type ReaderState } from '../../src/fs/search-reader-read.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';
import { connect } from '../helpers/server.js';

const addon = loadBuiltAddon()?.addon ?? null;
const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-kept-dirs-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let n = 0;
/** A fresh tree: root/a/b/{one,two}.txt (inside) and outside/b/{one,two}.txt (outside the roots, SECRET content). */
function tree(): { root: string; outside: string; options: ReaderOptions } {
  const top = path.join(base, `t${n++}`);
  const root = path.join(top, 'root');
  const outside = path.join(top, 'outside');
  for (const d of [path.join(root, 'a', 'b'), path.join(root, 'a', 'c'), path.join(outside, 'b')]) {
    mkdirSync(d, { recursive: true });
  }
  writeFileSync(path.join(root, 'a', 'b', 'one.txt'), 'inside one\n');
  writeFileSync(path.join(root, 'a', 'b', 'two.txt'), 'inside two\n');
  writeFileSync(path.join(root, 'a', 'c', 'three.txt'), 'inside three\n');
  writeFileSync(path.join(outside, 'b', 'one.txt'), 'SECRET one\n');
  writeFileSync(path.join(outside, 'b', 'two.txt'), 'SECRET two\n');
  const options: ReaderOptions = {
    roots: [{ real: root }],
    maxFileBytes: 1e6,
    keepMaxBytes: 1e5,
    needle: null,
    match: null,
  };
  return { root, outside, options };
}

/** One batch as the reader thread answers it (keepDir after it, as the thread does), bytes as text. */
function batch(files: string[], options: ReaderOptions, state: ReaderState): unknown[] {
  const got: unknown[] = [];
  readBatch(files, options, state, (i, r: ReadOutcome) => {
    got[i] = 'bytes' in r ? { kind: r.kind, text: Buffer.from(r.bytes).toString('utf8') } : r;
  });
  keepDir(state.dir);
  return got;
}

/** The same batch read with nothing kept (a fresh thread state). */
function fresh(files: string[], options: ReaderOptions, withAddon: NativeAddon | null): unknown[] {
  const state = readerState(withAddon);
  try {
    return batch(files, options, state);
  } finally {
    closeDir(state.dir);
  }
}

const paths: Array<[string, NativeAddon | null]> = [['JavaScript', null]];
if (addon) paths.push(['native', addon]);

describe.each(paths)('a chain kept between batches (%s path)', (_name, withAddon) => {
  it('reads the files of a later batch through the kept chain, the same as afresh', () => {
    const { root, options } = tree();
    const state = readerState(withAddon);
    const first = [path.join(root, 'a', 'b', 'one.txt')];
    const second = [path.join(root, 'a', 'b', 'two.txt'), path.join(root, 'a', 'c', 'three.txt')];
    expect(batch(first, options, state)).toEqual([{ kind: 'text', text: 'inside one\n' }]);
    expect(state.dir.stack.map((d) => d.path)).toEqual([root, path.join(root, 'a'), path.join(root, 'a', 'b')]);
    expect(batch(second, options, state)).toEqual(fresh(second, options, withAddon));
    expect(batch(second, options, state)[1]).toEqual({ kind: 'text', text: 'inside three\n' });
    closeDir(state.dir);
    expect(state.dir.stack).toEqual([]);
  });

  it('the directory replaced between batches: the new one is read, as afresh', () => {
    const { root, options } = tree();
    const state = readerState(withAddon);
    batch([path.join(root, 'a', 'b', 'one.txt')], options, state);
    renameSync(path.join(root, 'a', 'b'), path.join(root, 'a', 'old-b'));
    mkdirSync(path.join(root, 'a', 'b'));
    writeFileSync(path.join(root, 'a', 'b', 'two.txt'), 'replaced two\n');
    const second = [path.join(root, 'a', 'b', 'one.txt'), path.join(root, 'a', 'b', 'two.txt')];
    const got = batch(second, options, state);
    expect(got).toEqual([{ kind: 'unreadable' }, { kind: 'text', text: 'replaced two\n' }]);
    expect(got).toEqual(fresh(second, options, withAddon));
    closeDir(state.dir);
  });

  it('an ancestor moved out of the roots between batches: nothing of it is read', () => {
    const { root, outside, options } = tree();
    const state = readerState(withAddon);
    batch([path.join(root, 'a', 'b', 'one.txt')], options, state);
    // The kept descriptors of root/a and root/a/b now lie outside the roots; a directory of the same names is put back.
    renameSync(path.join(root, 'a'), path.join(outside, 'moved-a'));
    mkdirSync(path.join(root, 'a', 'c'), { recursive: true });
    writeFileSync(path.join(root, 'a', 'c', 'three.txt'), 'put back three\n');
    const second = [path.join(root, 'a', 'b', 'two.txt'), path.join(root, 'a', 'c', 'three.txt')];
    const got = batch(second, options, state);
    expect(got).toEqual([{ kind: 'unreadable' }, { kind: 'text', text: 'put back three\n' }]);
    expect(got).toEqual(fresh(second, options, withAddon));
    closeDir(state.dir);
  });

  it('an ancestor swapped for a link to a directory outside between batches: nothing outside is read', () => {
    const { root, outside, options } = tree();
    const state = readerState(withAddon);
    batch([path.join(root, 'a', 'b', 'one.txt')], options, state);
    renameSync(path.join(root, 'a'), path.join(root, 'gone-a'));
    mkdirSync(path.join(root, 'a'));
    symlinkSync(path.join(outside, 'b'), path.join(root, 'a', 'b'));
    const second = [path.join(root, 'a', 'b', 'one.txt'), path.join(root, 'a', 'b', 'two.txt')];
    const got = batch(second, options, state);
    expect(got).toEqual([{ kind: 'unreadable' }, { kind: 'unreadable' }]);
    expect(got).toEqual(fresh(second, options, withAddon));
    expect(JSON.stringify(got)).not.toContain('SECRET');
    closeDir(state.dir);
  });

  it('another search (other roots) does not go on from the chain: a directory outside its roots is not read', () => {
    const { root, options } = tree();
    const state = readerState(withAddon);
    batch([path.join(root, 'a', 'b', 'one.txt')], options, state);
    const narrower: ReaderOptions = { ...options, roots: [{ real: path.join(root, 'a', 'c') }] };
    const files = [path.join(root, 'a', 'b', 'two.txt'), path.join(root, 'a', 'c', 'three.txt')];
    const got = batch(files, narrower, state);
    expect(got).toEqual([{ kind: 'unreadable' }, { kind: 'text', text: 'inside three\n' }]);
    expect(got).toEqual(fresh(files, narrower, withAddon));
    expect(state.dir.stack.map((d) => d.path)).toEqual([path.join(root, 'a', 'c')]);
    closeDir(state.dir);
  });
});

describe('the reader threads of a real server', () => {
  it('hold no descriptor of the tree once idle after a search', async () => {
    const { root } = tree();
    for (let i = 0; i < 600; i++) writeFileSync(path.join(root, 'a', 'c', `f${i}.txt`), `line ${i}\n`);
    const client = await connect('modern', { args: [root] });
    try {
      const r = await client.call('search_files', { path: root, query: 'line 5' });
      expect(r.isError).toBeFalsy();
      const pid = client.pid()!;
      const underRoot = () =>
        readdirSync(`/proc/${pid}/fd`).filter((fd) => {
          try {
            return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(root);
          } catch {
            return false;
          }
        });
      // The threads close what they kept KEEP_DIRS_IDLE_MS after their last batch (and the walk's held directories
      // go after the server's own idle time): poll rather than sleep a fixed time.
      const deadline = Date.now() + 5000;
      while (underRoot().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(underRoot()).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

/**
 * list_directory's page memo (src/tools/list-memo.ts), in-process through callTool: a repeated names-and-types call
 * gets the kept page (the same sealed object), equal to a page built afresh; after each kind of change the next call
 * sees it — an entry created, removed or renamed, a .gitignore edited in place or created in the directory or a
 * parent, a change within the racy window, another argument, a cursor page; pages that depend on more than the memo
 * checks (long, a symlink, a subdirectory walked) are never kept; the memo's byte bound and policy identity.
 */
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { RACY_MS } from '../../src/fs/listing-cache.js';
import { WalkTrace } from '../../src/fs/walk-shapes.js';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { callTool } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { clearListMemo, ListPageMemo, listMemoStats, type ListPageResult } from '../../src/tools/list-memo.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { makeTree } from '../helpers/tree.js';

type Page = { structured: Record<string, any>; text: string };

let R: string;
let cleanup: () => void;
let stateDir: { dir: string; cleanup: () => void };
let state: ProcessState;
const signal = new AbortController().signal;

async function list(args: Record<string, unknown>): Promise<Page> {
  const outcome = await callTool(state, 'list_directory', args, signal);
  if (!outcome.ok) throw new Error(JSON.stringify(outcome.envelope));
  return { structured: outcome.structured, text: outcome.text.join('\n') };
}

/** The page as a fresh build gives it (the memo emptied first): what the memo must always equal. */
async function fresh(args: Record<string, unknown>): Promise<Page> {
  clearListMemo();
  return list(args);
}

const same = (a: Page, b: Page) => {
  expect(JSON.stringify(a.structured)).toBe(JSON.stringify(b.structured));
  expect(a.text).toBe(b.text);
};

const DIRS = ['repeat', 'created', 'removed', 'renamed', 'edit', 'newignore', 'parent/child', 'args', 'cursor', 'racy'];

beforeAll(async () => {
  ({ dir: R, cleanup } = makeTree({}, 'fs-tools-list-memo-'));
  for (const d of [...DIRS, 'links', 'deep/sub', 'long']) {
    mkdirSync(path.join(R, d), { recursive: true });
    for (const name of ['a1', 'b1', 'c1', 'x1', 'y1']) writeFileSync(path.join(R, d, name), '');
  }
  writeFileSync(path.join(R, 'edit', '.gitignore'), 'x*\n');
  symlinkSync('a1', path.join(R, 'links', 'to-a1'));
  stateDir = makeTree({}, 'fs-tools-state-');
  const config = parseConfig(['--state-dir', stateDir.dir, R], {
    cwd: R,
    home: '/nonexistent-home',
    toolNames: TOOL_NAMES,
  });
  state = createProcessState(config, TOOLS, 'test');
  // Old enough that the directories' listings are not racy (a directory changed within RACY_MS is never kept).
  await new Promise((r) => setTimeout(r, RACY_MS + 100));
});
afterAll(() => {
  clearListMemo();
  cleanup();
  stateDir.cleanup();
});

const at = (d: string) => path.join(R, d);

describe('list_directory page memo', () => {
  it('hands out the kept page for a repeated call, equal to a fresh build', async () => {
    const first = await fresh({ path: at('repeat') });
    const again = await list({ path: at('repeat') });
    expect(again.structured).toBe(first.structured); // the kept page: not walked, built or serialized again
    expect(Object.isFrozen(first.structured.entries)).toBe(true);
    expect(listMemoStats().pages).toBe(1);
    expect(listMemoStats().bytes).toBeGreaterThan(0);
    const rebuilt = await fresh({ path: at('repeat') });
    expect(rebuilt.structured).not.toBe(first.structured);
    same(rebuilt, again);
    expect(again.structured.entries).toEqual(['a1', 'b1', 'c1', 'x1', 'y1']);
  });

  it('sees an entry created, removed or renamed', async () => {
    const kept = await list({ path: at('created') });
    expect((await list({ path: at('created') })).structured).toBe(kept.structured);
    writeFileSync(at('created/new1'), '');
    const created = await list({ path: at('created') });
    expect(created.structured.entries).toContain('new1');
    same(created, await fresh({ path: at('created') }));

    const before = await list({ path: at('removed') });
    expect((await list({ path: at('removed') })).structured).toBe(before.structured);
    rmSync(at('removed/b1'));
    const removed = await list({ path: at('removed') });
    expect(removed.structured.entries).toEqual(['a1', 'c1', 'x1', 'y1']);

    const old = await list({ path: at('renamed') });
    expect((await list({ path: at('renamed') })).structured).toBe(old.structured);
    renameSync(at('renamed/c1'), at('renamed/z9'));
    expect((await list({ path: at('renamed') })).structured.entries).toEqual(['a1', 'b1', 'x1', 'y1', 'z9']);
  });

  it('sees a .gitignore edited in place, created in the directory, or created and edited in a parent', async () => {
    const ignored = await list({ path: at('edit') });
    expect(ignored.structured.entries).toEqual(['.gitignore', 'a1', 'b1', 'c1', 'y1']);
    expect((await list({ path: at('edit') })).structured).toBe(ignored.structured);
    // Rewritten in place: the directory's own identity does not change, the text does.
    writeFileSync(at('edit/.gitignore'), 'y*\n');
    expect((await list({ path: at('edit') })).structured.entries).toEqual(['.gitignore', 'a1', 'b1', 'c1', 'x1']);

    const plain = await list({ path: at('newignore') });
    expect((await list({ path: at('newignore') })).structured).toBe(plain.structured);
    writeFileSync(at('newignore/.gitignore'), 'a*\n');
    expect((await list({ path: at('newignore') })).structured.entries).toEqual(['.gitignore', 'b1', 'c1', 'x1', 'y1']);

    const child = await list({ path: at('parent/child') });
    expect((await list({ path: at('parent/child') })).structured).toBe(child.structured);
    writeFileSync(at('parent/.gitignore'), 'b1\n');
    const underParent = await list({ path: at('parent/child') });
    expect(underParent.structured.entries).toEqual(['a1', 'c1', 'x1', 'y1']);
    // The parent's directory is racy now, the child's is not: the page is kept under the new text.
    expect((await list({ path: at('parent/child') })).structured).toBe(underParent.structured);
    writeFileSync(at('parent/.gitignore'), 'c1\n');
    expect((await list({ path: at('parent/child') })).structured.entries).toEqual(['a1', 'b1', 'x1', 'y1']);
    // And removed from the root of the chain.
    rmSync(at('parent/.gitignore'));
    expect((await list({ path: at('parent/child') })).structured.entries).toEqual(['a1', 'b1', 'c1', 'x1', 'y1']);
  });

  it('never keeps a page of a racy directory, and sees a change within the racy window', async () => {
    const changed = Date.now();
    writeFileSync(at('racy/n1'), '');
    const first = await list({ path: at('racy') });
    const second = await list({ path: at('racy') });
    // (on a machine so slow that the two calls came a racy window after the change, the directory was old enough)
    if (Date.now() - changed < RACY_MS) expect(second.structured).not.toBe(first.structured);
    same(first, second);
    writeFileSync(at('racy/n2'), '');
    expect((await list({ path: at('racy') })).structured.entries).toContain('n2');
    rmSync(at('racy/n2'));
    expect((await list({ path: at('racy') })).structured.entries).not.toContain('n2');
  });

  it('keeps one page per argument set, each equal to a fresh build', async () => {
    const variants: Record<string, unknown>[] = [
      { path: at('args') },
      { path: at('args'), exclude: ['b*'] },
      { path: at('args'), include: ['x*'] },
      { path: at('args'), max_entries: 2 },
      { path: at('args'), respect_gitignore: false },
      { path: 'args' }, // another spelling of the same directory: its own cursor fingerprint, its own page
    ];
    const expected = [];
    for (const v of variants) expected.push(await fresh(v));
    clearListMemo();
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < variants.length; i++) same(await list(variants[i]), expected[i]);
    }
    expect(listMemoStats().pages).toBe(variants.length);
    expect((await list(variants[1])).structured.entries).toEqual(['a1', 'c1', 'x1', 'y1']);
    expect((await list(variants[2])).structured.entries).toEqual(['x1']);
  });

  it('keeps cursor pages, and the next pages follow as from a fresh build', async () => {
    const walk = async () => {
      const pages: Page[] = [];
      let cursor: string | undefined;
      do {
        const p = await list({ path: at('cursor'), max_entries: 2, ...(cursor ? { cursor } : {}) });
        pages.push(p);
        cursor = p.structured.next_cursor ?? undefined;
      } while (cursor);
      return pages;
    };
    clearListMemo();
    const built = await walk();
    const kept = await walk();
    expect(built.map((p) => p.structured.entries)).toEqual([['a1', 'b1'], ['c1', 'x1'], ['y1']]);
    expect(kept.length).toBe(3);
    for (let i = 0; i < 3; i++) expect(kept[i].structured).toBe(built[i].structured);
    writeFileSync(at('cursor/b2'), '');
    const after = await walk();
    expect(after.map((p) => p.structured.entries)).toEqual([
      ['a1', 'b1'],
      ['b2', 'c1'],
      ['x1', 'y1'],
    ]);
  });

  it('never keeps a long page, a page with a symlink, or a walk that opened a subdirectory', async () => {
    for (const args of [{ path: at('long'), long: true }, { path: at('links') }, { path: at('deep'), depth: 2 }]) {
      clearListMemo();
      const a = await list(args);
      const b = await list(args);
      expect(b.structured).not.toBe(a.structured);
      same(a, b);
      expect(listMemoStats().pages).toBe(0);
    }
    // A depth-2 walk of a directory without subdirectories depends on its listing alone: kept.
    const flat = await list({ path: at('deep/sub'), depth: 2 });
    expect((await list({ path: at('deep/sub'), depth: 2 })).structured).toBe(flat.structured);
  });
});

describe('ListPageMemo', () => {
  const policy = { roots: [], allowSecrets: false, policy: { rules: [] } } as unknown as PolicyContext;
  const traceOf = (baseKey: string | null, texts: (string | null)[] = []): WalkTrace => {
    const t = new WalkTrace();
    t.baseKey = baseKey;
    t.ignoreTexts.push(...texts);
    return t;
  };
  const pageOf = (n: number, name = 'f'): ListPageResult & { entries: string[] } => {
    const entries = Array.from({ length: n }, (_, i) => `${name}${i}`);
    return {
      structured: {
        path: '/r',
        entries,
        truncated: false,
        next_cursor: null,
        skipped: { unreadable: 0, name_too_long: 0 },
      },
      text: entries.join('\n'),
      entries,
    };
  };

  it('holds at most its bound in bytes, least recently used pages first', () => {
    const memo = new ListPageMemo(64 * 1024);
    const probe = (t: WalkTrace) => () => t;
    const traces = [0, 1, 2, 3].map((i) => traceOf(`k${i}`));
    for (let i = 0; i < 4; i++)
      expect(memo.remember(`p${i}`, policy, traces[i], pageOf(300, `n${i}-`), pageOf(300).entries)).toBe(true);
    expect(memo.stats().bytes).toBeLessThanOrEqual(64 * 1024);
    expect(memo.stats().pages).toBeLessThan(4);
    expect(memo.lookup('p3', policy, probe(traces[3]))).not.toBeNull(); // the newest stays
    expect(memo.lookup('p0', policy, probe(traces[0]))).toBeNull(); // the oldest went first
    // A page over the bound is not kept.
    const big = pageOf(5000);
    expect(memo.remember('big', policy, traceOf('kb'), big, big.entries)).toBe(false);
    expect(memo.stats().bytes).toBeLessThanOrEqual(64 * 1024);
    memo.clear();
    expect(memo.stats()).toEqual({ pages: 0, bytes: 0 });
  });

  it('hands a page out only under the same policy objects, identity and .gitignore texts', () => {
    const memo = new ListPageMemo();
    const p = pageOf(3);
    expect(memo.remember('k', policy, traceOf('id1', ['a\n', null]), p, p.entries)).toBe(true);
    expect(memo.lookup('k', policy, () => traceOf('id1', ['a\n', null]))).toBe(p);
    expect(memo.lookup('k', { ...policy, roots: [] }, () => traceOf('id1', ['a\n', null]))).toBeNull(); // new roots
    expect(memo.lookup('k', { ...policy, allowSecrets: true }, () => traceOf('id1', ['a\n', null]))).toBeNull();
    expect(memo.lookup('k', policy, () => traceOf('id1', ['a\n', null]))).toBe(p);
    expect(memo.lookup('k', policy, () => traceOf('id1', ['b\n', null]))).toBeNull(); // a .gitignore changed: dropped
    expect(memo.stats().pages).toBe(0);
    expect(memo.remember('k', policy, traceOf('id1'), p, p.entries)).toBe(true);
    expect(memo.lookup('k', policy, () => traceOf(null))).toBeNull(); // racy now
    expect(memo.remember('k', policy, traceOf('id1'), p, p.entries)).toBe(true);
    expect(memo.lookup('k', policy, () => null)).toBeNull(); // the probe failed
    // Not kept: a racy base, a walk that opened a subdirectory.
    expect(memo.remember('r', policy, traceOf(null), p, p.entries)).toBe(false);
    const descended = traceOf('id2');
    descended.descents = 1;
    expect(memo.remember('d', policy, descended, p, p.entries)).toBe(false);
  });
});

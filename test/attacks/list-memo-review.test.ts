/**
 * Review of list_directory's page memo (src/tools/list-memo.ts, src/fs/walk.ts `probeWalk`; docs/tools.md "Repeated
 * listings"), in-process through callTool. Each attack changes what a page depends on WITHOUT touching the listed
 * directory itself (which would make it racy and so never reused), waits until everything is older than the racy
 * window, and compares the next answer with a fresh build's (the memo emptied first):
 *
 *  - a parent directory swapped for a prepared one (old enough) holding another directory of the same name;
 *  - a symlink put in a parent's place, pointing at a prepared directory;
 *  - the root's `.gitignore` rewritten in place with the same size, its mtime set back;
 *  - a parent's `.gitignore` deleted;
 *  - the whole root replaced by a prepared tree of the same shape.
 *
 * All of these hold (the memo answers as a fresh build). One defect: a page the memo refuses for its byte bound was
 * sealed first (deep-frozen, its text and structured part serialized, a side table entry) and then dropped, so every
 * call of a directory whose page is between about 0.7 and 1.5 million characters paid the sealing and never a hit:
 * 10,000 names of 100 characters, 40 calls over stdio, server CPU per call 21.0 / 20.3 ms on this branch against
 * 17.8 / 17.3 ms on main (/proc/PID/stat, alternated, same minute), +17 %.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, utimesSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { RACY_MS } from '../../src/fs/listing-cache.js';
import { WalkTrace } from '../../src/fs/walk-shapes.js';
import type { PolicyContext } from '../../src/policy/authorize.js';
import { callTool } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { clearListMemo, ListPageMemo, listMemoStats, type ListPageResult } from '../../src/tools/list-memo.js';
import { sealedPartsOf } from '../../src/tools/sealed-result.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';

let work: string;
let R: string;
let state: ProcessState;
const signal = new AbortController().signal;
const settle = () => new Promise((r) => setTimeout(r, RACY_MS + 150));

/** The call's answer as a string (a page's structured part and text, or its envelope). */
async function answer(args: Record<string, unknown>): Promise<string> {
  const o = await callTool(state, 'list_directory', args, signal);
  return o.ok ? JSON.stringify([o.structured, o.text]) : JSON.stringify(o.envelope);
}

/** The answer of a fresh build: the memo emptied first. */
async function fresh(args: Record<string, unknown>): Promise<string> {
  clearListMemo();
  return answer(args);
}

function files(dir: string, names: string[]): void {
  mkdirSync(dir, { recursive: true });
  for (const n of names) writeFileSync(path.join(dir, n), '');
}

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-memo-review-'));
  R = path.join(work, 'root');
  mkdirSync(R);
  const stateDir = path.join(work, 'state');
  mkdirSync(stateDir);
  const config = parseConfig(['--state-dir', stateDir, R], {
    cwd: R,
    home: '/nonexistent-home',
    toolNames: TOOL_NAMES,
  });
  state = createProcessState(config, TOOLS, 'test');
});
afterAll(() => {
  clearListMemo();
  rmSync(work, { recursive: true, force: true });
});

describe('list_directory page memo: changes beside the listed directory', () => {
  it('a parent swapped for another one: the page of the directory now at that path', async () => {
    files(path.join(R, 'swap/p/child'), ['old-a', 'old-b']);
    files(path.join(R, 'swap/prepared/child'), ['new-a']);
    await settle();
    const args = { path: path.join(R, 'swap/p/child') };
    const before = await fresh(args);
    expect(await answer(args)).toBe(before);
    expect(listMemoStats().pages).toBe(1);
    renameSync(path.join(R, 'swap/p'), path.join(R, 'swap/p-old'));
    renameSync(path.join(R, 'swap/prepared'), path.join(R, 'swap/p'));
    const after = await answer(args);
    expect(after).toContain('new-a');
    expect(after).toBe(await fresh(args));
  });

  it('a symlink put in a parent place: the page of its target', async () => {
    files(path.join(R, 'link/p/child'), ['old-a']);
    files(path.join(R, 'link/target/child'), ['via-link']);
    await settle();
    const args = { path: path.join(R, 'link/p/child') };
    const before = await fresh(args);
    expect(await answer(args)).toBe(before);
    rmSync(path.join(R, 'link/p'), { recursive: true });
    symlinkSync('target', path.join(R, 'link/p'));
    await settle();
    const after = await answer(args);
    expect(after).toContain('via-link');
    expect(after).toBe(await fresh(args));
  });

  it("the root's .gitignore rewritten with the same size and its mtime set back", async () => {
    files(path.join(R, 'ign/d'), ['keep.txt', 'drop.log']);
    writeFileSync(path.join(R, '.gitignore'), '*.log\n');
    await settle();
    const args = { path: path.join(R, 'ign/d') };
    const before = await fresh(args);
    expect(before).not.toContain('drop.log');
    expect(await answer(args)).toBe(before);
    const st = statSync(path.join(R, '.gitignore'));
    writeFileSync(path.join(R, '.gitignore'), '*.txt\n');
    utimesSync(path.join(R, '.gitignore'), st.atime, st.mtime);
    const after = await answer(args);
    expect(after).toContain('drop.log');
    expect(after).toBe(await fresh(args));
    rmSync(path.join(R, '.gitignore'));
  });

  it("a parent's .gitignore deleted", async () => {
    files(path.join(R, 'del/p/d'), ['keep.txt', 'drop.log']);
    writeFileSync(path.join(R, 'del/p/.gitignore'), '*.log\n');
    await settle();
    const args = { path: path.join(R, 'del/p/d') };
    expect(await fresh(args)).not.toContain('drop.log');
    rmSync(path.join(R, 'del/p/.gitignore'));
    const after = await answer(args);
    expect(after).toContain('drop.log');
    expect(after).toBe(await fresh(args));
  });

  it('the root replaced by a prepared tree of the same shape', async () => {
    files(path.join(R, 'same/d'), ['before']);
    const prepared = path.join(work, 'prepared');
    files(path.join(prepared, 'same/d'), ['after']);
    await settle();
    const args = { path: path.join(R, 'same/d') };
    const before = await fresh(args);
    expect(await answer(args)).toBe(before);
    renameSync(R, path.join(work, 'root-old'));
    renameSync(prepared, R);
    try {
      const after = await answer(args);
      expect(after).not.toBe(before);
      expect(after).toBe(await fresh(args));
    } finally {
      renameSync(R, prepared);
      renameSync(path.join(work, 'root-old'), R);
    }
  });
});

describe('list_directory page memo: pages it does not keep', () => {
  const policy = { roots: [], allowSecrets: false, policy: { rules: [] } } as unknown as PolicyContext;
  const trace = (): WalkTrace => {
    const t = new WalkTrace();
    t.baseKey = 'id';
    return t;
  };
  /** A names-only page of `n` names of 40 characters. */
  const pageOf = (n: number): ListPageResult => {
    const entries = Array.from({ length: n }, (_, i) => `${String(i).padStart(6, '0')}${'x'.repeat(34)}`);
    return {
      structured: {
        path: '/r',
        entries,
        truncated: false,
        next_cursor: null,
        skipped: { unreadable: 0, name_too_long: 0 },
      },
      text: entries.join('\n'),
    };
  };

  it('leaves a page over the byte bound unsealed: not frozen, not serialized', () => {
    const memo = new ListPageMemo(64 * 1024);
    const big = pageOf(600); // 24,600 characters of text: under the early test (2 × text ≤ bound), over the estimate
    expect(2 * big.text.length).toBeLessThanOrEqual(64 * 1024);
    expect(memo.remember('big', policy, trace(), big, big.structured.entries)).toBe(false);
    expect(memo.stats().pages).toBe(0);
    // Nothing was kept, so nothing should have been paid for keeping it.
    expect(Object.isFrozen(big.structured.entries)).toBe(false);
    expect(sealedPartsOf(big.structured)).toBeUndefined();
  });
});

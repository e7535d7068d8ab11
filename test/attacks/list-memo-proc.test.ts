/**
 * A directory whose entries change while its mtime and ctime never do (procfs: /proc's stamps are its mount time),
 * listed twice by one process (in-process through callTool; as root only, where procfs can be mounted inside a root).
 * The kept listings (src/fs/listing-cache.ts, already on main) and the page memo (src/tools/list-memo.ts) both take
 * an unchanged identity for unchanged entries, so a process started after the listing was kept is not listed: the
 * second answer differs from a fresh build's. Measured over stdio: main and this branch alike (145 entries; the new
 * pid missing), while a fresh process lists it. Found in review of the page memo; not the memo's own defect.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { clearListingCache, RACY_MS } from '../../src/fs/listing-cache.js';
import { callTool } from '../../src/server/call-tool.js';
import { createProcessState } from '../../src/server/process-state.js';
import { clearListMemo } from '../../src/tools/list-memo.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';

const work = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-memo-proc-'));
const mnt = path.join(work, 'root', 'proc');
mkdirSync(mnt, { recursive: true });
let mounted = false;
if (process.getuid?.() === 0) {
  try {
    execFileSync('mount', ['-t', 'proc', 'proc', mnt], { stdio: 'ignore' });
    mounted = true;
  } catch {
    mounted = false;
  }
}
afterAll(() => {
  if (mounted) execFileSync('umount', [mnt]);
  rmSync(work, { recursive: true, force: true });
});

describe.runIf(mounted)('a listing of procfs, twice in one process', () => {
  it('lists a process started between the two calls, as a fresh build does', async () => {
    const stateDir = path.join(work, 'state');
    mkdirSync(stateDir);
    const root = path.join(work, 'root');
    const config = parseConfig(['--state-dir', stateDir, root], {
      cwd: root,
      home: '/nonexistent',
      toolNames: TOOL_NAMES,
    });
    const state = createProcessState(config, TOOLS, 'test');
    const signal = new AbortController().signal;
    const names = async (): Promise<string[]> => {
      const o = await callTool(state, 'list_directory', { path: mnt }, signal);
      if (!o.ok) throw new Error(JSON.stringify(o.envelope));
      return (o.structured.entries as (string | { path: string })[]).map((e) =>
        (typeof e === 'string' ? e : e.path).replace(/\/$/, ''),
      );
    };
    await new Promise((r) => setTimeout(r, RACY_MS + 150)); // the mount's stamps no longer racy
    await names();
    await names(); // kept
    const sleeper = spawn('sleep', ['30']);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const again = await names();
      clearListMemo();
      clearListingCache();
      const fresh = await names();
      expect(fresh).toContain(String(sleeper.pid));
      expect(again).toContain(String(sleeper.pid));
    } finally {
      sleeper.kill();
    }
  });
});

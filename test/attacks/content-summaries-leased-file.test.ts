/**
 * Attack on content summaries (native/fs_tools_native_summary.c; docs/security.md "Content summaries": "the counts of
 * a search are those of a read"): a file another process holds a write lease on (fcntl F_SETLEASE, F_WRLCK: its
 * owner may take one) cannot be opened without blocking — the reader's `O_NONBLOCK` open fails with EWOULDBLOCK, so a
 * read counts it `skipped.unreadable`. A lease moves none of dev, inode, size, mtime or ctime, so a summary stored
 * before the lease still answers: the file is counted scanned (no_match) instead of unreadable.
 *
 * Real server over stdio; a python3 helper holds the lease (skipped without python3 or the addon):
 * - two searches on server A (the first remembers the directory, the second stores the summary);
 * - the helper takes a write lease on `leased.txt` (SIGIO ignored: it keeps the lease while it is broken);
 * - search 3 on server A must count what a fresh server (addon, no summary yet) counts while the lease is held.
 *
 * Accepted, as git's stat check and the read cache (src/fs/content-cache.ts) accept it, and documented
 * (docs/security.md "Content summaries", "Not seen"): this test pins that behaviour — the kept summary answers for the unchanged bytes — and
 * that a fresh read counts it unreadable, so a change of either shows here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const hasPython = spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).status === 0;
const hasAddon = process.platform === 'linux' && loadBuiltAddon() !== null;
const scratch = makeTree({ root: {} }, 'fs-tools-summary-lease-');
const ROOT = path.join(scratch.dir, 'root');
afterAll(() => scratch.cleanup());

const HOLDER = `
import fcntl, os, signal, sys
signal.signal(signal.SIGIO, signal.SIG_IGN)
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
sys.stdout.write('held\\n')
sys.stdout.flush()
sys.stdin.read()
`;

describe.runIf(hasPython && hasAddon)('a file under another process write lease', () => {
  it("is counted scanned with its unchanged bytes' verdict (accepted), where a fresh read counts it unreadable", async () => {
    const file = path.join(ROOT, 'leased.txt');
    writeFileSync(file, 'plain text without the needle\n'.repeat(20));
    await new Promise((r) => setTimeout(r, 2100)); // outside the racy window
    const query = { path: ROOT, query: 'needle_lease' };
    const client = await connect('modern', { args: [ROOT] });
    const holder = spawn('python3', ['-c', HOLDER, file], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      for (let k = 0; k < 2; k++) expect((await client.callOk('search_files', query)).files_scanned).toBe(1);
      await new Promise<void>((resolve, reject) => {
        holder.stdout.on('data', (d: Buffer) => (d.toString().includes('held') ? resolve() : undefined));
        holder.on('exit', (code) => reject(new Error(`lease holder exited ${code}`)));
      });
      const fresh = await connect('modern', { args: [ROOT] });
      let expected: Record<string, unknown>;
      try {
        expected = await fresh.callOk('search_files', query);
      } finally {
        await fresh.close();
      }
      expect(JSON.stringify(expected)).toMatch(/"unreadable":1/);
      const kept = await client.callOk('search_files', query);
      expect(kept.files_scanned).toBe(1); // the accepted difference: the summary answers, no open is tried
      expect(kept.files_matched).toBe(0);
      expect(JSON.stringify(kept)).not.toMatch(/unreadable/);
    } finally {
      holder.kill();
      await client.close();
    }
  }, 60_000);
});

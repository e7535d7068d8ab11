/**
 * Attack on content summaries (native/fs_tools_native_summary.c; docs/security.md "Content summaries"): a file changed
 * through a shared writable mapping keeps its dev, inode, size, mtime and ctime. The kernel moves a file's times on
 * the first write fault of a clean page only (ext4: until writeback, about 30 s; tmpfs: never), so once a process has
 * dirtied the mapped page, later writes through the mapping leave the summary's key exactly as it was — the same hole
 * test/attacks/git-index-mapped-write.test.ts pins for the git index. A search that trusts the key then skips a file
 * that now holds the needle: a miss that a fresh read (or a server with `--native=off`) finds.
 *
 * Real server over stdio, a python3 helper holding the mapping (skipped where there is no python3 or no addon):
 * - the helper maps `mapped.txt` (text without the needle) and rewrites one byte with its own value (page dirty);
 * - 2.1 s later two searches run (the first remembers the directory, the second stores the summary);
 * - the helper writes `needle_mapped` through the mapping; the stamp is shown unchanged and the bytes changed;
 * - search_files must find the needle (files_matched 1), as a server with `--native=off` does.
 *
 * Accepted, as git's stat check and the read cache (src/fs/content-cache.ts) accept it, and documented
 * (docs/security.md "Content summaries", "Not seen"): this test pins that behaviour — the kept summary answers — and
 * that a fresh read finds the needle, so a change of either shows here.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';
import { loadBuiltAddon } from '../helpers/worker-code.js';

const hasPython = spawnSync('python3', ['-c', 'import mmap'], { stdio: 'ignore' }).status === 0;
const hasAddon = process.platform === 'linux' && loadBuiltAddon() !== null;
const scratch = makeTree({ root: {} }, 'fs-tools-summary-mapped-');
const ROOT = path.join(scratch.dir, 'root');
afterAll(() => scratch.cleanup());

/** A python3 process holding `file` mapped shared and writable; each line is a file whose bytes it copies in at 0. */
const MAPPER = `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
for line in sys.stdin:
    name = line.strip()
    if name == 'touch':
        m[0:1] = m[0:1]
    else:
        data = open(name, 'rb').read()
        m[0:len(data)] = data
    sys.stdout.write('ok\\n')
    sys.stdout.flush()
`;

function mapper(file: string): { send: (line: string) => Promise<void>; child: ChildProcessWithoutNullStreams } {
  const child = spawn('python3', ['-c', MAPPER, file], { stdio: ['pipe', 'pipe', 'pipe'] });
  const waiting: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    for (let n = d.toString().split('ok\n').length - 1; n > 0; n--) waiting.shift()?.();
  });
  return {
    child,
    send: (line) =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        child.stdin.write(`${line}\n`);
      }),
  };
}

const stampOf = (file: string) =>
  (({ dev, ino, size, mtimeMs, ctimeMs }) => ({ dev, ino, size, mtimeMs, ctimeMs }))(statSync(file, { bigint: true }));

describe.runIf(hasPython && hasAddon)('a file changed through a shared mapping (its stamp unchanged)', () => {
  it('the summary answers until the next stamped change (accepted); --native=off finds the needle', async () => {
    const file = path.join(ROOT, 'mapped.txt');
    const body = `${'plain text line\n'.repeat(40)}`;
    writeFileSync(file, body);
    const changed = path.join(scratch.dir, 'changed.bin');
    writeFileSync(changed, 'needle_mapped\n'); // same size file: only its first 14 bytes change
    const client = await connect('modern', { args: [ROOT] });
    const map = mapper(file);
    try {
      await map.send('touch'); // the page is dirty: later writes through the mapping move no time
      await new Promise((r) => setTimeout(r, 2100)); // outside the racy window
      for (let k = 0; k < 2; k++) {
        const r = await client.callOk('search_files', { path: ROOT, query: 'needle_mapped' });
        expect(r.files_matched).toBe(0);
      }
      const stamp = stampOf(file);
      await map.send(changed);
      // Armed: the bytes hold the needle, the size and times did not move.
      expect(readFileSync(file, 'latin1').startsWith('needle_mapped\n')).toBe(true);
      expect(stampOf(file)).toEqual(stamp);
      const after = await client.callOk('search_files', { path: ROOT, query: 'needle_mapped' });
      const off = await connect('modern', { args: ['--native=off', ROOT] });
      try {
        const fresh = await off.callOk('search_files', { path: ROOT, query: 'needle_mapped' });
        expect(JSON.stringify(fresh)).toContain('needle_mapped');
        expect(fresh.files_matched).toBe(1);
        expect(after.files_matched).toBe(0); // the accepted gap: the stamp did not move
      } finally {
        await off.close();
      }
    } finally {
      map.child.kill();
      await client.close();
    }
  }, 60_000);
});

/**
 * Attack kept as a regression test (review of an unmerged change, branch r17-gitstatus; docs/security.md "Bounded
 * work"): that change started reading the repository index (up to 128 MiB) at the start of the view, before HEAD, the
 * config and the refs were checked. When one of those failed first, the call answered at once but its index read went
 * on in the background, outside the heavy-call limit (HEAVY_LIMITS.git, 4 git calls at once): a hostile repository
 * with a corrupt HEAD and a 120 MiB index, asked for git_status by 24 calls at once, took the server's peak RSS from
 * 73 MiB (main: the index is never read when HEAD fails) to about 1.5 GiB. Real server over stdio.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { isolatedGit } from '../helpers/isolated-git.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {} }, 'fs-tools-index-early-read-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root-zone');
mkdirSync(ROOT);
afterAll(() => scratch.cleanup());

const INDEX_BYTES = 120 * 1024 * 1024;
const CALLS = 24;
/** At most HEAVY_LIMITS.git (4) index reads of the cap (128 MiB) at once, and the server's own ~100 MiB. */
const PEAK_BOUND_MB = 4 * 128 + 100;

function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}

describe.skipIf(process.platform !== 'linux')('the index read of a call that fails earlier', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('modern', {
      args: ['--auto-occ=off', '--state-dir', path.join(scratch.dir, 'state'), ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME },
    });
  }, 60_000);
  afterAll(async () => {
    await client.close();
  });

  it('is not left running after the call answered (peak RSS bounded by the heavy-call limit)', async () => {
    const top = path.join(ROOT, 'r');
    mkdirSync(top);
    isolatedGit(top, HOME, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(top, '.git', 'index'), Buffer.alloc(INDEX_BYTES, 1));
    writeFileSync(path.join(top, '.git', 'HEAD'), 'garbage\n');
    const results = await Promise.all(
      Array.from({ length: CALLS }, () => client.callError('git_status', { path: top })),
    );
    // The earlier check's error is the one reported, on every call.
    for (const r of results) expect(r.error.path).toBe(path.join(top, '.git', 'HEAD'));
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the background reads (if any) end
    const peak = peakRssMb(client.pid()!);
    expect(peak, `peak RSS ${Math.round(peak)} MiB`).toBeLessThan(PEAK_BOUND_MB);
  }, 120_000);
});

/**
 * Attack (docs/security.md "What git may read"): a repository at the view's size caps — a 63 MiB packed-refs (HEAD's
 * branch and its upstream on its last lines, so the whole file is scanned) and a config just under 4 MiB — used to
 * hold the server's event loop for 1.5–2 s per git call while the view was built; 8 concurrent git_status calls held
 * pings for 12.7 s. Real server over stdio, real git: while 8 git_status calls run at once, list_allowed_directories
 * issued back to back on the same connection answers within PROBE_BOUND_MS every time. The same probe goes at the same
 * moments to a second, idle server process: when the shared machine alone stalls that one longer, the bound is its
 * stall plus PROBE_BOUND_MS (both slowest figures are printed).
 */
import { execFileSync } from 'node:child_process';
import { openSync, closeSync, writeSync, mkdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

/**
 * The bound for one probe: the SPEC's ~100 ms, with room for two shared cores under a full test run. Before the view
 * was built in slices a probe waited 1.5–2 s per call in flight.
 */
const PROBE_BOUND_MS = 250;

const scratch = makeTree({ home: {}, root: {} }, 'fs-tools-view-loop-');
const HOME = path.join(scratch.dir, 'home');
const REPO = path.join(scratch.dir, 'root', 'big');
afterAll(() => scratch.cleanup());

function git(cwd: string, ...args: string[]): string {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...env,
      HOME,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e.invalid',
    },
  });
}

beforeAll(() => {
  mkdirSync(REPO);
  git(REPO, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(REPO, 'a.txt'), 'a\n');
  git(REPO, 'add', '-A');
  git(REPO, 'commit', '-q', '-m', 'i');
  const head = git(REPO, 'rev-parse', 'HEAD').trim();
  // packed-refs: ~1.1 million tag lines (63 MiB, under the 64 MiB cap), then the branch and its upstream.
  const file = path.join(REPO, '.git', 'packed-refs');
  const fd = openSync(file, 'w');
  writeSync(fd, '# pack-refs with: peeled fully-peeled sorted \n');
  const line = (i: number) => `${head} refs/tags/t${String(i).padStart(9, '0')}\n`;
  const perChunk = 20_000;
  const total = Math.floor((63 * 1024 * 1024) / line(0).length);
  for (let i = 0; i < total; i += perChunk) {
    let chunk = '';
    for (let j = i; j < Math.min(total, i + perChunk); j++) chunk += line(j);
    writeSync(fd, chunk);
  }
  writeSync(fd, `${head} refs/heads/main\n${head} refs/remotes/origin/main\n`);
  closeSync(fd);
  rmSync(path.join(REPO, '.git', 'refs', 'heads', 'main'));
  // config: the upstream, then ~3.9 MiB of filter lines (each one a statement to parse).
  const cfg = path.join(REPO, '.git', 'config');
  writeFileSync(
    cfg,
    `${readFileSync(cfg, 'utf8')}[remote "origin"]\n\turl = https://example.invalid/r.git\n` +
      '\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n' +
      `[filter "a"]\n${'\tclean = x\n'.repeat(375_000)}`,
  );
  writeFileSync(path.join(REPO, 'a.txt'), 'a\nchanged\n');
}, 120_000);

describe('building the view of a repository at the caps keeps the server responsive', () => {
  let client: TestClient;
  let idle: TestClient;
  beforeAll(async () => {
    client = await connect('modern', { args: [path.join(scratch.dir, 'root')], env: { HOME } });
    idle = await connect('modern', { args: [path.join(scratch.dir, 'root')], env: { HOME } });
  }, 60_000);
  afterAll(async () => {
    await client.close();
    await idle.close();
  });

  it('8 concurrent git_status calls: every concurrent list_allowed_directories answers in time', async () => {
    // The repository is right (branch and upstream found at the end of packed-refs).
    const first = await client.callOk('git_status', { path: REPO });
    expect(first.branch).toBe('main');
    expect(first.upstream).toBe('origin/main');
    expect(first.entries.map((e: { path: string }) => e.path)).toEqual(['a.txt']);

    let done = false;
    const started = performance.now();
    const calls = Promise.all(Array.from({ length: 8 }, () => client.callOk('git_status', { path: REPO }))).finally(
      () => {
        done = true;
      },
    );
    // The machine's own noise, measured at the same moments: the same probe to a second, idle server process.
    let worst = 0;
    let baseline = 0;
    let probes = 0;
    const timed = async (c: TestClient): Promise<number> => {
      const t0 = performance.now();
      const r = await c.call('list_allowed_directories', {});
      expect(r.isError).toBeFalsy();
      return performance.now() - t0;
    };
    while (!done) {
      const [busy, calm] = await Promise.all([timed(client), timed(idle)]);
      worst = Math.max(worst, busy);
      baseline = Math.max(baseline, calm);
      probes++;
    }
    const results = await calls;
    for (const s of results) expect(s.status_hash).toBe(first.status_hash);
    console.log(
      `8 git_status at the caps: ${(performance.now() - started).toFixed(0)} ms, ${probes} probes, slowest ` +
        `${worst.toFixed(0)} ms (an idle server at the same moments: slowest ${baseline.toFixed(0)} ms)`,
    );
    expect(probes).toBeGreaterThan(5);
    // The bound, unless the machine alone already stalls a probe longer (then: its stall plus the same margin).
    expect(worst).toBeLessThan(Math.max(PROBE_BOUND_MS, baseline + PROBE_BOUND_MS));
  }, 120_000);
});

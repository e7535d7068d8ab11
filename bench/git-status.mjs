#!/usr/bin/env node
/**
 * Bench row 7: `git_status` through fs-tools' sanitized git view against plain
 * `git --no-optional-locks status --porcelain=v2 --branch --untracked-files=all` on the same 20,000-file repository
 * (200 directories × 100 files, 20 modified, 20 untracked, the index refreshed first). Both are timed end to end from
 * this process: an MCP call to a real fs-tools server (stdio) against spawning git. Interleaved, medians; target
 * ≤ 1.0×. The fs-tools status_hash is checked against sha256 of plain git's output first (same work, same answer).
 *
 * Used by bench/run.mjs (`--only git`); runs alone too: `node bench/git-status.mjs [--reps N]` (after npm run build).
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, startServer, timeOnce } from './mcp.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.join(HERE, '..', 'dist', 'cli.js');
const STATUS = ['--no-optional-locks', 'status', '--porcelain=v2', '--branch', '--untracked-files=all'];

/** Plain git, as an agent's shell would run it (spawn included, like the server's). */
const plainStatus = (repo) => new Promise((resolve, reject) => {
  execFile('git', STATUS, { cwd: repo, maxBuffer: 64 << 20, env: { ...process.env, LC_ALL: 'C' } }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
});

/**
 * CPU time of process `pid` so far, ms: its own (user + system) and that of its children it has waited for (git), from
 * /proc/PID/stat (clock ticks of 10 ms); null where /proc is not readable. The load of a shared machine disturbs
 * these less than wall times.
 * @param {number | 'self'} pid
 * @returns {{ own: number, children: number } | null}
 */
function cpuOf(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { own: (Number(f[11]) + Number(f[12])) * 10, children: (Number(f[13]) + Number(f[14])) * 10 };
  } catch {
    return null;
  }
}

/**
 * Builds the repository, measures, removes it.
 * @param {{ log: (s: string) => void, reps: (n: number) => number }} o
 * @returns {Promise<Record<string, any>>} one row of the bench table
 */
export async function benchGitStatus({ log, reps }) {
  const base = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-git-'));
  const repo = path.join(base, 'repo');
  const state = path.join(base, 'state');
  mkdirSync(repo);
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@example.invalid',
    GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@example.invalid' };
  const git = (...args) => execFileSync('git', args, { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  try {
    const t0 = Date.now();
    git('init', '-q', '-b', 'main');
    git('config', 'gc.auto', '0');
    git('config', 'maintenance.auto', 'false');
    for (let d = 0; d < 200; d++) {
      const dir = path.join(repo, `d${String(d).padStart(3, '0')}`);
      mkdirSync(dir);
      for (let f = 0; f < 100; f++) writeFileSync(path.join(dir, `f${f}.ts`), `export const v${d}_${f} = ${d * 100 + f};\n`);
    }
    git('add', '-A');
    git('commit', '-q', '-m', 'corpus');
    for (let i = 0; i < 20; i++) {
      writeFileSync(path.join(repo, `d${String(i * 10).padStart(3, '0')}`, 'f1.ts'), `changed ${i}\n`);
      writeFileSync(path.join(repo, `d${String(i * 10).padStart(3, '0')}`, `new${i}.ts`), `untracked ${i}\n`);
    }
    git('status', '--porcelain'); // refresh the index once, as a user's own git would have
    log(`git repository: 20,000 files in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const server = await startServer('fs-tools', [CLI, repo, '--state-dir', state]);
    try {
      const fsStatus = async () => (await server.call('git_status', { path: repo })).structuredContent;
      const first = await fsStatus();
      const plain = await plainStatus(repo);
      const expected = `sha256:${createHash('sha256').update(plain).digest('hex')}`;
      if (first.status_hash !== expected) throw new Error(`git_status hash ${first.status_hash} differs from plain git's ${expected}`);
      if (first.entries.length !== 40) throw new Error(`git_status reported ${first.entries.length} entries, expected 40`);
      const a = [];
      const b = [];
      const n = reps(15);
      // CPU per call: the server's own and its git's (around each git_status), plain git's (this process's children).
      const cpu = { own: 0, git: 0, plain: 0 };
      const fsTimed = async () => {
        const before = cpuOf(server.pid);
        const ms = await timeOnce(fsStatus);
        const after = cpuOf(server.pid);
        if (before && after) {
          cpu.own += after.own - before.own;
          cpu.git += after.children - before.children;
        }
        return ms;
      };
      const plainTimed = async () => {
        const before = cpuOf('self');
        const ms = await timeOnce(() => plainStatus(repo));
        const after = cpuOf('self');
        if (before && after) cpu.plain += after.children - before.children;
        return ms;
      };
      for (let i = 0; i < n; i++) {
        if (i % 2 === 0) {
          a.push(await fsTimed());
          b.push(await plainTimed());
        } else {
          b.push(await plainTimed());
          a.push(await fsTimed());
        }
      }
      const perCall = (ms) => (ms / n).toFixed(1);
      const cpuNote = cpuOf('self')
        ? `; CPU per call: server ${perCall(cpu.own)} ms + its git ${perCall(cpu.git)} ms, plain git ${perCall(cpu.plain)} ms`
        : '';
      const ratio = median(a) / median(b);
      server.resetPeakRss();
      await fsStatus();
      return { id: '7', op: 'git_status, 20,000-file repository (20 modified, 20 untracked)', unit: 'ms', fs: median(a).toFixed(1),
        peer: median(b).toFixed(1), peerName: 'git status --porcelain=v2 (spawned)', ratio, target: '≤ 1.0', met: ratio <= 1.0,
        fsRss: server.peakRssMb(), peerRss: null, note: `${n} interleaved runs each; same status_hash as plain git's output${cpuNote}` };
    } finally {
      await server.close();
    }
  } finally {
    rmSync(base, { recursive: true, force: true, maxRetries: 5 });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--reps');
  const scale = i > 0 ? Number(process.argv[i + 1]) : 1;
  const row = await benchGitStatus({ log: (s) => process.stderr.write(`[bench] ${s}\n`), reps: (n) => Math.max(1, Math.round(n * scale)) });
  process.stdout.write(`git_status ${row.fs} ms, plain git status ${row.peer} ms, ratio ${row.ratio.toFixed(2)} (target ≤ 1.0: ${row.met ? 'met' : 'NOT met'}); ${row.note}\n`);
}

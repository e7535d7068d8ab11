#!/usr/bin/env node
/**
 * Bench row 8: the wall time of one `fs-tools call read_file` process (spawn to exit: start-up, the state directory's
 * checks, the kernel wall, the call, the output) against a bare `node -e 0` on the same machine — what a CI step that
 * makes a handful of one-shot calls pays per call. Interleaved (call, node, node, call, …), medians; target ≤ 2.0×.
 * Each call gets its own fresh state directory, as a new CI job would. The call's output is checked (the file's size).
 *
 * Used by bench/run.mjs (`--only oneshot`); runs alone too (after npm run build):
 *   node bench/one-shot.mjs [--runs N] [--profile DIR]
 * `--profile DIR` writes one `node --cpu-prof` profile of a call to DIR and prints its summary (bench/profile-summary.mjs).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { median } from './mcp.mjs';
import { summarizeProfile } from './profile-summary.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Spawns `node ...args` and waits; returns wall ms. Throws when it fails. */
function timed(args, check) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 16 << 20 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.slice(0, 3).join(' ')} … exited ${r.status}: ${r.stderr.slice(0, 500)}`);
  check?.(r.stdout);
  return ms;
}

/**
 * Measures the row.
 * @param {{ cli: string, root: string, file: string, runs: number, log: (s: string) => void, nodeFlags?: string[] }} o
 *   `file` lies inside `root`; `nodeFlags` go before the script of the fs-tools call (e.g. --cpu-prof)
 * @returns {Record<string, any> | null} one row of the bench table (null for `runs: 0`: one call, not timed)
 */
export function benchOneShot({ cli, root, file, runs, log, nodeFlags = [] }) {
  const states = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-oneshot-'));
  let n = 0;
  const call = () => {
    const state = path.join(states, `s${n++}`);
    return timed([...nodeFlags, cli, root, '--state-dir', state, 'call', 'read_file', JSON.stringify({ path: file })], (out) => {
      if (typeof JSON.parse(out).size !== 'number') throw new Error('one-shot read_file printed no result');
    });
  };
  const bare = () => timed(['-e', '0']);
  try {
    call();
    if (runs === 0) return null; // a profile of that one call is all that was asked
    bare();
    const a = [];
    const b = [];
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        a.push(call());
        b.push(bare());
      } else {
        b.push(bare());
        a.push(call());
      }
    }
    const ratio = median(a) / median(b);
    log(`one-shot call ${median(a).toFixed(0)} ms (range ${Math.min(...a).toFixed(0)}–${Math.max(...a).toFixed(0)}), node -e 0 ${median(b).toFixed(0)} ms`);
    return { id: '8', op: 'one-shot `fs-tools call read_file` (4 KB), process wall time', unit: 'ms', fs: median(a).toFixed(0),
      peer: median(b).toFixed(0), peerName: 'node -e 0', ratio, target: '≤ 2.0', met: ratio <= 2.0, fsRss: null, peerRss: null,
      note: `${runs} interleaved runs each; a fresh state directory per call; kernel wall as configured (on by default)` };
  } finally {
    rmSync(states, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const opt = (name) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const root = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-oneshot-root-'));
  const file = path.join(root, 'small-4k.txt');
  writeFileSync(file, `${'x'.repeat(63)}\n`.repeat(64));
  const profile = opt('--profile') ? path.resolve(opt('--profile')) : null;
  const log = (s) => process.stderr.write(`[bench] ${s}\n`);
  try {
    const cli = path.join(HERE, '..', 'dist', 'cli.js');
    const row = benchOneShot({ cli, root, file, runs: Number(opt('--runs') ?? 15), log });
    const load = os.loadavg().map((x) => x.toFixed(2)).join(', ');
    process.stdout.write(`one-shot call ${row.fs} ms, node -e 0 ${row.peer} ms, ratio ${row.ratio.toFixed(2)} (target ≤ 2.0: ${row.met ? 'met' : 'NOT met'}); load average ${load}\n`);
    if (profile) {
      // Written inside the root: the kernel wall lets the call write nowhere else (a profile directory outside the
      // roots stays empty), then moved to DIR.
      const inside = path.join(root, 'profile');
      benchOneShot({ cli, root, file, runs: 0, log, nodeFlags: ['--cpu-prof', '--cpu-prof-dir', inside] });
      mkdirSync(profile, { recursive: true });
      for (const p of readdirSync(inside).filter((f) => f.endsWith('.cpuprofile'))) {
        cpSync(path.join(inside, p), path.join(profile, p));
        process.stdout.write(`\n${summarizeProfile(path.join(profile, p), 25)}\n`);
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

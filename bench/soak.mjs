#!/usr/bin/env node
/**
 * `npm run soak` (issue 7; not part of `npm test`): a load soak of the real server. 8 MCP clients (the official SDK's
 * Client over stdio, 2025 protocol), each with its own fs-tools server process (`node dist/cli.js`), all on one shared
 * tree and one shared --state-dir (so the cross-process write locks are exercised too), drive 100,000 mixed calls in
 * total: reads, ranged reads, listings, content and glob searches, stats, edits and writes carrying the hash of a
 * previous read, and failures of several codes (NOT_FOUND, NOT_ALLOWED, VALIDATION, OCC_MISMATCH, HASH_REQUIRED,
 * PATCH_FAILED, SECRET_DENIED). Every call's outcome is checked against the code its kind must produce.
 *
 * Bounded: 100,000 calls or --max-seconds (default 900), whichever comes first; loopback stdio only, temporary files
 * only (removed at the end). Prints throughput, outcome counts by code, unexpected outcomes, and each server's peak
 * RSS (VmHWM, /proc/PID/status) after the warm-up and at the end; fails (exit 1) when any outcome was unexpected or a
 * server's peak RSS grew by more than --rss-growth-mb (default 64) from the warm-up to the end.
 *
 * Options: --calls N (default 100000), --clients N (default 8), --max-seconds N, --rss-growth-mb N, --json FILE.
 *
 * `--compare REV` (e.g. `npm run soak -- --compare b78d87c`): builds REV in a temporary git worktree (its own
 * `npm ci` unless its package-lock.json equals this checkout's, whose node_modules it then links; `npm run build`),
 * then runs this build and REV's alternately on the same machine in one run — rounds in the order A B B A …
 * (--rounds N per build, default 2; --calls is per build, default 30000 there), each round on a fresh tree — and
 * reports each build's calls/s (total calls / total seconds of its rounds), the ratio this/REV (target ≥ 1.0), the
 * servers' CPU time per call of each (user + system from /proc/PID/stat; on a loaded machine the steadier figure) and
 * every round. The worktree is removed at the end. REV may also be a directory holding a built checkout
 * (`DIR/dist/cli.js`, e.g. a worktree built earlier): it is used as it is, nothing is built or removed.
 *
 * `--profile DIR`: each server runs under `node --cpu-prof`, writing its profile inside the soak's root (the kernel
 * wall lets it write nowhere else; no call of the mix reaches that directory); at the end of each round the profiles
 * are moved to DIR/<round>/ and the eight servers' self times, taken together, are printed (bench/profile-summary.mjs).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { summarizeProfiles } from './profile-summary.mjs';

const { values: opts } = parseArgs({
  options: {
    calls: { type: 'string', default: '100000' },
    clients: { type: 'string', default: '8' },
    'max-seconds': { type: 'string', default: '900' },
    'rss-growth-mb': { type: 'string', default: '64' },
    json: { type: 'string' },
    compare: { type: 'string' },
    rounds: { type: 'string', default: '2' },
    profile: { type: 'string' },
  },
});
const TOTAL_CALLS = Number(opts.calls);
const CLIENTS = Number(opts.clients);
const MAX_SECONDS = Number(opts['max-seconds']);
const RSS_GROWTH_MB = Number(opts['rss-growth-mb']);
/** Calls per client before the "start" RSS reading (the server's caches and JIT are warm by then). */
const WARMUP_CALLS = Math.min(1000, Math.floor(TOTAL_CALLS / CLIENTS / 10));
/** Calls each client keeps in flight. */
const IN_FLIGHT = 4;

const REPO = fileURLToPath(new URL('..', import.meta.url));
const CLI = path.join(REPO, 'dist', 'cli.js');
const sha256 = (s) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

/** CPU time (user + system, ms) the process `pid` has used so far (/proc/PID/stat; null elsewhere). */
function cpuMs(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** Clock ticks per second of /proc/PID/stat (USER_HZ: 100 on Linux). */
const CLOCK_TICKS = 100;

function vm(pid, key) {
  try {
    const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Every temporary directory this run made (removed at the end, also after a failure). */
const temporaries = [];

/**
 * A fresh shared tree: 40 directories × 25 files to read, list and search; one directory per client for its writes;
 * a file outside the root and a secret inside it.
 * @returns {{ base: string, root: string, outside: string, stateDir: string }}
 */
function makeTree() {
  const base = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-soak-'));
  temporaries.push(base);
  const root = path.join(base, 'root');
  const outside = path.join(base, 'outside');
  const stateDir = path.join(base, 'state');
  mkdirSync(outside, { recursive: true });
  writeFileSync(path.join(outside, 'o.txt'), 'outside\n');
  for (let d = 0; d < 40; d++) {
    mkdirSync(path.join(root, 'src', `d${d}`), { recursive: true });
    for (let f = 0; f < 25; f++) {
      const lines = Array.from({ length: 40 }, (_, i) => `line ${i} of file ${d}/${f}${i === 7 ? ' needle' : ''}`);
      writeFileSync(path.join(root, 'src', `d${d}`, `f${f}.txt`), `${lines.join('\n')}\n`);
    }
  }
  writeFileSync(path.join(root, '.env'), 'SOAK_SECRET=1\n');
  for (let c = 0; c < CLIENTS; c++) {
    mkdirSync(path.join(root, 'work', `c${c}`), { recursive: true });
    writeFileSync(path.join(root, 'work', `c${c}`, 'edit.txt'), 'counter 0\n');
    writeFileSync(path.join(root, 'work', `c${c}`, 'never-read.txt'), 'untouched\n');
  }
  return { base, root, outside, stateDir };
}

/** The mix: [weight, kind]. Each kind knows its call and the outcome it must have. */
const MIX = [
  [20, 'read'], [6, 'read_range'], [8, 'list'], [6, 'search'], [4, 'glob'], [10, 'stat'],
  [8, 'edit'], [6, 'write'], [3, 'read_files'],
  [5, 'not_found'], [4, 'not_allowed'], [4, 'validation'], [3, 'occ_mismatch'], [3, 'hash_required'],
  [3, 'patch_failed'], [3, 'secret_denied'],
];
const WEIGHT = MIX.reduce((n, [w]) => n + w, 0);
function pick(i) {
  // A deterministic spread (no RNG): golden-ratio sequence over the weights.
  let x = ((i * 0.6180339887) % 1) * WEIGHT;
  for (const [w, kind] of MIX) {
    if (x < w) return kind;
    x -= w;
  }
  return MIX[0][1];
}

/** Where the servers write their profiles under --profile (inside the root: the kernel wall). */
const profileInside = (root) => path.join(root, 'cpu-profiles');

async function startClient(c, cli, { stateDir, root }) {
  const profileArgs = opts.profile ? ['--cpu-prof', '--cpu-prof-dir', profileInside(root)] : [];
  const transport = new StdioClientTransport({
    command: process.execPath, args: [...profileArgs, cli, '--state-dir', stateDir, root], stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name: `soak-${c}`, version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, pid: transport.pid, stderr: () => stderr };
}

/** One client's loop: kinds of calls until `quota` tool calls were made (a write is a stat and a write). */
async function drive(c, conn, { root, outside }, quota, deadline, counts, unexpected, onWarm) {
  const mine = `work/c${c}`;
  let editHash = null; // the hash of edit.txt this client last saw (it is the only writer of its directory)
  let editN = 0;
  let warm = false;
  let calls = 0;
  // This client's own writes are serialized (a chain), so two of its edits never race on one hash: an OCC_MISMATCH
  // there would be a correct answer to a real conflict, not a server fault.
  let chain = Promise.resolve();
  const serially = (fn) => { const p = chain.then(fn); chain = p.catch(() => undefined); return p; };
  const call = async (name, args) => {
    calls++;
    const r = await conn.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    if (r.isError) return { code: JSON.parse(r.content[0].text).error.code, r };
    return { code: 'ok', r };
  };
  const one = async (i) => {
    const kind = pick(i * CLIENTS + c);
    const d = (i * 7 + c) % 40;
    const f = (i * 13 + c) % 25;
    const file = `src/d${d}/f${f}.txt`;
    let expected = 'ok';
    let out;
    switch (kind) {
      case 'read': out = await call('read_file', { path: file }); break;
      case 'read_range': out = await call('read_file', { path: file, start_line: 5, end_line: 9 }); break;
      case 'list': out = await call('list_directory', { path: `src/d${d}`, depth: 1 }); break;
      case 'search': out = await call('search_files', { path: `src/d${d}`, query: 'needle' }); break;
      case 'glob': out = await call('search_files', { path: 'src', glob: `d${d}/*.txt` }); break;
      case 'stat': out = await call('stat', { path: file }); break;
      case 'read_files': out = await call('read_files', { paths: [file, `src/d${(d + 1) % 40}/f${f}.txt`] }); break;
      case 'edit': out = await serially(async () => {
        if (editHash === null) {
          const r = await call('read_file', { path: `${mine}/edit.txt` });
          editHash = r.r.structuredContent.content_hash;
        }
        const before = `counter ${editN}`;
        const r = await call('edit_file', { path: `${mine}/edit.txt`, edits: [{ old_text: before, new_text: `counter ${editN + 1}` }], expected_hash: editHash });
        if (r.code === 'ok') { editN++; editHash = r.r.structuredContent.content_hash; }
        return r;
      }); break;
      case 'write': out = await serially(async () => {
        const content = `written ${c} ${i}\n`;
        const target = `${mine}/w${i % 10}.txt`;
        const st = await call('stat', { path: target });
        const hash = st.code === 'ok' ? st.r.structuredContent.content_hash : 'absent';
        const r = await call('write_file', { path: target, content, expected_hash: hash });
        if (r.code === 'ok' && r.r.structuredContent.content_hash !== sha256(content)) r.code = 'wrong content_hash';
        return r;
      }); break;
      case 'not_found': expected = 'NOT_FOUND'; out = await call('read_file', { path: `src/d${d}/missing-${i}.txt` }); break;
      case 'not_allowed': expected = 'NOT_ALLOWED'; out = await call('read_file', { path: path.join(outside, 'o.txt') }); break;
      case 'validation': expected = 'VALIDATION'; out = await call('read_file', { path: file, head: 0 }); break;
      case 'occ_mismatch': expected = 'OCC_MISMATCH';
        out = await serially(() => call('write_file', { path: `${mine}/edit.txt`, content: 'x', expected_hash: sha256(`stale ${i}`) })); break;
      case 'hash_required': expected = 'HASH_REQUIRED'; out = await call('write_file', { path: `${mine}/never-read.txt`, content: 'x' }); break;
      case 'patch_failed': expected = 'PATCH_FAILED';
        out = await call('edit_file', { path: file, edits: [{ old_text: 'no such text', new_text: 'x' }], expected_hash: sha256(readFileSync(path.join(root, file))) }); break;
      case 'secret_denied': expected = 'SECRET_DENIED'; out = await call('read_file', { path: '.env' }); break;
      default: throw new Error(kind);
    }
    counts[out.code] = (counts[out.code] ?? 0) + 1;
    if (out.code !== expected) {
      const key = `${kind}: expected ${expected}, got ${out.code}`;
      unexpected[key] = (unexpected[key] ?? 0) + 1;
    }
  };
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (calls < quota && Date.now() < deadline) {
      const i = next++;
      await one(i);
      if (!warm && calls >= Math.min(WARMUP_CALLS, Math.floor(quota / 10))) { warm = true; onWarm(); }
    }
  }));
  return calls;
}

/**
 * One soak of the build at `cli` on a fresh tree.
 * @param {string} cli the build's dist/cli.js
 * @param {number} totalCalls tool calls in all clients together
 * @returns {Promise<Record<string, any>>} the report (calls, seconds, calls_per_second, outcomes, RSS, …)
 */
async function soakOnce(cli, totalCalls) {
  const tree = makeTree();
  const loadAtStart = os.loadavg();
  const started = Date.now();
  const deadline = started + MAX_SECONDS * 1000;
  const conns = await Promise.all(Array.from({ length: CLIENTS }, (_, c) => startClient(c, cli, tree)));
  const counts = {};
  const unexpected = {};
  const warmRss = new Array(CLIENTS).fill(null);
  const quota = Math.floor(totalCalls / CLIENTS);
  const cpuAtStart = conns.map((conn) => cpuMs(conn.pid));
  const t0 = performance.now();
  const done = await Promise.all(conns.map((conn, c) => drive(c, conn, tree, quota + (c < totalCalls % CLIENTS ? 1 : 0), deadline, counts, unexpected,
    () => { warmRss[c] = vm(conn.pid, 'VmHWM'); })));
  const seconds = (performance.now() - t0) / 1000;
  const total = done.reduce((a, b) => a + b, 0);
  const cpuUsed = conns.map((conn, i) => (cpuAtStart[i] === null ? null : cpuMs(conn.pid) - cpuAtStart[i]));
  const endRss = conns.map((conn) => vm(conn.pid, 'VmHWM'));
  const nowRss = conns.map((conn) => vm(conn.pid, 'VmRSS'));
  const incidents = conns.filter((conn) => /INTERNAL|incident/.test(conn.stderr())).length;
  await Promise.all(conns.map((conn) => conn.client.close()));
  if (opts.profile) await keepProfiles(profileInside(tree.root), conns.length);
  rmSync(tree.base, { recursive: true, force: true });

  const growth = endRss.map((e, i) => (e !== null && warmRss[i] !== null ? e - warmRss[i] : null));
  const report = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, node ${process.version}`,
    load_average_at_start: loadAtStart.map((x) => Math.round(x * 100) / 100),
    load_average_at_end: os.loadavg().map((x) => Math.round(x * 100) / 100),
    clients: CLIENTS,
    servers: `${CLIENTS} processes (one per client), one shared tree and state dir`,
    calls: total,
    stopped_by: total < totalCalls ? `time limit ${MAX_SECONDS} s` : 'call count',
    seconds: Math.round(seconds * 10) / 10,
    calls_per_second: Math.round(total / seconds),
    // CPU time of the servers (user + system, all 8 together) per call: less disturbed by the machine's load than
    // calls per second.
    server_cpu_ms_per_call: cpuUsed.includes(null)
      ? null
      : Math.round((cpuUsed.reduce((a, b) => a + b, 0) / total) * 1000) / 1000,
    outcomes: Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1])),
    unexpected,
    peak_rss_mb_after_warmup: warmRss.map((x) => (x === null ? null : Math.round(x * 10) / 10)),
    peak_rss_mb_at_end: endRss.map((x) => (x === null ? null : Math.round(x * 10) / 10)),
    rss_mb_at_end: nowRss.map((x) => (x === null ? null : Math.round(x * 10) / 10)),
    peak_rss_growth_mb_max: Math.round(Math.max(...growth.map((g) => g ?? 0)) * 10) / 10,
    rss_growth_bound_mb: RSS_GROWTH_MB,
    servers_with_incidents: incidents,
  };
  const failures = [];
  if (Object.keys(unexpected).length > 0) failures.push('unexpected outcomes');
  if (growth.some((g) => g !== null && g > RSS_GROWTH_MB)) failures.push(`peak RSS grew by more than ${RSS_GROWTH_MB} MiB`);
  if (incidents > 0) failures.push('INTERNAL incidents on stderr');
  report.failures = failures;
  return report;
}

/** Rounds profiled so far (--profile). */
let profiledRounds = 0;

/**
 * Waits (up to 10 s) for `count` servers' profiles in `inside`, moves them to --profile DIR/<round>/ and prints
 * their summary taken together.
 */
async function keepProfiles(inside, count) {
  const list = () => (existsSync(inside) ? readdirSync(inside).filter((f) => f.endsWith('.cpuprofile')) : []);
  for (let waited = 0; list().length < count && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
  const out = path.join(path.resolve(opts.profile), `round-${++profiledRounds}`);
  mkdirSync(out, { recursive: true });
  for (const f of list()) cpSync(path.join(inside, f), path.join(out, f));
  const files = readdirSync(out).map((f) => path.join(out, f));
  console.error(`soak: ${files.length} profiles in ${out}\n${summarizeProfiles(files, 40)}`);
}

async function main() {
  if (opts.compare) return compare(opts.compare);
  const report = await soakOnce(CLI, TOTAL_CALLS);
  const { failures } = report;
  delete report.failures;
  console.log(JSON.stringify(report, null, 2));
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
  const total = report.calls;
  if (failures.length) {
    console.error(`soak: FAILED: ${failures.join('; ')}`);
    process.exitCode = 1;
  } else {
    console.error(`soak: ok — ${total} calls in ${report.seconds} s (${report.calls_per_second}/s), peak RSS growth ≤ ${report.peak_rss_growth_mb_max} MiB`);
  }
}

/**
 * Builds `rev` in a temporary worktree of this repository; returns the worktree's path (its dist/cli.js is built).
 * @param {string} rev a commit, tag or branch
 */
function buildRevision(rev) {
  if (existsSync(path.join(rev, 'dist', 'cli.js'))) {
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: rev, encoding: 'utf8' });
    return { tree: path.resolve(rev), commit: head.status === 0 ? head.stdout.trim() : 'unknown' };
  }
  const run = (cmd, args, cwd) => {
    const r = spawnSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status}) in ${cwd}`);
    return r.stdout;
  };
  const commit = run('git', ['rev-parse', '--verify', `${rev}^{commit}`], REPO).trim();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-soak-rev-'));
  temporaries.push(dir);
  const tree = path.join(dir, 'tree');
  worktrees.push(tree);
  run('git', ['worktree', 'add', '--detach', tree, commit], REPO);
  const lock = (p) => { try { return readFileSync(path.join(p, 'package-lock.json'), 'utf8'); } catch { return null; } };
  if (lock(tree) !== null && lock(tree) === lock(REPO)) {
    symlinkSync(path.join(REPO, 'node_modules'), path.join(tree, 'node_modules'), 'dir');
    console.error(`soak: ${rev} (${commit.slice(0, 12)}) has this checkout's package-lock.json: node_modules linked`);
  } else {
    console.error(`soak: ${rev} (${commit.slice(0, 12)}): npm ci`);
    run('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], tree);
  }
  run('npm', ['run', 'build'], tree);
  return { tree, commit };
}

/** Worktrees this run added (removed at the end). */
const worktrees = [];

/** `--compare REV`: this build (A) and REV's (B) alternately, A B B A …; calls/s of each and the ratio. */
async function compare(rev) {
  const calls = process.argv.includes('--calls') ? TOTAL_CALLS : 30_000;
  const rounds = Number(opts.rounds);
  const other = buildRevision(rev);
  const builds = { this: CLI, [rev]: path.join(other.tree, 'dist', 'cli.js') };
  const names = ['this', rev];
  const per = Math.ceil(calls / rounds);
  const results = { this: [], [rev]: [] };
  const loadAtStart = os.loadavg();
  for (let i = 0; i < 2 * rounds; i++) {
    const name = names[[0, 1, 1, 0][i % 4]];
    const r = await soakOnce(builds[name], per);
    results[name].push(r);
    console.error(`soak: round ${i + 1}/${2 * rounds}: ${name} ${r.calls} calls in ${r.seconds} s (${r.calls_per_second}/s, server CPU ${r.server_cpu_ms_per_call} ms/call), load ${r.load_average_at_start[0]}`);
  }
  const rate = (rs) => rs.reduce((n, r) => n + r.calls, 0) / rs.reduce((n, r) => n + r.seconds, 0);
  const a = rate(results.this);
  const b = rate(results[rev]);
  const cpu = (rs) =>
    rs.some((r) => r.server_cpu_ms_per_call === null)
      ? null
      : rs.reduce((n, r) => n + r.server_cpu_ms_per_call * r.calls, 0) / rs.reduce((n, r) => n + r.calls, 0);
  const cpuA = cpu(results.this);
  const cpuB = cpu(results[rev]);
  const report = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), node ${process.version}`,
    load_average_at_start: loadAtStart.map((x) => Math.round(x * 100) / 100),
    load_average_at_end: os.loadavg().map((x) => Math.round(x * 100) / 100),
    clients: CLIENTS,
    calls_per_build: per * rounds,
    order: Array.from({ length: 2 * rounds }, (_, i) => names[[0, 1, 1, 0][i % 4]]).join(' '),
    this_calls_per_second: Math.round(a),
    [`${rev}_calls_per_second`]: Math.round(b),
    [`${rev}_commit`]: other.commit,
    ratio_this_over_rev: Math.round((a / b) * 1000) / 1000,
    this_server_cpu_ms_per_call: cpuA === null ? null : Math.round(cpuA * 1000) / 1000,
    [`${rev}_server_cpu_ms_per_call`]: cpuB === null ? null : Math.round(cpuB * 1000) / 1000,
    cpu_ratio_rev_over_this: cpuA === null || cpuB === null ? null : Math.round((cpuB / cpuA) * 1000) / 1000,
    target: '≥ 1.0',
    met: a / b >= 1.0,
    rounds: Object.fromEntries(names.map((n) => [n, results[n].map((r) => ({ calls_per_second: r.calls_per_second, seconds: r.seconds,
      server_cpu_ms_per_call: r.server_cpu_ms_per_call,
      load_average_at_start: r.load_average_at_start[0], peak_rss_mb_max: Math.max(...r.peak_rss_mb_at_end.map((x) => x ?? 0)),
      failures: r.failures }))])),
  };
  console.log(JSON.stringify(report, null, 2));
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
  const failed = names.filter((n) => results[n].some((r) => r.failures.length > 0));
  if (failed.length) {
    console.error(`soak: FAILED rounds in ${failed.join(', ')} (see rounds.*.failures)`);
    process.exitCode = 1;
  }
  console.error(`soak --compare: this ${Math.round(a)}/s, ${rev} ${Math.round(b)}/s, ratio ${(a / b).toFixed(3)} (target ≥ 1.0: ${a / b >= 1 ? 'met' : 'NOT met'}); ` +
    `server CPU per call this ${cpuA?.toFixed(2)} ms, ${rev} ${cpuB?.toFixed(2)} ms (${rev}/this ${cpuA && cpuB ? (cpuB / cpuA).toFixed(3) : 'n/a'})`);
}

function cleanUp() {
  for (const tree of worktrees) spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: REPO, stdio: 'ignore' });
  for (const dir of temporaries) rmSync(dir, { recursive: true, force: true });
}

main().then(cleanUp, (error) => {
  console.error(error);
  cleanUp();
  process.exitCode = 1;
});

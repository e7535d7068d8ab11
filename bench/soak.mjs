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
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const { values: opts } = parseArgs({
  options: {
    calls: { type: 'string', default: '100000' },
    clients: { type: 'string', default: '8' },
    'max-seconds': { type: 'string', default: '900' },
    'rss-growth-mb': { type: 'string', default: '64' },
    json: { type: 'string' },
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

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const sha256 = (s) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

function vm(pid, key) {
  try {
    const m = new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

// The shared tree: 40 directories × 25 files to read, list and search; one directory per client for its writes.
const base = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-soak-'));
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

async function startClient(c) {
  const transport = new StdioClientTransport({
    command: process.execPath, args: [CLI, '--state-dir', stateDir, root], stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name: `soak-${c}`, version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return { client, pid: transport.pid, stderr: () => stderr };
}

/** One client's loop: kinds of calls until `quota` tool calls were made (a write is a stat and a write). */
async function drive(c, conn, quota, deadline, counts, unexpected, onWarm) {
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
      if (!warm && calls >= WARMUP_CALLS) { warm = true; onWarm(); }
    }
  }));
  return calls;
}

async function main() {
  const loadAtStart = os.loadavg();
  const started = Date.now();
  const deadline = started + MAX_SECONDS * 1000;
  const conns = await Promise.all(Array.from({ length: CLIENTS }, (_, c) => startClient(c)));
  const counts = {};
  const unexpected = {};
  const warmRss = new Array(CLIENTS).fill(null);
  const quota = Math.floor(TOTAL_CALLS / CLIENTS);
  const t0 = performance.now();
  let warmAt = null;
  const done = await Promise.all(conns.map((conn, c) => drive(c, conn, quota + (c < TOTAL_CALLS % CLIENTS ? 1 : 0), deadline, counts, unexpected,
    () => { warmRss[c] = vm(conn.pid, 'VmHWM'); warmAt ??= performance.now(); })));
  const seconds = (performance.now() - t0) / 1000;
  const total = done.reduce((a, b) => a + b, 0);
  const endRss = conns.map((conn) => vm(conn.pid, 'VmHWM'));
  const nowRss = conns.map((conn) => vm(conn.pid, 'VmRSS'));
  const incidents = conns.filter((conn) => /INTERNAL|incident/.test(conn.stderr())).length;
  await Promise.all(conns.map((conn) => conn.client.close()));
  rmSync(base, { recursive: true, force: true });

  const growth = endRss.map((e, i) => (e !== null && warmRss[i] !== null ? e - warmRss[i] : null));
  const report = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}, node ${process.version}`,
    load_average_at_start: loadAtStart.map((x) => Math.round(x * 100) / 100),
    load_average_at_end: os.loadavg().map((x) => Math.round(x * 100) / 100),
    clients: CLIENTS,
    servers: `${CLIENTS} processes (one per client), one shared tree and state dir`,
    calls: total,
    stopped_by: total < TOTAL_CALLS ? `time limit ${MAX_SECONDS} s` : 'call count',
    seconds: Math.round(seconds * 10) / 10,
    calls_per_second: Math.round(total / seconds),
    outcomes: Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1])),
    unexpected,
    peak_rss_mb_after_warmup: warmRss.map((x) => (x === null ? null : Math.round(x * 10) / 10)),
    peak_rss_mb_at_end: endRss.map((x) => (x === null ? null : Math.round(x * 10) / 10)),
    rss_mb_at_end: nowRss.map((x) => (x === null ? null : Math.round(x * 10) / 10)),
    peak_rss_growth_mb_max: Math.round(Math.max(...growth.map((g) => g ?? 0)) * 10) / 10,
    rss_growth_bound_mb: RSS_GROWTH_MB,
    servers_with_incidents: incidents,
  };
  console.log(JSON.stringify(report, null, 2));
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
  const failures = [];
  if (Object.keys(unexpected).length > 0) failures.push('unexpected outcomes');
  if (growth.some((g) => g !== null && g > RSS_GROWTH_MB)) failures.push(`peak RSS grew by more than ${RSS_GROWTH_MB} MiB`);
  if (incidents > 0) failures.push('INTERNAL incidents on stderr');
  if (failures.length) {
    console.error(`soak: FAILED: ${failures.join('; ')}`);
    process.exitCode = 1;
  } else {
    console.error(`soak: ok — ${total} calls in ${report.seconds} s (${report.calls_per_second}/s), peak RSS growth ≤ ${report.peak_rss_growth_mb_max} MiB`);
  }
}

main().catch((error) => {
  console.error(error);
  rmSync(base, { recursive: true, force: true });
  process.exitCode = 1;
});

#!/usr/bin/env node
/**
 * The soak's mix one kind at a time (bench/soak.mjs): for each build given, one server on a fresh copy of the soak's
 * tree, then blocks of N calls of one kind each (the kinds in turn, builds interleaved block by block), and the
 * server's CPU time (user + system, /proc/PID/stat) and wall time per call of each kind. Not part of `npm test`.
 *
 *   node bench/soak-kinds.mjs [--calls N] [--in-flight K] [--reps R] [--profile] BUILD_DIR...
 *
 * BUILD_DIR holds a built checkout (BUILD_DIR/dist/cli.js). `--profile` starts each server with `--cpu-prof`, its
 * profile written inside that server's root (the kernel wall lets the server write there only) and summarised at the
 * end by bench/profile-summary.mjs (the whole run; per-kind CPU is the table's job).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { summarizeProfile } from './profile-summary.mjs';

const { values: opts, positionals: builds } = parseArgs({
  allowPositionals: true,
  options: {
    calls: { type: 'string', default: '200' },
    'in-flight': { type: 'string', default: '1' },
    reps: { type: 'string', default: '2' },
    profile: { type: 'boolean', default: false },
    kinds: { type: 'string' },
    on: { type: 'string' },
  },
});
const N = Number(opts.calls);
const IN_FLIGHT = Number(opts['in-flight']);
const sha256 = (s) => `sha256:${createHash('sha256').update(s).digest('hex')}`;
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

function makeTree() {
  const base = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-soak-kinds-'));
  const root = path.join(base, 'root');
  const outside = path.join(base, 'outside');
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
  mkdirSync(path.join(root, 'work', 'c0'), { recursive: true });
  writeFileSync(path.join(root, 'work', 'c0', 'edit.txt'), 'counter 0\n');
  writeFileSync(path.join(root, 'work', 'c0', 'never-read.txt'), 'untouched\n');
  mkdirSync(path.join(root, 'prof'));
  return { base, root, outside, stateDir: path.join(base, 'state') };
}

/** `--on BASE`: a soak's tree already in use (BASE/root, BASE/state, BASE/outside), with a directory of our own. */
function existingTree(base) {
  const mine = `k${process.pid}-${++started}`;
  const tree = { base, root: path.join(base, 'root'), outside: path.join(base, 'outside'), stateDir: path.join(base, 'state'), keep: true, mine };
  mkdirSync(path.join(tree.root, 'work', mine), { recursive: true });
  writeFileSync(path.join(tree.root, 'work', mine, 'edit.txt'), 'counter 0\n');
  writeFileSync(path.join(tree.root, 'work', mine, 'never-read.txt'), 'untouched\n');
  return tree;
}
let started = 0;

async function start(dir) {
  const tree = opts.on ? existingTree(opts.on) : makeTree();
  const args = [path.join(dir, 'dist', 'cli.js'), '--state-dir', tree.stateDir, tree.root];
  if (opts.profile) args.unshift('--cpu-prof', `--cpu-prof-dir=${path.join(tree.root, 'prof')}`);
  const transport = new StdioClientTransport({ command: process.execPath, args, stderr: 'pipe' });
  const client = new Client({ name: 'soak-kinds', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  const state = { editHash: null, editN: 0, chain: Promise.resolve() };
  return { dir, tree, client, pid: transport.pid, state, cpu: {}, wall: {} };
}

/** One call of `kind` (i-th), as bench/soak.mjs makes it; returns the code. */
async function one(s, kind, i) {
  const call = async (name, args) => {
    const r = await s.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
    return r.isError ? { code: JSON.parse(r.content[0].text).error.code, r } : { code: 'ok', r };
  };
  const serially = (fn) => { const p = s.state.chain.then(fn); s.state.chain = p.catch(() => undefined); return p; };
  const d = (i * 7) % 40;
  const f = (i * 13) % 25;
  const file = `src/d${d}/f${f}.txt`;
  const mine = `work/${s.tree.mine ?? 'c0'}`;
  switch (kind) {
    case 'read': return call('read_file', { path: file });
    case 'read_range': return call('read_file', { path: file, start_line: 5, end_line: 9 });
    case 'list': return call('list_directory', { path: `src/d${d}`, depth: 1 });
    case 'search': return call('search_files', { path: `src/d${d}`, query: 'needle' });
    case 'glob': return call('search_files', { path: 'src', glob: `d${d}/*.txt` });
    case 'stat': return call('stat', { path: file });
    case 'read_files': return call('read_files', { paths: [file, `src/d${(d + 1) % 40}/f${f}.txt`] });
    case 'edit': return serially(async () => {
      if (s.state.editHash === null) s.state.editHash = (await call('read_file', { path: `${mine}/edit.txt` })).r.structuredContent.content_hash;
      const r = await call('edit_file', { path: `${mine}/edit.txt`, edits: [{ old_text: `counter ${s.state.editN}`, new_text: `counter ${s.state.editN + 1}` }], expected_hash: s.state.editHash });
      if (r.code === 'ok') { s.state.editN++; s.state.editHash = r.r.structuredContent.content_hash; }
      return r;
    });
    case 'write': return serially(async () => {
      const target = `${mine}/w${i % 10}.txt`;
      const st = await call('stat', { path: target });
      return call('write_file', { path: target, content: `written ${i}\n`, expected_hash: st.code === 'ok' ? st.r.structuredContent.content_hash : 'absent' });
    });
    case 'not_found': return call('read_file', { path: `src/d${d}/missing-${i}.txt` });
    case 'not_allowed': return call('read_file', { path: path.join(s.tree.outside, 'o.txt') });
    case 'validation': return call('read_file', { path: file, head: 0 });
    case 'occ_mismatch': return serially(() => call('write_file', { path: `${mine}/edit.txt`, content: 'x', expected_hash: sha256(`stale ${i}`) }));
    case 'hash_required': return call('write_file', { path: `${mine}/never-read.txt`, content: 'x' });
    case 'patch_failed': return call('edit_file', { path: file, edits: [{ old_text: 'no such text', new_text: 'x' }], expected_hash: sha256(readFileSync(path.join(s.tree.root, file))) });
    case 'secret_denied': return call('read_file', { path: '.env' });
    default: throw new Error(kind);
  }
}

const KINDS = opts.kinds?.split(',') ?? ['read', 'read_range', 'list', 'search', 'glob', 'stat', 'read_files', 'edit', 'write',
  'not_found', 'not_allowed', 'validation', 'occ_mismatch', 'hash_required', 'patch_failed', 'secret_denied'];

async function block(s, kind, base, record) {
  const c0 = cpuMs(s.pid);
  const t0 = performance.now();
  let next = 0;
  const codes = {};
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < N) { const i = base + next++; const r = await one(s, kind, i); codes[r.code] = (codes[r.code] ?? 0) + 1; }
  }));
  if (!record) return;
  (s.cpu[kind] ??= []).push((cpuMs(s.pid) - c0) / N);
  (s.wall[kind] ??= []).push((performance.now() - t0) / N);
  s.codes = { ...s.codes, [kind]: codes };
}

const servers = [];
for (const dir of builds) servers.push(await start(dir));
for (const s of servers) for (const kind of KINDS) await block(s, kind, 0, false); // warm-up
for (let rep = 0; rep < Number(opts.reps); rep++) {
  for (const kind of KINDS) for (const s of servers) await block(s, kind, (rep + 1) * N, true);
}
const fmt = (xs) => xs.map((x) => x.toFixed(2)).join('/');
console.log(`kind`.padEnd(14) + builds.map((b) => `${path.basename(b)} cpu ms | wall ms`.padEnd(34)).join(''));
for (const kind of KINDS) {
  console.log(kind.padEnd(14) + servers.map((s) => `${fmt(s.cpu[kind])} | ${fmt(s.wall[kind])}`.padEnd(34)).join('') + JSON.stringify(servers.map((s) => s.codes[kind])));
}
for (const s of servers) {
  await s.client.close();
  if (opts.profile) {
    await new Promise((r) => setTimeout(r, 1500));
    for (const f of readdirSync(path.join(s.tree.root, 'prof'))) {
      console.log(`\n== ${s.dir}\n${summarizeProfile(path.join(s.tree.root, 'prof', f), 40)}`);
    }
  }
  if (!s.tree.keep) rmSync(s.tree.base, { recursive: true, force: true });
}

#!/usr/bin/env node
/**
 * `npm run bench:scale` (or `npm run bench -- --scale`; issue #19, "Scale"): how fs-tools' cost grows with the tree.
 * One git repository grows to 20,000, 100,000 and 200,000 files (directories of 100 small TypeScript-like files,
 * 2 levels deep, all committed; the same 20 modified and 20 untracked files at every size). At each size a fresh
 * fs-tools server (real stdio process) runs, all pages each:
 *
 *   glob            search_files glob **\/*.ts                  next to `rg --files -g '*.ts'`
 *   content         search_files query (literal)               next to `rg -n --column -F`
 *   listing         list_directory depth 3 (every entry)       next to `rg --files` (walk only)
 *   git_status      git_status                                 next to `git status --porcelain=v2` (spawned)
 *
 * and prints, per size and operation, the median wall time, the peer's, their ratio and the server's peak RSS during
 * that operation (VmHWM, reset before each). Then the verdicts: cost grows linearly when the time per file at the
 * largest size is within 1.5× of the time per file at the smallest (the peer's growth is printed beside it), and
 * memory is bounded when peak RSS at the largest size is within 2× of that at the smallest (the result sets grow
 * tenfold, so only paging keeps memory flat).
 *
 * Options: --sizes 20000,100000,200000  --reps N (default 3)  --dir DIR (keep the tree there; reused when it is
 * already as large)  --json FILE. Needs git, rg (see bench/run.mjs) and Linux for RSS.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, startServer, timeOnce } from './mcp.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.join(HERE, '..', 'dist', 'cli.js');
const NEEDLE = 'scale_needle_42';
const FILES_PER_DIR = 100;
const DIRS_PER_GROUP = 100;

const log = (msg) => process.stderr.write(`[bench:scale] ${msg}\n`);

function parseArgs(argv) {
  const o = { sizes: [20_000, 100_000, 200_000], reps: 3, dir: null, json: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => argv[++i];
    if (a === '--sizes') o.sizes = val().split(',').map(Number);
    else if (a === '--reps') o.reps = Math.max(1, Math.round(Number(val())));
    else if (a === '--dir') o.dir = path.resolve(val());
    else if (a === '--json') o.json = path.resolve(val());
    else if (a === '--scale') continue; // forwarded by bench/run.mjs
    else throw new Error(`unknown option ${a}`);
  }
  o.sizes.sort((a, b) => a - b);
  return o;
}

const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@example.invalid',
  GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@example.invalid', LC_ALL: 'C' };
const git = (repo, ...args) => {
  const r = spawnSync('git', args, { cwd: repo, env: gitEnv, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
};
/** Spawns a command as a shell user would, resolving to its stdout (exit 0 or 1 for rg's "no match"). */
const spawnOut = (cmd, args, cwd) => new Promise((resolve, reject) => {
  execFile(cmd, args, { cwd, env: gitEnv, maxBuffer: 512 << 20 }, (error, stdout) => {
    if (error && !(cmd === 'rg' && error.code === 1)) reject(error);
    else resolve(stdout);
  });
});

/** File number n's path (relative) and content: about 300 bytes; every 100th file holds the needle. */
function fileOf(n) {
  const dir = Math.floor(n / FILES_PER_DIR);
  const rel = `g${String(Math.floor(dir / DIRS_PER_GROUP)).padStart(3, '0')}/d${String(dir % DIRS_PER_GROUP).padStart(2, '0')}/f${String(n % FILES_PER_DIR).padStart(2, '0')}.${n % 4 === 3 ? 'md' : 'ts'}`;
  const lines = [
    `import { value${n % 97} } from './value.js';`,
    `export function handler${n}(input: number): number {`,
    `  // keeps ${n} apart from its neighbours`,
    `  return input * ${n % 13} + value${n % 97};`,
    '}',
    n % 100 === 7 ? `export const marker = '${NEEDLE}';` : `export const marker = 'm${n}';`,
  ];
  return [rel, `${lines.join('\n')}\n`];
}

/** Grows the repository from `have` to `want` files and commits them; returns `want`. */
function grow(repo, have, want) {
  const t0 = Date.now();
  for (let n = have; n < want; n++) {
    const [rel, text] = fileOf(n);
    if (n % FILES_PER_DIR === 0) mkdirSync(path.join(repo, path.dirname(rel)), { recursive: true });
    writeFileSync(path.join(repo, rel), text);
  }
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', `${want} files`);
  log(`tree grown to ${want} files in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  return want;
}

/** The same 20 modified and 20 untracked files at every size (undone before growing). */
function dirty(repo, on) {
  for (let i = 0; i < 20; i++) {
    const [rel, text] = fileOf(i * 97); // all within the smallest tree
    writeFileSync(path.join(repo, rel), on ? `${text}// modified\n` : text);
    const extra = path.join(repo, path.dirname(rel), `untracked-${i}.txt`);
    if (on) writeFileSync(extra, `untracked ${i}\n`);
    else rmSync(extra, { force: true });
  }
  if (on) git(repo, 'status', '--porcelain'); // refresh the index once, as a user's own git would have
}

/** Calls a paged fs-tools tool until next_cursor is null; returns the number of results. */
async function allPages(server, tool, args, count) {
  let cursor;
  let n = 0;
  do {
    const r = await server.call(tool, cursor ? { ...args, cursor } : args);
    n += count(r.structuredContent);
    cursor = r.structuredContent.next_cursor;
  } while (cursor);
  return n;
}

const fmt = (x, d = 0) => (x === null || x === undefined ? 'n/a' : x.toFixed(d));

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  for (const [cmd, arg] of [['rg', '--version'], ['git', '--version']]) {
    if (spawnSync(cmd, [arg]).status !== 0) throw new Error(`${cmd} is missing (bench/run.mjs installs rg with apt-get)`);
  }
  const started = Date.now();
  const base = opts.dir ?? mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-scale-'));
  const repo = path.join(base, 'repo');
  const state = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-scale-state-'));
  let have = 0;
  if (existsSync(path.join(repo, '.git'))) {
    have = Number(/^(\d+) files/.exec(git(repo, 'log', '-1', '--format=%s'))?.[1] ?? 0);
    dirty(repo, false);
    log(`reusing ${repo} (${have} files)`);
    if (have > opts.sizes[0]) throw new Error(`${repo} already holds ${have} files, more than ${opts.sizes[0]}: remove it`);
  } else {
    mkdirSync(repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'config', 'gc.auto', '0');
    git(repo, 'config', 'maintenance.auto', 'false');
  }

  /** @type {Array<Record<string, any>>} */
  const rows = [];
  try {
    for (const size of opts.sizes) {
      if (have < size) {
        if (have > 0) dirty(repo, false);
        have = grow(repo, have, size);
      }
      dirty(repo, true);
      // Page cache: every tool reads the same warm tree.
      await spawnOut('rg', ['-uu', '-c', 'x', '.'], repo);
      const server = await startServer('fs-tools', [CLI, repo, '--state-dir', state]);
      try {
        const ops = [
          ['glob', () => allPages(server, 'search_files', { path: repo, glob: '**/*.ts' }, (s) => s.files.length),
            async () => (await spawnOut('rg', ['--files', '-g', '*.ts'], repo)).split('\n').filter(Boolean).length, 'rg --files -g *.ts'],
          ['content', () => allPages(server, 'search_files', { path: repo, query: NEEDLE }, (s) => s.matches.length),
            async () => (await spawnOut('rg', ['-n', '--column', '-F', NEEDLE, '.'], repo)).split('\n').filter(Boolean).length, 'rg -F'],
          ['listing', () => allPages(server, 'list_directory', { path: repo, depth: 3 }, (s) => s.entries.length),
            async () => (await spawnOut('rg', ['--files', '-uu', '-g', '!.git', '.'], repo)).split('\n').filter(Boolean).length, 'rg --files (walk only)'],
          ['git_status', async () => (await server.call('git_status', { path: repo })).structuredContent.entries.length,
            async () => (await spawnOut('git', ['--no-optional-locks', 'status', '--porcelain=v2', '--untracked-files=all'], repo)).split('\n').filter(Boolean).length,
            'git status --porcelain=v2'],
        ];
        for (const [op, fsOp, peerOp, peerName] of ops) {
          const fsCount = await fsOp(); // warm
          const peerCount = await peerOp();
          server.resetPeakRss();
          const a = [];
          const b = [];
          for (let i = 0; i < opts.reps; i++) {
            if (i % 2 === 0) {
              a.push(await timeOnce(fsOp));
              b.push(await timeOnce(peerOp));
            } else {
              b.push(await timeOnce(peerOp));
              a.push(await timeOnce(fsOp));
            }
          }
          const row = { size, op, fsMs: median(a), peerMs: median(b), peerName, rssMb: server.peakRssMb(), fsCount, peerCount };
          rows.push(row);
          log(`${size} files, ${op}: fs-tools ${fmt(row.fsMs)} ms (${fsCount} results), ${peerName} ${fmt(row.peerMs)} ms (${peerCount}); peak RSS ${fmt(row.rssMb)} MB`);
        }
      } finally {
        await server.close();
      }
    }
  } finally {
    rmSync(state, { recursive: true, force: true });
    if (!opts.dir) rmSync(base, { recursive: true, force: true, maxRetries: 5 });
  }

  const cpu = os.cpus();
  const lines = [
    `fs-tools scale benchmark — ${new Date().toISOString().slice(0, 10)}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'cpu'}, Node ${process.versions.node}; `
      + `load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(', ')}; median of ${opts.reps}; total ${((Date.now() - started) / 1000).toFixed(0)} s`,
    '',
    '| files | operation | fs-tools ms | peer ms | peer | ratio | fs-tools µs/file | peak RSS MB | results (fs-tools / peer) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.size} | ${r.op} | ${fmt(r.fsMs)} | ${fmt(r.peerMs)} | ${r.peerName} | ${fmt(r.fsMs / r.peerMs, 2)} | `
      + `${fmt((r.fsMs * 1000) / r.size, 1)} | ${fmt(r.rssMb)} | ${r.fsCount} / ${r.peerCount} |`),
    '',
  ];
  const smallest = opts.sizes[0];
  const largest = opts.sizes[opts.sizes.length - 1];
  for (const op of new Set(rows.map((r) => r.op))) {
    const lo = rows.find((r) => r.op === op && r.size === smallest);
    const hi = rows.find((r) => r.op === op && r.size === largest);
    if (!lo || !hi || lo === hi) continue;
    const growth = (hi.fsMs / hi.size) / (lo.fsMs / lo.size);
    const peerGrowth = (hi.peerMs / hi.size) / (lo.peerMs / lo.size);
    const rss = hi.rssMb !== null && lo.rssMb !== null ? hi.rssMb / lo.rssMb : null;
    lines.push(`- ${op}: time per file at ${largest} vs ${smallest} files ×${growth.toFixed(2)} (${hi.peerName}: ×${peerGrowth.toFixed(2)}) → `
      + `${growth <= 1.5 ? 'linear' : '**grows faster than linear**'}; peak RSS ×${fmt(rss, 2)} (${fmt(lo.rssMb)} → ${fmt(hi.rssMb)} MB) → `
      + `${rss !== null && rss <= 2 ? 'bounded' : '**not bounded**'}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (opts.json) writeFileSync(opts.json, JSON.stringify({ rows }, null, 2));
}

main().catch((error) => {
  process.stderr.write(`[bench:scale] failed: ${error.stack ?? error}\n`);
  process.exit(1);
});


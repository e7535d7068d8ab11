#!/usr/bin/env node
/**
 * `npm run bench`: fs-tools against the official filesystem MCP server (@modelcontextprotocol/server-filesystem, a
 * pinned dev dependency) and ripgrep, in one run, on one generated corpus (bench/corpus.mjs). Every row prints its
 * target and whether it was met; the targets are the performance targets of docs/benchmarks.md.
 *
 * Both servers run as real stdio processes (`node dist/cli.js ROOT --state-dir TMP` and the peer's dist/index.js
 * ROOT) and are driven by the same MCP client. Every operation is repeated; the table shows medians, the ratio
 * fs-tools / peer (of times: below 1.0 means fs-tools is faster; for calls per second the ratio is peer/fs-tools
 * calls per second, the same thing) and each server's peak RSS during that operation (VmHWM from /proc/PID/status,
 * reset before each operation through /proc/PID/clear_refs); the read_file rows also note each server's CPU time per
 * call (user + system from /proc/PID/stat), which a loaded machine disturbs less than wall time. Two rows summarise: the one-shot `fs-tools call
 * read_file` wall time against a bare `node -e 0` (bench/one-shot.mjs), and the server's peak RSS over the whole bench
 * against the peer's. The header names the machine, the load average at the start and the end, and whether the kernel
 * wall was in force in the server measured (it is on by default; the bench says so when it is not).
 *
 * Options:
 *   --corpus DIR     generate the corpus in DIR and keep it (reused when it is already there); default: a temp dir,
 *                    removed at the end. Same as FS_TOOLS_BENCH_CORPUS=DIR.
 *   --only a,b       run only these cases (read, range, glob, content, edit, list, git, oneshot)
 *   --reps N         scale repetitions (default 1; 0.5 halves them)
 *   --profile DIR    run fs-tools under `node --cpu-prof --cpu-prof-dir DIR` and summarise the profile at the end
 *   --json FILE      also write the rows as JSON
 *   --scale          run the scale mode instead (bench/scale.mjs: 20,000 / 100,000 / 200,000 files; the options
 *                    after --scale are its own)
 *
 * Needs Linux for RSS figures (elsewhere they are shown as "n/a"), `rg` (installed with apt-get when missing).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bigFileLines, EDIT_A, EDIT_B, generateCorpus, LITERAL, REGEX } from './corpus.mjs';
import { benchGitStatus } from './git-status.mjs';
import { median, startServer, throughput, timeOnce } from './mcp.mjs';
import { benchOneShot } from './one-shot.mjs';
import { summarizeProfile } from './profile-summary.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const CLI = path.join(REPO, 'dist', 'cli.js');
const PEER = path.join(REPO, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

function parseArgs(argv) {
  const o = { corpus: process.env.FS_TOOLS_BENCH_CORPUS ?? null, only: null, reps: 1, profile: null, json: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => argv[++i];
    if (a === '--corpus') o.corpus = path.resolve(val());
    else if (a === '--only') o.only = new Set(val().split(','));
    else if (a === '--reps') o.reps = Number(val());
    else if (a === '--profile') o.profile = path.resolve(val());
    else if (a === '--json') o.json = path.resolve(val());
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

/** Makes sure ripgrep is there (Debian package `ripgrep`); returns its version line. */
function ensureRipgrep() {
  const probe = spawnSync('rg', ['--version'], { encoding: 'utf8' });
  if (probe.status === 0) return probe.stdout.split('\n')[0];
  log('rg not found: apt-get install -y ripgrep');
  const sudo = process.getuid?.() === 0 ? [] : ['sudo', '-n'];
  const run = (args) => spawnSync(sudo[0] ?? args[0], sudo.length ? [...sudo.slice(1), ...args] : args.slice(1), { stdio: 'inherit' });
  let r = run(['apt-get', 'install', '-y', 'ripgrep']);
  if (r.status !== 0) {
    run(['apt-get', 'update']);
    r = run(['apt-get', 'install', '-y', 'ripgrep']);
  }
  const again = spawnSync('rg', ['--version'], { encoding: 'utf8' });
  if (again.status !== 0) throw new Error('ripgrep is missing and could not be installed (apt-get install -y ripgrep)');
  return again.stdout.split('\n')[0];
}

/** Runs rg once; returns [wall ms, matching lines]. */
function runRg(args, cwd) {
  const t0 = performance.now();
  const r = spawnSync('rg', args, { cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const ms = performance.now() - t0;
  if (r.status !== 0 && r.status !== 1) throw new Error(`rg failed: ${r.stderr}`);
  return [ms, r.stdout ? r.stdout.split('\n').filter(Boolean).length : 0];
}

/** Calls an fs-tools paged tool until next_cursor is null; returns the pages' structured results. */
async function allPages(server, tool, args) {
  const pages = [];
  let cursor;
  do {
    const r = await server.call(tool, cursor ? { ...args, cursor } : args);
    pages.push(r.structuredContent);
    cursor = r.structuredContent.next_cursor;
  } while (cursor);
  return pages;
}

/** CPU time (user + system) a process has used so far, ms, from /proc/PID/stat; null where /proc is not readable. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** The kernel's clock ticks per second for /proc/PID/stat times (USER_HZ: 100 on Linux; `getconf CLK_TCK`). */
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
/** Two decimals, or three where two would round onto a target (1.00, 0.20, 2.00) and hide which side it is on. */
const fmtRatio = (r) => (['1.00', '0.20', '2.00'].includes(r.toFixed(2)) ? r.toFixed(3) : r.toFixed(2));
const fmtMb = (mb) => (mb === null || mb === undefined ? 'n/a' : mb.toFixed(0));

async function main() {
  const scaleAt = process.argv.indexOf('--scale');
  if (scaleAt > 0) {
    const r = spawnSync(process.execPath, [path.join(HERE, 'scale.mjs'), ...process.argv.slice(scaleAt + 1)], { stdio: 'inherit' });
    process.exit(r.status ?? 1);
  }
  const opts = parseArgs(process.argv.slice(2));
  const want = (c) => !opts.only || opts.only.has(c);
  const reps = (n) => Math.max(1, Math.round(n * opts.reps));
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  if (!existsSync(PEER)) throw new Error(`${PEER} is missing: run npm install`);
  const started = Date.now();
  const loadAtStart = os.loadavg().map((x) => x.toFixed(2)).join(', ');
  const rgVersion = ensureRipgrep();

  const keepCorpus = opts.corpus !== null;
  const corpusDir = opts.corpus ?? mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-corpus-'));
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-bench-state-'));
  log(`corpus in ${corpusDir}`);
  const corpus = generateCorpus(corpusDir, log);
  log(`corpus ${corpus.reused ? 'reused' : 'generated'}: ${corpus.totalFiles} files, ${(corpus.totalBytes / 1e6).toFixed(0)} MB in tree/ and single files in files/ (${((Date.now() - started) / 1000).toFixed(0)} s so far)`);
  if (!corpus.reused) {
    // A corpus just written is written back by the kernel 30 s later (vm.dirty_expire_centisecs), in the middle of the
    // rows: its writeback threads then take CPU from both servers and the client on a small machine (docs/benchmarks.md,
    // "Names-only listing (2026-12-05, session 18)"). Flushed here, before any server starts, every run measures on a
    // settled disk, as a run on a reused corpus does. Nothing a row measures changes.
    const flushStarted = Date.now();
    const flushed = spawnSync('sync', ['-f', corpusDir], { stdio: 'ignore' }).status === 0;
    log(`corpus ${flushed ? 'flushed to disk' : 'NOT flushed (sync -f failed)'} in ${((Date.now() - flushStarted) / 1000).toFixed(1)} s`);
  }
  const tree = corpus.tree;
  const files = corpus.files;
  const big = path.join(files, 'big-200m.txt');
  const bigLines = bigFileLines(corpusDir);
  // Page cache: both servers and rg read the same warm tree.
  runRg(['--no-require-git', '-uu', '-c', 'x', '.'], tree);

  // The server writes its profile at exit inside the corpus root (the kernel wall lets it write nowhere else outside
  // its own directories); it is moved to --profile DIR at the end.
  const profileInside = opts.profile ? path.join(corpusDir, `.profile-${process.pid}`) : null;
  const profileArgs = profileInside ? ['--cpu-prof', '--cpu-prof-dir', profileInside] : [];
  const fs = await startServer('fs-tools', [...profileArgs, CLI, corpusDir, '--state-dir', stateDir]);
  const peer = await startServer('peer', [PEER, corpusDir]);
  // The kernel wall is on by default; the table says whether it was in force in the server measured.
  const wall = (await fs.call('list_allowed_directories', {})).structuredContent.kernel_wall;
  const wallText = wall.enforced ? `kernel wall on (landlock ABI ${wall.abi})` : `kernel wall OFF (${wall.reason})`;
  log(wallText);

  // The peer's real tool names and argument shapes (never guessed): fail loudly when they moved.
  const peerTools = new Map((await peer.listTools()).map((t) => [t.name, Object.keys(t.inputSchema?.properties ?? {})]));
  const needPeer = { read_text_file: ['path', 'tail'], search_files: ['path', 'pattern'], edit_file: ['path', 'edits'],
    list_directory: ['path'], list_directory_with_sizes: ['path'], directory_tree: ['path'] };
  for (const [tool, props] of Object.entries(needPeer)) {
    const have = peerTools.get(tool);
    if (!have || !props.every((p) => have.includes(p))) {
      throw new Error(`peer tool ${tool}(${props.join(', ')}) not offered; peer tools: ${[...peerTools].map(([n, p]) => `${n}(${p.join(',')})`).join(' ')}`);
    }
  }

  /** @type {Array<Record<string, any>>} */
  const rows = [];
  /**
   * Measures one operation on both servers, interleaved (fs-tools then peer, then the other way round).
   * @returns {Promise<{ fs: number[], peer: number[], fsRss: number|null, peerRss: number|null }>}
   */
  const duel = async (n, fsOp, peerOp, warm = true) => {
    if (warm) {
      await fsOp();
      if (peerOp) await peerOp();
    }
    fs.resetPeakRss();
    peer.resetPeakRss();
    const a = [];
    const b = [];
    for (let i = 0; i < n; i++) {
      if (i % 2 === 0 || !peerOp) {
        a.push(await timeOnce(fsOp));
        if (peerOp) b.push(await timeOnce(peerOp));
      } else {
        b.push(await timeOnce(peerOp));
        a.push(await timeOnce(fsOp));
      }
    }
    return { fs: a, peer: b, fsRss: fs.peakRssMb(), peerRss: peerOp ? peer.peakRssMb() : null };
  };
  const row = (r) => {
    rows.push(r);
    log(`${r.op}: fs-tools ${r.fs} ${r.unit}, ${r.peerName} ${r.peer ?? 'n/a'}; ratio ${r.ratio === null ? 'n/a' : fmtRatio(r.ratio)}`);
  };

  // (1) read_file of a 4 KB file: calls per second, sequential and 8 in flight.
  if (want('read')) {
    const small = path.join(files, 'small-4k.txt');
    const fsRead = () => fs.call('read_file', { path: small });
    const peerRead = () => peer.call('read_text_file', { path: small });
    const check = await fsRead();
    if (check.structuredContent.size !== 4096) throw new Error('read_file returned the wrong size');
    for (const [label, concurrency, calls] of [['sequential', 1, 300], ['8 in flight', 8, 600]]) {
      const n = reps(calls);
      await throughput(fsRead, 50, concurrency);
      await throughput(peerRead, 50, concurrency);
      fs.resetPeakRss();
      peer.resetPeakRss();
      const a = [];
      const b = [];
      // The CPU time each server spent on the rounds (user + system): on a loaded machine the wall times vary with
      // the scheduler, the CPU per call much less.
      const cpuBefore = [cpuMs(fs.pid), cpuMs(peer.pid)];
      for (let round = 0; round < 5; round++) {
        if (round % 2 === 0) {
          a.push(await throughput(fsRead, n, concurrency));
          b.push(await throughput(peerRead, n, concurrency));
        } else {
          b.push(await throughput(peerRead, n, concurrency));
          a.push(await throughput(fsRead, n, concurrency));
        }
      }
      const perCall = (pid, before) => {
        const after = cpuMs(pid);
        return after === null || before === null ? 'n/a' : `${((after - before) / (5 * n)).toFixed(3)} ms`;
      };
      const cpuNote = `server CPU per call: fs-tools ${perCall(fs.pid, cpuBefore[0])}, peer ${perCall(peer.pid, cpuBefore[1])}`;
      const fsCps = median(a);
      const peerCps = median(b);
      row({ id: '1', op: `read_file 4 KB, ${label}`, unit: 'calls/s', fs: Math.round(fsCps), peer: Math.round(peerCps), peerName: 'peer read_text_file',
        ratio: peerCps / fsCps, target: '≤ 0.67 (≥ 1.5× its calls/s)', met: peerCps / fsCps <= 0.67, fsRss: fs.peakRssMb(), peerRss: peer.peakRssMb(),
        note: `5 rounds of ${n} calls; ${cpuNote}` });
    }
  }

  // (2) 100 lines from the middle of the 200 MB file: first read, then later reads of other middle ranges.
  if (want('range')) {
    const mid = Math.floor(bigLines / 2);
    const rangeAt = (k) => ({ path: big, start_line: mid + k * 997, end_line: mid + k * 997 + 99 });
    fs.resetPeakRss();
    let first;
    const firstMs = await timeOnce(async () => { first = await fs.call('read_file', rangeAt(0)); });
    const s = first.structuredContent;
    const expectPrefix = String(mid).padStart(8, '0');
    if (!s.content.startsWith(expectPrefix) || s.range.end_line - s.range.start_line !== 99 || s.total_lines !== bigLines) {
      throw new Error(`range read returned the wrong lines: ${s.content.slice(0, 40)} (${JSON.stringify(s.range)})`);
    }
    const later = [];
    for (let k = 1; k <= reps(15); k++) later.push(await timeOnce(() => fs.call('read_file', rangeAt(k))));
    const laterMs = median(later);
    const rss = fs.peakRssMb();
    row({ id: '2', op: '100-line range, middle of 200 MB: first read', unit: 'ms', fs: fmtMs(firstMs), peer: null, peerName: 'peer',
      ratio: null, target: '—', met: null, fsRss: rss, peerRss: null, note: 'peer has no line range (head/tail only)' });
    row({ id: '2', op: '100-line range, middle of 200 MB: later reads', unit: 'ms', fs: fmtMs(laterMs), peer: null, peerName: 'peer',
      ratio: null, target: '< 50 ms, < 150 MB', met: laterMs < 50 && (rss ?? 0) < 150, fsRss: rss, peerRss: null,
      note: `median of ${later.length} other middle ranges` });
    // The closest thing the peer has: the last 100 lines.
    const r = await duel(reps(15), () => fs.call('read_file', { path: big, tail: 100 }), () => peer.call('read_text_file', { path: big, tail: 100 }));
    const ratio = median(r.fs) / median(r.peer);
    row({ id: '2b', op: 'tail 100 lines of 200 MB (after the first read)', unit: 'ms', fs: fmtMs(median(r.fs)), peer: fmtMs(median(r.peer)),
      peerName: 'peer read_text_file tail', ratio, target: '≤ 1.0', met: ratio <= 1.0, fsRss: r.fsRss, peerRss: r.peerRss, note: '' });
  }

  // (3) glob **/*.ts over the tree (peer: search_files).
  if (want('glob')) {
    let fsFiles = 0;
    let fsAllFiles = 0;
    let peerFiles = 0;
    const fsGlob = async () => { fsFiles = (await allPages(fs, 'search_files', { path: tree, glob: '**/*.ts' })).reduce((n, p) => n + p.files.length, 0); };
    const fsGlobAll = async () => {
      fsAllFiles = (await allPages(fs, 'search_files', { path: tree, glob: '**/*.ts', respect_gitignore: false }))
        .reduce((n, p) => n + p.files.length, 0);
    };
    const peerGlob = async () => {
      const r = await peer.call('search_files', { path: tree, pattern: '**/*.ts' });
      peerFiles = r.content[0].text.split('\n').filter(Boolean).length;
    };
    const r = await duel(reps(5), fsGlob, peerGlob);
    const ratio = median(r.fs) / median(r.peer);
    row({ id: '3', op: 'glob **/*.ts over the tree', unit: 'ms', fs: fmtMs(median(r.fs)), peer: fmtMs(median(r.peer)), peerName: 'peer search_files',
      ratio, target: '≤ 0.2 (5× faster)', met: ratio <= 0.2, fsRss: r.fsRss, peerRss: r.peerRss,
      note: `fs-tools ${fsFiles} files (node_modules ignored, all pages of 500), peer ${peerFiles} (walks node_modules)` });
    const r2 = await duel(reps(5), fsGlobAll, peerGlob);
    const ratio2 = median(r2.fs) / median(r2.peer);
    row({ id: '3b', op: 'glob **/*.ts, respect_gitignore: false (same result set)', unit: 'ms', fs: fmtMs(median(r2.fs)), peer: fmtMs(median(r2.peer)),
      peerName: 'peer search_files', ratio: ratio2, target: '≤ 0.2', met: ratio2 <= 0.2, fsRss: r2.fsRss, peerRss: r2.peerRss,
      note: `fs-tools ${fsAllFiles} files, peer ${peerFiles}` });
  }

  // (4) content search of a literal and of a regex over the tree, against rg on the same tree.
  if (want('content')) {
    for (const [label, fsArgs, rgArgs, goal] of [
      ['literal', { query: LITERAL }, ['--no-require-git', '-n', '--column', '-F', LITERAL, '.'], 1.0],
      ['regex', { query: REGEX, regex: true }, ['--no-require-git', '-n', '--column', REGEX, '.'], 1.2],
    ]) {
      let fsMatches = 0;
      let rgMatches = 0;
      const fsOp = async () => {
        fsMatches = (await allPages(fs, 'search_files', { path: tree, ...fsArgs })).reduce((n, p) => n + p.matches.length, 0);
      };
      await fsOp();
      runRg(rgArgs, tree);
      fs.resetPeakRss();
      const a = [];
      const b = [];
      for (let i = 0; i < reps(5); i++) {
        a.push(await timeOnce(fsOp));
        const [ms, n] = runRg(rgArgs, tree);
        b.push(ms);
        rgMatches = n;
      }
      const ratio = median(a) / median(b);
      row({ id: '4', op: `content search, ${label}`, unit: 'ms', fs: fmtMs(median(a)), peer: fmtMs(median(b)), peerName: 'rg',
        ratio, target: `≤ ${goal.toFixed(1)} (vs rg)`, met: ratio <= goal, fsRss: fs.peakRssMb(), peerRss: null,
        note: `${fsMatches} matches (rg ${rgMatches})${fsMatches === rgMatches ? '' : ' MISMATCH'}; peer has no content search` });
    }
  }

  // (5) a one-line edit in the 1 MB file (each server edits its own identical copy).
  if (want('edit')) {
    const fsFile = path.join(files, 'edit-fs-tools.txt');
    const peerFile = path.join(files, 'edit-peer.txt');
    await fs.call('read_file', { path: fsFile }); // the session's hash (auto-OCC), as an agent would have it
    // A reused corpus may hold either state of the edited line.
    let fsState = readFileSync(fsFile, 'utf8').includes(EDIT_A) ? 'a' : 'b';
    let peerState = readFileSync(peerFile, 'utf8').includes(EDIT_A) ? 'a' : 'b';
    const fsEdit = async () => {
      const [from, to] = fsState === 'a' ? [EDIT_A, EDIT_B] : [EDIT_B, EDIT_A];
      await fs.call('edit_file', { path: fsFile, edits: [{ old_text: from, new_text: to }] });
      fsState = fsState === 'a' ? 'b' : 'a';
    };
    const peerEdit = async () => {
      const [from, to] = peerState === 'a' ? [EDIT_A, EDIT_B] : [EDIT_B, EDIT_A];
      await peer.call('edit_file', { path: peerFile, edits: [{ oldText: from, newText: to }] });
      peerState = peerState === 'a' ? 'b' : 'a';
    };
    const r = await duel(reps(20), fsEdit, peerEdit);
    const ratio = median(r.fs) / median(r.peer);
    row({ id: '5', op: 'one-line edit in a 1 MB file', unit: 'ms', fs: fmtMs(median(r.fs)), peer: fmtMs(median(r.peer)), peerName: 'peer edit_file',
      ratio, target: '≤ 0.8', met: ratio <= 0.8, fsRss: r.fsRss, peerRss: r.peerRss, note: 'both return a unified diff' });
  }

  // (6) listing a 10,000-entry directory and a depth-3 tree.
  if (want('list')) {
    const wide = path.join(tree, 'wide');
    let fsCount = 0;
    let peerCount = 0;
    let fsPages = 0;
    const r = await duel(reps(10),
      async () => {
        const pages = await allPages(fs, 'list_directory', { path: wide });
        fsPages = pages.length;
        fsCount = pages.reduce((n, p) => n + p.entries.length, 0);
      },
      async () => { peerCount = (await peer.call('list_directory', { path: wide })).content[0].text.split('\n').length; });
    const ratio = median(r.fs) / median(r.peer);
    row({ id: '6', op: 'list a 10,000-entry directory, names and types', unit: 'ms', fs: fmtMs(median(r.fs)), peer: fmtMs(median(r.peer)),
      peerName: 'peer list_directory', ratio, target: '≤ 0.75', met: ratio <= 0.75, fsRss: r.fsRss, peerRss: r.peerRss,
      note: `${fsCount} vs ${peerCount} entries; fs-tools: ${fsPages} page(s), types from the listing (d_type, no lstat)` });
    let fsLong = 0;
    let fsLongPages = 0;
    const sized = await duel(reps(5),
      async () => {
        const pages = await allPages(fs, 'list_directory', { path: wide, long: true });
        fsLongPages = pages.length;
        fsLong = pages.reduce((n, p) => n + p.entries.length, 0);
      },
      () => peer.call('list_directory_with_sizes', { path: wide }));
    const ratioSized = median(sized.fs) / median(sized.peer);
    row({ id: '6b', op: 'list a 10,000-entry directory, long (sizes, mtimes)', unit: 'ms', fs: fmtMs(median(sized.fs)), peer: fmtMs(median(sized.peer)),
      peerName: 'peer list_directory_with_sizes', ratio: ratioSized, target: '≤ 1.0', met: ratioSized <= 1.0, fsRss: sized.fsRss,
      peerRss: sized.peerRss, note: `${fsLong} entries in ${fsLongPages} pages, long: true (one lstat each); the peer stats every entry too (fs.stat)` });
    const src = path.join(tree, 'src');
    let fsTree = 0;
    let fsTreePages = 0;
    let peerTree = 0;
    const countTree = (nodes) => nodes.reduce((n, e) => n + 1 + (e.children ? countTree(e.children) : 0), 0);
    const t = await duel(reps(5),
      async () => {
        const pages = await allPages(fs, 'list_directory', { path: src, depth: 3 });
        fsTreePages = pages.length;
        fsTree = pages.reduce((n, p) => n + p.entries.length, 0);
      },
      async () => { peerTree = countTree(JSON.parse((await peer.call('directory_tree', { path: src })).content[0].text)); });
    const ratio2 = median(t.fs) / median(t.peer);
    row({ id: '6', op: 'depth-3 tree (src/: 13,000+ entries)', unit: 'ms', fs: fmtMs(median(t.fs)), peer: fmtMs(median(t.peer)),
      peerName: 'peer directory_tree', ratio: ratio2, target: '≤ 0.5', met: ratio2 <= 0.5, fsRss: t.fsRss, peerRss: t.peerRss,
      note: `${fsTree} vs ${peerTree} entries; fs-tools all ${fsTreePages} pages, names and types (no lstat)` });
  }

  // (7) git_status through the sanitized git view vs plain git status, 20,000-file repository (bench/git-status.mjs).
  if (want('git')) row(await benchGitStatus({ log, reps }));

  // (8) one-shot `fs-tools call read_file` against a bare `node -e 0` (bench/one-shot.mjs).
  if (want('oneshot')) row(benchOneShot({ cli: CLI, root: corpusDir, file: path.join(files, 'small-4k.txt'), runs: reps(15), log }));

  // (9) the server's peak RSS over the whole bench against the peer's: the largest per-operation peak of each (rows
  // with their own server, git_status's, and rows without the peer are left out of the comparison).
  const duelRows = rows.filter((r) => typeof r.fsRss === 'number' && typeof r.peerRss === 'number');
  if (duelRows.length > 0) {
    const fsPeak = duelRows.reduce((a, r) => (r.fsRss > a.fsRss ? r : a));
    const peerPeak = duelRows.reduce((a, r) => (r.peerRss > a.peerRss ? r : a));
    const allFs = Math.max(...rows.filter((r) => typeof r.fsRss === 'number' && r.id !== '7').map((r) => r.fsRss));
    const ratio = allFs / peerPeak.peerRss;
    row({ id: '9', op: 'peak RSS of the server during the bench', unit: 'MB', fs: allFs.toFixed(0), peer: peerPeak.peerRss.toFixed(0),
      peerName: 'peer (its largest peak)', ratio, target: '≤ 1.2', met: ratio <= 1.2, fsRss: allFs, peerRss: peerPeak.peerRss,
      note: `largest per-operation VmHWM of each server over rows 1–6 (fs-tools' largest in rows with the peer: ${fsPeak.fsRss.toFixed(0)} MB, ${fsPeak.op}; the peer's: ${peerPeak.op})` });
  }

  await fs.close();
  await peer.close();

  const load = os.loadavg().map((x) => x.toFixed(2)).join(', ');
  const cpu = os.cpus();
  const header = `fs-tools benchmark — ${new Date().toISOString().slice(0, 10)}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'cpu'}, `
    + `Node ${process.versions.node}, ${os.platform()} ${os.release()}; ${rgVersion}; peer ${peerVersion()}; `
    + `load average (1, 5, 15 min) at the start ${loadAtStart}, at the end ${load}; ${wallText}; total ${((Date.now() - started) / 1000).toFixed(0)} s`;
  const lines = [
    header,
    '',
    '| # | operation | unit | fs-tools | peer | peer is | ratio fs-tools/peer (time) | target | met | fs-tools peak RSS MB | peer peak RSS MB | notes |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.id} | ${r.op} | ${r.unit} | ${r.fs} | ${r.peer ?? '—'} | ${r.peerName} | ${r.ratio === null ? '—' : fmtRatio(r.ratio)} | `
      + `${r.target} | ${r.met === null ? '—' : r.met ? 'yes' : '**no**'} | ${fmtMb(r.fsRss)} | ${fmtMb(r.peerRss)} | ${r.note} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (opts.json) writeFileSync(opts.json, JSON.stringify({ header, rows }, null, 2));
  if (opts.profile) {
    mkdirSync(opts.profile, { recursive: true });
    await waitForProfiles(profileInside);
    for (const f of readdirSync(profileInside)) cpSync(path.join(profileInside, f), path.join(opts.profile, f));
    rmSync(profileInside, { recursive: true, force: true });
    const profiles = readdirSync(opts.profile).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(opts.profile, f));
    for (const p of profiles) process.stdout.write(`\n${summarizeProfile(p, 25)}\n`);
  }
  rmSync(stateDir, { recursive: true, force: true });
  if (!keepCorpus) rmSync(corpusDir, { recursive: true, force: true });
}

/** Waits (up to 10 s) until the server, which exits after its client closed, has written its profile into `dir`. */
async function waitForProfiles(dir) {
  for (let i = 0; i < 100; i++) {
    if (existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.cpuprofile'))) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function peerVersion() {
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(PEER), '..', 'package.json'), 'utf8'));
  return `${pkg.name}@${pkg.version}`;
}

main().catch((error) => {
  process.stderr.write(`[bench] failed: ${error.stack ?? error}\n`);
  process.exit(1);
});

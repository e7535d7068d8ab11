/**
 * Attack: containment fuzzing (SPEC §4.1, §3.3 step 5, §4.3; issue 7). fast-check builds random worlds — two roots
 * (the first given through a symlinked spelling), an outside directory next to them, a prefix sibling `R1-secret`,
 * symlinks inside→inside, inside→outside (absolute, relative, climbing), dangling inside and outside, loops inside
 * and outside, hard links between inside and outside files, git repositories inside and outside the roots (and, in
 * some worlds, one that contains the roots) — and random call sequences over every path-taking tool, with path
 * strings made of `..`, `.`, repeated and trailing separators, Unicode look-alikes (U+2024 ONE DOT LEADER, U+FF0E
 * FULLWIDTH FULL STOP, U+2215 DIVISION SLASH), backslashes, NUL, very long names and paths, `~`, relative and
 * absolute forms and the root's symlinked spelling. Pins, for 10,000 generated calls:
 *  - nothing outside the roots is created, changed or deleted: the outside tree (every entry's name, kind, mode,
 *    size, inode, link target and mtime, directories included) is compared after every mutating call, and its bytes
 *    too after each world's last call;
 *  - no output reveals outside content or listings: unique markers planted in outside files, and the names of
 *    outside entries no generated path ever spells, never appear in any result (base64 content decoded too);
 *  - every path the oracle below resolves outside the roots (kernel semantics: symlinks followed component by
 *    component, `link/..` is the link target's parent, a missing component resolved lexically, the last component
 *    not followed for move/delete) is refused, and only with NOT_ALLOWED, NOT_FOUND or VALIDATION; NUL bytes, loops
 *    and over-long paths are refused the same way; a successful call reports only paths inside the roots;
 *  - no call is INTERNAL, and every failure code is one the SPEC allows for the situation;
 *  - the holes it found stay pinned as fixed cases at the bottom ("regressions found by the fuzzer"): names over
 *    NAME_MAX, 229-255-byte names (the temporary file's name), a backslash split as a separator on POSIX, the order of
 *    checks across a call's paths, apply_patch folding `link/..` lexically, and the quadratic cost of a huge path.
 * The 10,000 calls run in-process through `callTool` (src/server/call-tool.ts) — the exact function the stdio server's
 * tools/call handler and `fs-tools call` run, with a ProcessState from parseConfig — because 10,000 round trips
 * through a process would not fit the time budget. A second test replays a few hundred generated calls against two
 * identical worlds, one in-process and one through the real server process (dist/cli.js, real MCP client), and
 * requires the same outcome codes, which shows that the in-process path is the server's path.
 * Regular-expression searches are left to the real-server tests (secret-leaks, protocol-abuse): in-process under vitest
 * the reader threads (src/fs/search-reader-worker.ts) cannot be started from TypeScript sources; the walk they share with
 * literal searches is fuzzed here.
 * --auto-occ=off, so mutations reach the filesystem without hash plumbing. Worlds live on /dev/shm (tmpfs) when it
 * exists, so fsync costs nothing; otherwise in the OS temporary directory.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  accessSync,
  constants,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { callTool, type CallOutcome } from '../../src/server/call-tool.js';
import { createProcessState, type ProcessState } from '../../src/server/process-state.js';
import { TOOL_NAMES, TOOLS } from '../../src/tools/registry.js';
import { connect } from '../helpers/server.js';

/**
 * Worlds and calls per world. `npm test` runs 4 × 250 (a developer's loop); `npm run test:fuzz` (run by .ci/run) runs
 * 16 × 625, the 10,000 calls this suite pins (FUZZ_WORLDS / FUZZ_CALLS).
 */
const WORLDS = Number(process.env.FUZZ_WORLDS ?? 4);
const CALLS_PER_WORLD = Number(process.env.FUZZ_CALLS ?? 250);
/** Calls replayed through the real server process (and in-process on a twin world). */
const SERVER_SAMPLE = 300;

const SCRATCH = (() => {
  try {
    accessSync('/dev/shm', constants.W_OK);
    if (lstatSync('/dev/shm').isDirectory()) return '/dev/shm';
  } catch {
    /* no tmpfs: use the temporary directory */
  }
  return os.tmpdir();
})();

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});

function scratchDir(prefix: string): string {
  const dir = realpathSync(mkdtempSync(path.join(SCRATCH, prefix)));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// ---------------------------------------------------------------------------------------------------------------
// Worlds

type ExtraKind =
  | 'file'
  | 'dir'
  | 'link-in'
  | 'link-cross-root'
  | 'link-out'
  | 'link-out-rel'
  | 'link-dangling-in'
  | 'link-dangling-out'
  | 'link-loop'
  | 'hard-out'
  | 'hard-in';

interface Extra {
  root: 'R1' | 'R2';
  parent: string;
  name: string;
  kind: ExtraKind;
}

interface WorldSpec {
  extras: Extra[];
  /** T itself is a git work tree (its toplevel lies outside the roots). */
  outerRepo: boolean;
}

const PARENTS: Record<Extra['root'], string[]> = { R1: ['', 'dirA', 'dirA/sub'], R2: ['', 'dirB'] };
const EXTRA_NAMES = [
  'x1',
  'x2',
  'new1',
  'e\u0301',
  '\u2024\u2024',
  '\uFF0E\uFF0E',
  'a\u2215b',
  'a\\b',
  '..\\O',
  'sp ace',
  'DIRA',
  'R1',
  'O',
  '~',
  'alpha.txt',
];

const extraArb: fc.Arbitrary<Extra> = fc
  .record({
    root: fc.constantFrom<Extra['root']>('R1', 'R2'),
    parentIndex: fc.nat(),
    name: fc.constantFrom(...EXTRA_NAMES),
    kind: fc.constantFrom<ExtraKind>(
      'file',
      'dir',
      'link-in',
      'link-cross-root',
      'link-out',
      'link-out-rel',
      'link-dangling-in',
      'link-dangling-out',
      'link-loop',
      'hard-out',
      'hard-in',
    ),
  })
  .map(({ root, parentIndex, name, kind }) => ({
    root,
    parent: PARENTS[root][parentIndex % PARENTS[root].length],
    name,
    kind,
  }));

const worldArb: fc.Arbitrary<WorldSpec> = fc.record({
  extras: fc.array(extraArb, { maxLength: 14 }),
  outerRepo: fc.boolean(),
});

/** One built world: T holds R1, R1link → R1, R2, O, R1-secret and top.txt. */
interface World {
  T: string;
  R1: string;
  R2: string;
  /** Strings that must never appear in any output: outside file contents and unguessable outside names. */
  forbidden: string[];
  state: ProcessState;
  stateDir: string;
}

const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.invalid',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.invalid',
  GIT_AUTHOR_DATE: '2020-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2020-01-01T00:00:00Z',
};

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', ['-c', 'init.defaultBranch=main', ...args], { cwd, env: GIT_ENV, stdio: 'ignore' });
}

/** Builds the world `spec` under a fresh T; `seed` makes the markers of two twin worlds identical. */
function buildWorld(spec: WorldSpec, seed: string): Omit<World, 'state' | 'stateDir'> {
  const T = scratchDir('fs-tools-fuzz-');
  const R1 = path.join(T, 'R1');
  const R2 = path.join(T, 'R2');
  const O = path.join(T, 'O');
  let n = 0;
  const forbidden: string[] = [];
  const marker = (): string => {
    const m = `OUTSIDE_${seed}_${++n}`;
    forbidden.push(m);
    return `${m}\nalpha\n`;
  };
  const unguessable = `unguessable_${seed}`;
  forbidden.push(unguessable);
  const file = (p: string, content: string) => {
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
  };

  // Outside.
  file(path.join(O, 'secret.txt'), marker());
  file(path.join(O, 'sub', 'deep.txt'), marker());
  file(path.join(O, 'plain.txt'), 'alpha\n');
  file(path.join(O, unguessable, 'inner.txt'), marker());
  file(path.join(O, 'hl-src.txt'), 'shared alpha\n');
  symlinkSync('loopB', path.join(O, 'loopA'));
  symlinkSync('loopA', path.join(O, 'loopB'));
  file(path.join(O, 'orepo', 'm.txt'), marker());
  git(path.join(O, 'orepo'), 'init', '-q', '--template=');
  git(path.join(O, 'orepo'), 'add', '.');
  git(path.join(O, 'orepo'), 'commit', '-q', '-m', 'outside');
  writeFileSync(path.join(O, 'orepo', 'm.txt'), marker());
  file(path.join(T, 'R1-secret', 'x.txt'), marker());
  file(path.join(T, 'top.txt'), marker());

  // R1.
  file(path.join(R1, 'dirA', 'a.txt'), 'inside a alpha\n');
  file(path.join(R1, 'dirA', 'sub', 's.txt'), 'inside s\nalpha\n');
  file(path.join(R1, 'b.txt'), 'alpha\n');
  file(path.join(R1, 'a\\b'), 'backslash alpha\n');
  mkdirSync(path.join(R1, 'a'));
  file(path.join(R1, 'a', 'b'), 'slash alpha\n');
  file(path.join(R1, '\u2024\u2024', 'dots.txt'), 'dot leader alpha\n');
  symlinkSync('dirA', path.join(R1, 'lnk-in'));
  symlinkSync(O, path.join(R1, 'lnk-out'));
  symlinkSync('../O', path.join(R1, 'lnk-rel-out'));
  symlinkSync(path.join(O, 'secret.txt'), path.join(R1, 'lnk-outfile'));
  symlinkSync('../../O/sub', path.join(R1, 'dirA', 'lnk-up'));
  symlinkSync(path.join(O, 'not-here.txt'), path.join(R1, 'dangle-out'));
  symlinkSync('missing-in.txt', path.join(R1, 'dangle-in'));
  symlinkSync('loop2', path.join(R1, 'loop1'));
  symlinkSync('loop1', path.join(R1, 'loop2'));
  symlinkSync(path.join(T, 'R1-secret'), path.join(R1, 'lnk-sibling'));
  symlinkSync(R2, path.join(R1, 'lnk-root2'));
  linkSync(path.join(O, 'hl-src.txt'), path.join(R1, 'hl-out'));

  // R2, with a git work tree (a modified and an untracked file).
  file(path.join(R2, 'dirB', 'c.txt'), 'inside c alpha\n');
  symlinkSync(path.join(R1, 'dirA'), path.join(R2, 'lnk-r1'));
  file(path.join(R2, 'hl-shared'), 'hlshared alpha\n');
  linkSync(path.join(R2, 'hl-shared'), path.join(O, 'hl-in'));
  file(path.join(R2, 'repo', 'r.txt'), 'repo alpha\n');
  git(path.join(R2, 'repo'), 'init', '-q', '--template=');
  git(path.join(R2, 'repo'), 'add', '.');
  git(path.join(R2, 'repo'), 'commit', '-q', '-m', 'inside');
  writeFileSync(path.join(R2, 'repo', 'r.txt'), 'repo alpha\nchanged\n');
  writeFileSync(path.join(R2, 'repo', 'untracked.txt'), 'alpha\n');

  symlinkSync(R1, path.join(T, 'R1link'));
  if (spec.outerRepo) git(T, 'init', '-q', '--template=');

  for (const [i, e] of spec.extras.entries()) {
    const dir = path.join(T, e.root, e.parent);
    const p = path.join(dir, e.name);
    if (lstatSync(p, { throwIfNoEntry: false })) continue;
    const up = path.relative(dir, T);
    switch (e.kind) {
      case 'file':
        writeFileSync(p, `extra ${i}\nalpha\n`);
        break;
      case 'dir':
        mkdirSync(p);
        writeFileSync(path.join(p, 'f.txt'), 'extra dir alpha\n');
        break;
      case 'link-in':
        symlinkSync(path.join(up, 'R1', 'dirA'), p);
        break;
      case 'link-cross-root':
        symlinkSync(e.root === 'R1' ? R2 : path.join(R1, 'b.txt'), p);
        break;
      case 'link-out':
        symlinkSync(i % 2 ? O : path.join(O, 'sub', 'deep.txt'), p);
        break;
      case 'link-out-rel':
        symlinkSync(path.join(up, i % 2 ? 'O' : 'R1-secret'), p);
        break;
      case 'link-dangling-in':
        symlinkSync(`missing-${i}`, p);
        break;
      case 'link-dangling-out':
        symlinkSync(path.join(up, 'O', `nothing-${i}`), p);
        break;
      case 'link-loop':
        symlinkSync(e.name, p);
        break;
      case 'hard-out':
        linkSync(path.join(O, 'hl-src.txt'), p);
        break;
      case 'hard-in':
        writeFileSync(p, `hard in ${i}\nalpha\n`);
        linkSync(p, path.join(O, `hl-extra-${i}`));
        break;
    }
  }
  return { T, R1, R2, forbidden };
}

function startWorld(spec: WorldSpec, seed: string): World {
  const built = buildWorld(spec, seed);
  const stateDir = scratchDir('fs-tools-fuzz-state-');
  const config = parseConfig(['--state-dir', stateDir, '--auto-occ=off', path.join(built.T, 'R1link'), built.R2], {
    cwd: built.T,
    home: '/nonexistent-home',
    toolNames: TOOL_NAMES,
  });
  return { ...built, stateDir, state: createProcessState(config, TOOLS, 'fuzz') };
}

/**
 * Everything outside the roots: each entry of T (R1 and R2 only as entries: their contents are the inside) with kind,
 * mode, bytes, link target and mtime, directories included (an entry created and removed again changes its
 * directory's mtime).
 */
function snapshotOutside(w: Pick<World, 'T' | 'R1' | 'R2'>, withBytes = true): Map<string, string> {
  const out = new Map<string, string>();
  const visit = (abs: string): void => {
    const st = lstatSync(abs);
    const rel = path.relative(w.T, abs) || '.';
    const mode = (st.mode & 0o7777).toString(8);
    if (abs === w.R1 || abs === w.R2) {
      out.set(rel, `root-dir ${mode}`);
      return;
    }
    if (st.isSymbolicLink()) out.set(rel, `link ${readlinkSync(abs)}`);
    else if (st.isFile()) {
      out.set(
        rel,
        `file ${mode} ${st.mtimeMs} ${st.size} ${st.ino} ${withBytes ? createHash('sha256').update(readFileSync(abs)).digest('hex') : ''}`,
      );
    } else if (st.isDirectory()) {
      out.set(rel, `dir ${mode} ${st.mtimeMs}`);
      for (const name of readdirSync(abs)) visit(path.join(abs, name));
    } else out.set(rel, `other ${mode}`);
  };
  visit(w.T);
  return out;
}

function diffSnapshots(before: Map<string, string>, after: Map<string, string>): string[] {
  const changes: string[] = [];
  for (const [k, v] of before) if (after.get(k) !== v) changes.push(`${k}: ${v} -> ${after.get(k) ?? '(gone)'}`);
  for (const [k, v] of after) if (!before.has(k)) changes.push(`${k}: (new) ${v}`);
  return changes;
}

// ---------------------------------------------------------------------------------------------------------------
// Paths

/** Where a generated path starts, relative to T ('' is T itself); '/etc' and '/' are system paths. */
const BASES = [
  'R1',
  'R1',
  'R1link',
  'R2',
  'R1/dirA',
  'R1/dirA/sub',
  'R1/lnk-in',
  'R2/lnk-r1',
  'R2/repo',
  'R2/dirB',
  'R1link/dirA',
  'R1/hl-out',
  'R1/dangle-in',
  'R1/\u2024\u2024',
  'O',
  'O/sub',
  'O/orepo',
  'O/loopA',
  'R1-secret',
  '',
  '/etc',
  '/',
  'R1/lnk-out',
  'R1/lnk-rel-out',
  'R1/lnk-outfile',
  'R1/dirA/lnk-up',
  'R1/dangle-out',
  'R1/loop1',
  'R1/lnk-sibling',
  'R1/lnk-root2',
] as const;

const TAILS = [
  'dirA',
  'sub',
  'a.txt',
  'b.txt',
  's.txt',
  'new1',
  'new2',
  'new3',
  '..',
  '..',
  '..',
  '.',
  'O',
  'R1',
  'R2',
  'R1-secret',
  'R1link',
  'secret.txt',
  'deep.txt',
  'plain.txt',
  'lnk-out',
  'lnk-in',
  'loop1',
  'dangle-out',
  'hl-out',
  'repo',
  'r.txt',
  '.git',
  'config',
  'dirB',
  'c.txt',
  'a',
  'b',
  '\u2024\u2024',
  '\uFF0E\uFF0E',
  '\u2024',
  '\uFF0E',
  '..\u2215O',
  '\u2215',
  'a\u2215b',
  'a\\b',
  '..\\O',
  '..\\..\\O',
  '~',
  'DIRA',
  'e\u0301',
  'sp ace',
  'x\u0000y',
  '\u0000',
  'n'.repeat(300),
  'n'.repeat(250),
  '\u00e9'.repeat(120),
  '\u00e9'.repeat(200),
];

/** Names that exist in most worlds, so that many calls reach real files and directories inside. */
const PLAIN_TAILS = [
  'dirA',
  'sub',
  'a.txt',
  'b.txt',
  's.txt',
  'new1',
  'new2',
  'c.txt',
  'dirB',
  'r.txt',
  'repo',
  'hl-out',
  '..',
  '.',
];

const SEPARATORS = ['/', '/', '/', '//', '/./', '///'];

interface PathDesc {
  base: (typeof BASES)[number];
  /** rel: relative to the first root (R1's real path), as agents usually write paths. */
  form: 'abs' | 'rel';
  tail: string[];
  seps: string[];
  trailing: '' | '/' | '//' | '/.';
  /** A very long path: the tail repeated this many times. */
  repeat: number;
}

/** Paths that exist in every world (until a call moves or deletes them), so reads and edits often succeed. */
const KNOWN: Array<[PathDesc['base'], string[]]> = [
  ['R1/dirA', ['a.txt']],
  ['R1', ['b.txt']],
  ['R1/dirA/sub', ['s.txt']],
  ['R2/dirB', ['c.txt']],
  ['R2/repo', ['r.txt']],
  ['R1/lnk-in', ['a.txt']],
  ['R1', ['hl-out']],
  ['R2', ['hl-shared']],
  ['R1link/dirA', ['a.txt']],
  ['R2/lnk-r1', ['sub', 's.txt']],
  ['R1', ['a\\b']],
  ['R1/\u2024\u2024', ['dots.txt']],
  ['R2/repo', []],
  ['R1/dirA', []],
];

const randomPathArb: fc.Arbitrary<PathDesc> = fc.record({
  base: fc.constantFrom(...BASES),
  form: fc.constantFrom<PathDesc['form']>('abs', 'rel', 'rel'),
  tail: fc.oneof(
    { weight: 3, arbitrary: fc.array(fc.constantFrom(...PLAIN_TAILS), { maxLength: 2 }) },
    { weight: 2, arbitrary: fc.array(fc.constantFrom(...TAILS), { maxLength: 4 }) },
  ),
  seps: fc.array(fc.constantFrom(...SEPARATORS), { minLength: 1, maxLength: 3 }),
  trailing: fc.constantFrom<PathDesc['trailing']>('', '', '', '/', '//', '/.'),
  repeat: fc.oneof({ weight: 30, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(400, 1500) }),
});

const knownPathArb: fc.Arbitrary<PathDesc> = fc
  .record({
    known: fc.constantFrom(...KNOWN),
    form: fc.constantFrom<PathDesc['form']>('abs', 'rel'),
    seps: fc.array(fc.constantFrom(...SEPARATORS), { minLength: 1, maxLength: 3 }),
  })
  .map(({ known: [base, tail], form, seps }) => ({ base, form, tail, seps, trailing: '', repeat: 1 }));

const pathArb: fc.Arbitrary<PathDesc> = fc.oneof(
  { weight: 3, arbitrary: randomPathArb },
  { weight: 1, arbitrary: knownPathArb },
);

/** The path string a PathDesc stands for in world `w` (the same for twin worlds up to T). */
function renderPath(d: PathDesc, w: Pick<World, 'T' | 'R1'>): string {
  const baseAbs = d.base.startsWith('/') ? d.base : d.base === '' ? w.T : path.join(w.T, d.base);
  let start = baseAbs;
  if (d.form === 'rel' && !d.base.startsWith('/')) start = path.relative(w.R1, baseAbs);
  const tail: string[] = [];
  for (let i = 0; i < d.repeat; i++) tail.push(...d.tail);
  const parts = start === '' ? tail : [start, ...tail];
  if (parts.length === 0) return '.';
  const out: string[] = [parts[0]];
  for (let i = 1; i < parts.length; i++)
    out.push(parts[i - 1].endsWith('/') ? '' : d.seps[i % d.seps.length], parts[i]);
  return out.join('') + d.trailing;
}

// ---------------------------------------------------------------------------------------------------------------
// The oracle: where a path string leads, by kernel semantics (SPEC §4.1), computed independently of src/policy.

type Verdict = { kind: 'inside' | 'outside'; real: string } | { kind: 'nul' | 'empty' | 'loop' | 'too_long' };

/**
 * Resolves `requested` as the kernel would (relative: against R1), without following the last component if asked.
 * Below a missing component names are appended lexically and a `..` climbing back out of it resumes the real walk
 * (the nearest-existing-ancestor rule).
 */
function oracle(requested: string, w: Pick<World, 'R1' | 'R2'>, followFinal: boolean): Verdict {
  if (requested === '') return { kind: 'empty' };
  if (requested.includes('\0')) return { kind: 'nul' };
  // The kernel refuses a path of PATH_MAX bytes or more, and a name longer than NAME_MAX, in every syscall.
  if (Buffer.byteLength(requested) >= 4096 || requested.split('/').some((c) => Buffer.byteLength(c) > 255))
    return { kind: 'too_long' };
  const start = requested.startsWith('/') ? requested : `${w.R1}/${requested}`;
  const queue = start.split('/').filter((c) => c !== '' && c !== '.');
  // The resolved prefix as components (a string rebuilt per step made very long paths quadratic).
  let cur: string[] = [];
  const joined = (parts: string[]) => `/${parts.join('/')}`;
  let links = 0;
  let missingDepth = 0;
  // Nothing changes during one resolution: a very long path repeats the same few prefixes thousands of times.
  const seen = new Map<string, ReturnType<typeof lstatSync> | null>();
  const lstatOnce = (p: string) => {
    if (!seen.has(p)) {
      try {
        seen.set(p, lstatSync(p, { throwIfNoEntry: false }) ?? null);
      } catch (error) {
        if (!['ENOTDIR', 'ENAMETOOLONG'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
        seen.set(p, null);
      }
    }
    return seen.get(p) ?? null;
  };
  for (let i = 0; i < queue.length; i++) {
    const c = queue[i];
    if (c === '..') {
      cur.pop();
      if (missingDepth > 0) missingDepth--;
      continue;
    }
    const isLast = i === queue.length - 1;
    if (missingDepth > 0) {
      missingDepth++;
      cur.push(c);
      continue;
    }
    const next = joined([...cur, c]);
    const st = lstatOnce(next);
    if (st?.isSymbolicLink() && (!isLast || followFinal)) {
      if (++links > 40) return { kind: 'loop' };
      const target = readlinkSync(next);
      if (target.startsWith('/')) cur = [];
      queue.splice(i + 1, 0, ...target.split('/').filter((t) => t !== '' && t !== '.'));
      continue;
    }
    cur.push(c);
    if (!st) missingDepth = 1;
  }
  const real = joined(cur);
  const within = (root: string) => real === root || real.startsWith(`${root}/`);
  return { kind: within(w.R1) || within(w.R2) ? 'inside' : 'outside', real };
}

// ---------------------------------------------------------------------------------------------------------------
// Calls

/** A generated call: tool, arguments with PathDesc placeholders, and how each path argument is resolved. */
interface CallSpec {
  tool: string;
  args: Record<string, unknown>;
}

/** A path placeholder inside CallSpec.args. */
interface PathSlot {
  $path: PathDesc;
  follow: boolean;
}

const slot =
  (follow: boolean) =>
  (d: PathDesc): PathSlot => ({ $path: d, follow });
const P = pathArb.map(slot(true));
const PNoFollow = pathArb.map(slot(false));
/** For the git tools: half the time a path in the work tree inside R2 (else they mostly meet no work tree at all). */
const PRepo = fc
  .oneof(
    pathArb,
    fc
      .record({
        form: fc.constantFrom<PathDesc['form']>('abs', 'rel'),
        tail: fc.constantFrom<string[]>([], ['r.txt'], ['untracked.txt'], ['.']),
      })
      .map(({ form, tail }): PathDesc => ({ base: 'R2/repo', form, tail, seps: ['/'], trailing: '', repeat: 1 })),
  )
  .map(slot(true));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** apply_patch: a patch whose file paths are placeholders, applied to `path` (a base directory or the one target). */
interface PatchSlot {
  $patch: {
    mode: 'headers' | 'single';
    files: Array<{ kind: 'modify' | 'create' | 'delete'; target: PathDesc }>;
  };
}

const callArb: fc.Arbitrary<CallSpec> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record({
        path: P,
        opt: fc.constantFrom({}, {}, { encoding: 'base64' }, { head: 1 }, { tail: 1 }, { max_bytes: 7 }),
      })
      .map(({ path: p, opt }) => ({ tool: 'read_file', args: { path: p, ...opt } })),
  },
  {
    weight: 6,
    arbitrary: fc.array(P, { minLength: 1, maxLength: 4 }).map((paths) => ({ tool: 'read_files', args: { paths } })),
  },
  { weight: 10, arbitrary: P.map((p) => ({ tool: 'stat', args: { path: p } })) },
  {
    weight: 8,
    arbitrary: fc
      .record({ path: P, depth: fc.integer({ min: 1, max: 4 }) })
      .map(({ path: p, depth }) => ({ tool: 'list_directory', args: { path: p, depth } })),
  },
  {
    weight: 8,
    arbitrary: fc
      .record({
        path: P,
        q: fc.constantFrom<Record<string, unknown>>(
          { query: 'alpha' },
          { query: 'OUTSIDE' },
          { glob: '**' },
          { glob: '*.txt', query: 'alpha' },
          { query: 'ALPHA', case_sensitive: false, context_lines: 2 },
        ),
      })
      .map(({ path: p, q }) => ({ tool: 'search_files', args: { path: p, ...q } })),
  },
  {
    weight: 10,
    arbitrary: fc
      .record({ path: P, createDirs: fc.boolean(), dryRun: fc.boolean(), absent: fc.boolean() })
      .map(({ path: p, createDirs, dryRun, absent }) => ({
        tool: 'write_file',
        args: {
          path: p,
          content: 'written alpha\n',
          ...(createDirs ? { create_dirs: true } : {}),
          ...(dryRun ? { dry_run: true } : {}),
          ...(absent ? { expected_hash: 'absent' } : {}),
        },
      })),
  },
  {
    weight: 8,
    arbitrary: fc.record({ path: P, dryRun: fc.boolean(), all: fc.boolean() }).map(({ path: p, dryRun, all }) => ({
      tool: 'edit_file',
      args: {
        path: p,
        edits: [{ old_text: 'alpha', new_text: 'edited', ...(all ? { replace_all: true } : {}) }],
        ...(dryRun ? { dry_run: true } : {}),
      },
    })),
  },
  {
    weight: 8,
    arbitrary: fc
      .record({
        mode: fc.constantFrom<'headers' | 'single'>('headers', 'headers', 'single'),
        base: maybe(P),
        files: fc.array(
          fc.record({
            kind: fc.constantFrom<'modify' | 'create' | 'delete'>('modify', 'modify', 'create', 'delete'),
            target: pathArb,
          }),
          { minLength: 1, maxLength: 3 },
        ),
        dryRun: fc.boolean(),
      })
      .map(({ mode, base, files, dryRun }) => ({
        tool: 'apply_patch',
        args: {
          patch: { $patch: { mode, files: mode === 'single' ? files.slice(0, 1) : files } } satisfies PatchSlot,
          ...(base ? { path: base } : {}),
          ...(dryRun ? { dry_run: true } : {}),
        },
      })),
  },
  {
    weight: 8,
    arbitrary: fc
      .record({ source: PNoFollow, destination: PNoFollow, overwrite: fc.boolean(), dryRun: fc.boolean() })
      .map(({ source, destination, overwrite, dryRun }) => ({
        tool: 'move_path',
        args: {
          source,
          destination,
          ...(overwrite ? { overwrite: true } : {}),
          ...(dryRun ? { dry_run: true } : {}),
        },
      })),
  },
  {
    weight: 8,
    arbitrary: fc
      .record({ path: PNoFollow, recursive: fc.boolean(), dryRun: fc.boolean() })
      .map(({ path: p, recursive, dryRun }) => ({
        tool: 'delete_path',
        args: {
          path: p,
          ...(recursive ? { recursive: true } : {}),
          ...(dryRun ? { dry_run: true } : {}),
        },
      })),
  },
  { weight: 8, arbitrary: P.map((p) => ({ tool: 'create_directory', args: { path: p } })) },
  // The git tools weigh 4 so that 1,000 calls refuse some of each (with 1, about one run in twelve refused none).
  { weight: 4, arbitrary: PRepo.map((p) => ({ tool: 'git_status', args: { path: p } })) },
  {
    weight: 4,
    arbitrary: fc
      .record({ path: PRepo, paths: maybe(fc.array(PNoFollow, { minLength: 1, maxLength: 2 })), staged: fc.boolean() })
      .map(({ path: p, paths, staged }) => ({
        tool: 'git_diff',
        args: { path: p, ...(paths ? { paths } : {}), ...(staged ? { staged: true } : {}) },
      })),
  },
);

/** A rendered call: concrete arguments plus the oracle's verdict for every path it names. */
interface Rendered {
  args: Record<string, unknown>;
  /** Verdicts of the paths whose refusal decides the whole call (all but read_files entries). */
  verdicts: Array<{ requested: string; verdict: Verdict }>;
  /** read_files: one verdict per entry. */
  entryVerdicts?: Verdict[];
}

function isDirectory(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

function isSlot(v: unknown): v is PathSlot {
  return typeof v === 'object' && v !== null && '$path' in v;
}

/** The header path of a patch file: relative paths get git's a/ b/ prefixes, absolute ones stand alone. */
function headerPaths(target: string, kind: 'modify' | 'create' | 'delete'): string {
  const rel = !target.startsWith('/');
  const oldSide = kind === 'create' ? '/dev/null' : rel ? `a/${target}` : target;
  const newSide = kind === 'delete' ? '/dev/null' : rel ? `b/${target}` : target;
  return `--- ${oldSide}\n+++ ${newSide}\n`;
}

const HUNKS = {
  modify: '@@ -1,1 +1,1 @@\n-alpha\n+patched\n',
  create: '@@ -0,0 +1,1 @@\n+created alpha\n',
  delete: '@@ -1,1 +0,0 @@\n-alpha\n',
};

function renderCall(spec: CallSpec, w: Pick<World, 'T' | 'R1' | 'R2'>): Rendered {
  const verdicts: Rendered['verdicts'] = [];
  const judge = (requested: string, follow: boolean) => ({ requested, verdict: oracle(requested, w, follow) });
  const args: Record<string, unknown> = {};
  let entryVerdicts: Verdict[] | undefined;
  for (const [key, value] of Object.entries(spec.args)) {
    if (isSlot(value)) {
      const requested = renderPath(value.$path, w);
      args[key] = requested;
      verdicts.push(judge(requested, value.follow));
    } else if (Array.isArray(value) && value.every(isSlot)) {
      const rendered = value.map((s) => renderPath(s.$path, w));
      args[key] = rendered;
      if (spec.tool === 'read_files') entryVerdicts = value.map((s, i) => oracle(rendered[i], w, s.follow));
      else value.forEach((s, i) => verdicts.push(judge(rendered[i], s.follow)));
    } else if (typeof value === 'object' && value !== null && '$patch' in value) {
      args[key] = null; // filled below, once the base is known
    } else {
      args[key] = value;
    }
  }
  if (spec.tool === 'apply_patch') {
    const { mode, files } = (spec.args.patch as PatchSlot).$patch;
    const targets = files.map((f) => ({
      ...f,
      text:
        renderPath(f.target, w)
          .replace(/[\n\t]/g, '_')
          .trim() || 'new1',
    }));
    if (mode === 'single') {
      args.patch = HUNKS[targets[0].kind === 'create' ? 'create' : 'modify'];
    } else {
      args.patch = targets.map((t) => headerPaths(t.text, t.kind) + HUNKS[t.kind]).join('');
      // The base the server joins relative header paths to: the first root, or `path` when it is a directory.
      let base = w.R1;
      const pathVerdict = verdicts[0]?.verdict;
      if (typeof args.path === 'string') {
        base = pathVerdict && 'real' in pathVerdict && isDirectory(pathVerdict.real) ? pathVerdict.real : '';
      }
      if (base !== '') {
        for (const t of targets) verdicts.push(judge(t.text.startsWith('/') ? t.text : `${base}/${t.text}`, true));
      }
    }
  }
  return { args, verdicts, ...(entryVerdicts ? { entryVerdicts } : {}) };
}

// ---------------------------------------------------------------------------------------------------------------
// Checks

/** Codes a refusal of a path outside the roots may carry (issue 7). */
const OUTSIDE_CODES = new Set(['NOT_ALLOWED', 'NOT_FOUND', 'VALIDATION']);
/** Every code these calls may legitimately produce inside the roots (SPEC §3.1; never INTERNAL). */
const ALLOWED_CODES = new Set([
  ...OUTSIDE_CODES,
  'OCC_MISMATCH',
  'PATCH_FAILED',
  'REWRITE_BLOCKED',
  'FILE_POLICY_DENIED',
  'SECRET_DENIED',
  'HASH_REQUIRED',
]);

/** A call outcome as either transport reports it. */
type Outcome = CallOutcome;

function codeOf(o: Outcome): string {
  return o.ok ? 'ok' : o.envelope.error.code;
}

const isRefusedOutside = (v: Verdict) => v.kind !== 'inside';

/** Every text an outcome shows a client, with base64 content decoded. */
function visibleText(o: Outcome): string {
  const parts = [JSON.stringify(o)];
  if (o.ok) {
    const s = o.structured as Record<string, any>;
    const decode = (r: Record<string, any> | undefined) => {
      if (r?.encoding === 'base64' && typeof r.content === 'string')
        parts.push(Buffer.from(r.content, 'base64').toString('latin1'));
    };
    decode(s);
    for (const entry of (s.results ?? []) as Array<Record<string, any>>) decode(entry.result);
  }
  return parts.join('\n');
}

/** Paths a successful result reports as resolved (absolute real paths). */
function reportedPaths(o: Outcome): string[] {
  if (!o.ok) return [];
  const s = o.structured as Record<string, any>;
  const out: string[] = [];
  for (const key of ['path', 'source', 'destination', 'repo_root']) if (typeof s[key] === 'string') out.push(s[key]);
  for (const f of (s.files ?? []) as Array<Record<string, any>>) {
    if (typeof f?.path === 'string' && f.path.startsWith('/')) out.push(f.path);
    if (typeof f?.from === 'string') out.push(f.from);
  }
  for (const r of (s.results ?? []) as Array<Record<string, any>>)
    if (r.ok && typeof r.result?.path === 'string') out.push(r.result.path);
  return out;
}

/** The problems with one outcome, as sentences (empty: the call behaved). */
function judgeOutcome(spec: CallSpec, r: Rendered, o: Outcome, w: Pick<World, 'R1' | 'R2' | 'forbidden'>): string[] {
  const problems: string[] = [];
  const code = codeOf(o);
  if (!o.ok && !ALLOWED_CODES.has(code)) problems.push(`unexpected code ${code}: ${o.envelope.error.message}`);
  const text = visibleText(o);
  for (const f of w.forbidden) if (text.includes(f)) problems.push(`output reveals outside marker ${f}`);
  for (const p of reportedPaths(o)) {
    if (!(p === w.R1 || p.startsWith(`${w.R1}/`) || p === w.R2 || p.startsWith(`${w.R2}/`)))
      problems.push(`reports outside path ${p}`);
  }
  const outside = r.verdicts.filter((v) => isRefusedOutside(v.verdict));
  if (outside.length > 0) {
    const patchParse =
      spec.tool === 'apply_patch' &&
      code === 'PATCH_FAILED' &&
      ['malformed', 'no_hunks'].includes(
        String((o as { envelope: { error: { details: { reason?: unknown } } } }).envelope.error.details.reason),
      );
    if (o.ok)
      problems.push(
        `succeeded for ${outside.map((v) => `${JSON.stringify(v.requested)} (${v.verdict.kind})`).join(', ')}`,
      );
    else if (!OUTSIDE_CODES.has(code) && !patchParse) {
      problems.push(
        `refused ${outside.map((v) => JSON.stringify(v.requested)).join(', ')} with ${code}, not NOT_ALLOWED/NOT_FOUND/VALIDATION`,
      );
    }
  }
  if (r.entryVerdicts && o.ok) {
    const { results, truncated } = o.structured as {
      results: Array<{ ok: boolean; error?: { code: string } }>;
      truncated?: boolean;
    };
    r.entryVerdicts.forEach((v, i) => {
      if (!isRefusedOutside(v)) return;
      const e = results[i];
      // Past the response budget the rest of the paths are left unread for the next call (remaining_paths, issue
      // #14): nothing of them is in this result, which is all the fuzz checks; a missing entry is only legal then.
      if (e === undefined) {
        if (!truncated) problems.push(`read_files entry ${i} (${v.kind}) missing from a result that is not truncated`);
        return;
      }
      if (e.ok) problems.push(`read_files entry ${i} (${v.kind}) succeeded`);
      else if (!OUTSIDE_CODES.has(e.error!.code))
        problems.push(`read_files entry ${i} (${v.kind}) refused with ${e.error!.code}`);
    });
  }
  return problems;
}

/** Milliseconds spent in each tool (printed with the counts, to keep the file's time budget visible). */
const TIME_BY_TOOL: Record<string, number> = {};
const MUTATING = new Set(['write_file', 'edit_file', 'apply_patch', 'move_path', 'delete_path', 'create_directory']);

/** Runs `specs` in world `w` through `call`, checking every outcome and the outside tree; returns the codes. */
async function runCalls(
  w: Pick<World, 'T' | 'R1' | 'R2' | 'forbidden'>,
  specs: CallSpec[],
  call: (tool: string, args: Record<string, unknown>) => Promise<Outcome>,
): Promise<{ codes: string[]; counts: Record<string, number> }> {
  const before = snapshotOutside(w);
  // After each mutating call: names, kinds, modes, sizes, inodes and mtimes; after the last call, the bytes too.
  const beforeQuick = snapshotOutside(w, false);
  const codes: string[] = [];
  const counts: Record<string, number> = {};
  for (const [i, spec] of specs.entries()) {
    const r = renderCall(spec, w);
    const t0 = performance.now();
    const o = await call(spec.tool, r.args);
    TIME_BY_TOOL[spec.tool] = (TIME_BY_TOOL[spec.tool] ?? 0) + performance.now() - t0;
    const code = codeOf(o);
    codes.push(code);
    counts[`${spec.tool} ${code}`] = (counts[`${spec.tool} ${code}`] ?? 0) + 1;
    if (spec.tool === 'read_files' && o.ok) {
      for (const e of (o.structured as { results: Array<{ ok: boolean; error?: { code: string } }> }).results) {
        const k = `read_files entry ${e.ok ? 'ok' : e.error!.code}`;
        counts[k] = (counts[k] ?? 0) + 1;
      }
    }
    const problems = judgeOutcome(spec, r, o, w);
    if (i === specs.length - 1)
      problems.push(...diffSnapshots(before, snapshotOutside(w)).map((c) => `outside changed: ${c}`));
    else if (MUTATING.has(spec.tool))
      problems.push(...diffSnapshots(beforeQuick, snapshotOutside(w, false)).map((c) => `outside changed: ${c}`));
    if (problems.length > 0) {
      throw new Error(
        `call ${i} ${spec.tool} ${JSON.stringify(r.args).slice(0, 2000)}\n -> ${JSON.stringify(o).slice(0, 1500)}\n` +
          `verdicts ${JSON.stringify([...r.verdicts, ...(r.entryVerdicts ?? [])]).slice(0, 1000)}\n${problems.join('\n')}`,
      );
    }
  }
  return { codes, counts };
}

/**
 * One call per git tool at an outside repository, added to every world's generated calls: the git tools weigh little,
 * and the outcome check below asserts each tool was refused at least once (with generated calls alone, some runs of
 * 1,000 refused no git_status: the assertion then failed by chance, not because of a bug).
 */
const OUTSIDE_REPO: PathDesc = { base: 'O/orepo', form: 'abs', tail: [], seps: ['/'], trailing: '', repeat: 1 };
const GIT_REFUSALS: CallSpec[] = [
  { tool: 'git_status', args: { path: slot(true)(OUTSIDE_REPO) } },
  { tool: 'git_diff', args: { path: slot(true)(OUTSIDE_REPO) } },
];

/**
 * One apply_patch per world that creates a new file in the first root, then a move_path of that file, added after the
 * generated calls for the same reason: generated patches and moves succeed rarely (most name paths that do not fit
 * them: 6–14 successes in 1,000 calls), and a run of 1,000 generated calls had no successful apply_patch, so the check
 * that every mutating tool succeeded at least once failed by chance. Both calls go through the same rendering, oracle
 * and checks as generated ones.
 */
const CREATED_IN_ROOT: PathDesc = {
  base: 'R1',
  form: 'abs',
  tail: ['fuzz-created-by-patch.txt'],
  seps: ['/'],
  trailing: '',
  repeat: 1,
};
const MOVED_IN_ROOT: PathDesc = { ...CREATED_IN_ROOT, tail: ['fuzz-moved-by-move-path.txt'] };
const PATCH_SUCCESS: CallSpec = {
  tool: 'apply_patch',
  args: {
    patch: { $patch: { mode: 'headers', files: [{ kind: 'create', target: CREATED_IN_ROOT }] } } satisfies PatchSlot,
  },
};
const SUCCESSES: CallSpec[] = [
  PATCH_SUCCESS,
  { tool: 'move_path', args: { source: slot(false)(CREATED_IN_ROOT), destination: slot(false)(MOVED_IN_ROOT) } },
];

/** `count` generated calls, reproducible from `seed`. */
function callsFor(seed: number, count: number): CallSpec[] {
  return fc.sample(fc.array(callArb, { minLength: count, maxLength: count }), { seed, numRuns: 1 })[0];
}

const inProcess = (w: World) => (tool: string, args: Record<string, unknown>) =>
  callTool(w.state, tool, args, new AbortController().signal);

// ---------------------------------------------------------------------------------------------------------------

describe('containment fuzzing', () => {
  const totals: Record<string, number> = {};
  let calls = 0;

  it(`${WORLDS * CALLS_PER_WORLD} generated calls over ${WORLDS} random worlds never reach outside the roots`, async () => {
    const started = performance.now();
    // The calls of a world come from a seed (not a shrinkable array), so a counterexample prints as a world and a seed;
    // the error names the one call that misbehaved, with its rendered arguments.
    await fc.assert(
      fc.asyncProperty(worldArb, fc.integer(), async (spec, callSeed) => {
        const specs = callsFor(callSeed, CALLS_PER_WORLD);
        const w = startWorld(spec, randomBytes(6).toString('hex'));
        const { counts } = await runCalls(w, [...specs, ...GIT_REFUSALS, ...SUCCESSES], inProcess(w));
        for (const [k, v] of Object.entries(counts)) totals[k] = (totals[k] ?? 0) + v;
        calls += specs.length;
      }),
      { numRuns: WORLDS, endOnFailure: true },
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `containment-fuzz: ${calls} calls in ${seconds.toFixed(1)} s; ms by tool ${JSON.stringify(
        Object.fromEntries(Object.entries(TIME_BY_TOOL).map(([k, v]) => [k, Math.round(v)])),
      )}; outcomes ${JSON.stringify(totals)}`,
    );
    expect(calls).toBe(WORLDS * CALLS_PER_WORLD);
    // Every path-taking tool was exercised, and both outcomes happened for the ones that can succeed.
    for (const tool of [
      'read_file',
      'read_files',
      'stat',
      'list_directory',
      'search_files',
      'write_file',
      'edit_file',
      'apply_patch',
      'move_path',
      'delete_path',
      'create_directory',
      'git_status',
      'git_diff',
    ]) {
      expect(
        Object.keys(totals).some((k) => k.startsWith(`${tool} `)),
        tool,
      ).toBe(true);
      const refused = tool === 'read_files' ? 'read_files entry NOT_ALLOWED' : `${tool} NOT_ALLOWED`;
      expect(totals[refused] ?? 0, refused).toBeGreaterThan(0);
    }
    for (const tool of [
      'read_file',
      'read_files entry',
      'stat',
      'list_directory',
      'search_files',
      'write_file',
      'edit_file',
      'apply_patch',
      'move_path',
      'delete_path',
      'create_directory',
    ]) {
      expect(totals[`${tool} ok`] ?? 0, `${tool} ok`).toBeGreaterThan(0);
    }
  }, 240_000);

  it(`${SERVER_SAMPLE} calls through the real server give the same outcomes as in-process`, async () => {
    const [spec] = fc.sample(worldArb, { seed: 7, numRuns: 1 });
    const specs = callsFor(11, SERVER_SAMPLE);
    const seed = randomBytes(6).toString('hex');
    const local = startWorld(spec, seed);
    const remote = startWorld(spec, seed);
    const client = await connect('modern', {
      args: ['--state-dir', remote.stateDir, '--auto-occ=off', path.join(remote.T, 'R1link'), remote.R2],
    });
    try {
      const viaServer = async (tool: string, args: Record<string, unknown>): Promise<Outcome> => {
        const r = await client.call(tool, args);
        if (r.isError) return { ok: false, envelope: JSON.parse(r.content[0].text!) };
        return { ok: true, structured: r.structuredContent!, text: r.content.map((c) => c.text ?? '') };
      };
      const a = await runCalls(local, specs, inProcess(local));
      const b = await runCalls(remote, specs, viaServer);
      expect(b.codes).toEqual(a.codes);
      expect(client.stderr()).not.toMatch(/INTERNAL|incident/);
    } finally {
      await client.close();
    }
  }, 120_000);
});

/**
 * The inputs the fuzzer found, kept as fixed cases (each failed before its fix). In-process through callTool, on one
 * world with no extras.
 */
describe('regressions found by the fuzzer', () => {
  let w: World;
  const run = (tool: string, args: Record<string, unknown>) =>
    callTool(w.state, tool, args, new AbortController().signal);
  const codeAndReason = (o: Outcome) =>
    o.ok
      ? 'ok'
      : `${o.envelope.error.code} ${String((o.envelope.error.details.reason as string | undefined) ?? '')}`.trim();

  beforeAll(() => {
    w = startWorld({ extras: [], outerRepo: false }, randomBytes(6).toString('hex'));
  });

  // A create under a missing parent with a name over NAME_MAX reached no syscall before the commit: the parent was
  // created, the write failed, and the "rollback" reported ROLLBACK_PARTIAL for a file never written.
  it('a name longer than NAME_MAX is VALIDATION name_too_long before anything is created', async () => {
    const long = '\u00e9'.repeat(200);
    const before = snapshotOutside(w);
    for (const [tool, args] of [
      ['apply_patch', { patch: '@@ -0,0 +1 @@\n+created\n', path: `${w.T}/R1link/R1-secret/${long}` }],
      ['apply_patch', { patch: `--- /dev/null\n+++ b/missing-dir/${long}\n@@ -0,0 +1 @@\n+created\n` }],
      ['write_file', { path: `missing-dir/${long}`, content: 'x', create_dirs: true }],
      ['create_directory', { path: `missing-dir/${long}/sub` }],
      ['read_file', { path: `${w.T}/O/${long}` }],
    ] as const) {
      expect(codeAndReason(await run(tool, args)), tool).toBe('VALIDATION name_too_long');
    }
    expect(lstatSync(path.join(w.R1, 'R1-secret'), { throwIfNoEntry: false })).toBeUndefined();
    expect(lstatSync(path.join(w.R1, 'missing-dir'), { throwIfNoEntry: false })).toBeUndefined();
    expect(diffSnapshots(before, snapshotOutside(w))).toEqual([]);
  });

  // The temporary file's name (`.NAME.fs-tools-XXXXXXXXXXXX.tmp`) was 27 bytes longer than NAME: a file whose name
  // is 229-255 bytes long could not be written, edited or patched at all (VALIDATION name_too_long on the temp name).
  it('a file with a 250-byte name can be created, edited and patched', async () => {
    const name = 'n'.repeat(250);
    expect(codeAndReason(await run('write_file', { path: name, content: 'alpha\n' }))).toBe('ok');
    expect(
      codeAndReason(await run('edit_file', { path: name, edits: [{ old_text: 'alpha', new_text: 'beta' }] })),
    ).toBe('ok');
    expect(
      codeAndReason(await run('apply_patch', { patch: `--- a/${name}\n+++ b/${name}\n@@ -1 +1 @@\n-beta\n+gamma\n` })),
    ).toBe('ok');
    expect(readFileSync(path.join(w.R1, name), 'utf8')).toBe('gamma\n');
    expect(readdirSync(w.R1).filter((n) => n.includes('.fs-tools-'))).toEqual([]);
  });

  // On POSIX a backslash is a name character, but the resolver split on it: `a\b` resolved to `a/b`, so delete_path
  // of the file named `a\b` deleted the file `a/b`, and reads and edits went to the wrong file too.
  it('a backslash is part of a name on POSIX: `a\\b` is never `a/b`', async () => {
    const read = await run('read_file', { path: 'a\\b' });
    expect(read.ok && read.structured.content).toBe('backslash alpha\n');
    expect(
      codeAndReason(await run('edit_file', { path: 'a\\b', edits: [{ old_text: 'alpha', new_text: 'edited' }] })),
    ).toBe('ok');
    expect(readFileSync(path.join(w.R1, 'a', 'b'), 'utf8')).toBe('slash alpha\n');
    expect(codeAndReason(await run('delete_path', { path: 'a\\b' }))).toBe('ok');
    expect(lstatSync(path.join(w.R1, 'a\\b'), { throwIfNoEntry: false })).toBeUndefined();
    expect(readFileSync(path.join(w.R1, 'a', 'b'), 'utf8')).toBe('slash alpha\n');
    // `..\O` is a name, not a way out: it stays inside (here: missing, so NOT_FOUND) instead of resolving to T/O.
    expect(codeAndReason(await run('read_file', { path: '..\\O\\secret.txt' }))).toBe('NOT_FOUND');
  });

  // SPEC §3.3 holds across the whole call: a refused or missing first path decided the code while a later path lay
  // outside the roots (move_path FILE_POLICY_DENIED for a source under .git with an outside destination).
  it('containment of every path of a call comes before the other checks of any of them', async () => {
    const outside = `${w.T}/O/loopA/x`;
    expect(codeAndReason(await run('move_path', { source: `${w.R2}/repo/.git/config`, destination: outside }))).toBe(
      'NOT_ALLOWED outside_roots',
    );
    expect(codeAndReason(await run('move_path', { source: 'missing.txt', destination: `${w.T}/O/new.txt` }))).toBe(
      'NOT_ALLOWED outside_roots',
    );
    expect(codeAndReason(await run('move_path', { source: '.env', destination: `${w.T}/R1-secret/x` }))).toBe(
      'NOT_ALLOWED outside_roots',
    );
    const modify = (p: string) => `--- a/${p}\n+++ b/${p}\n@@ -1 +1 @@\n-alpha\n+beta\n`;
    for (const first of ['missing.txt', '../R2/repo/.git/config', '.env.local']) {
      const o = await run('apply_patch', { patch: modify(first) + modify('lnk-out/plain.txt') });
      expect(codeAndReason(o), first).toMatch(/^NOT_ALLOWED/);
    }
    expect(readFileSync(path.join(w.T, 'O', 'plain.txt'), 'utf8')).toBe('alpha\n');
  });

  // apply_patch joined header paths to the base with path.join, which folds `link/..` lexically: a patch creating
  // `lnk-out/../created.txt` created R1/created.txt, although by the kernel's reading (and every other tool's) the
  // path is T/created.txt, outside the roots.
  it('apply_patch reads `link/..` in header paths as the kernel does', async () => {
    const create = (p: string) => `--- /dev/null\n+++ b/${p}\n@@ -0,0 +1 @@\n+created\n`;
    expect(codeAndReason(await run('apply_patch', { patch: create('lnk-out/../created.txt') }))).toBe(
      'NOT_ALLOWED symlink_target_outside',
    );
    expect(codeAndReason(await run('apply_patch', { patch: create('dirA/lnk-up/../created.txt') }))).toBe(
      'NOT_ALLOWED symlink_target_outside',
    );
    expect(lstatSync(path.join(w.R1, 'created.txt'), { throwIfNoEntry: false })).toBeUndefined();
    expect(lstatSync(path.join(w.T, 'created.txt'), { throwIfNoEntry: false })).toBeUndefined();
    // Inside stays inside: lnk-in is R1/dirA, so lnk-in/../b.txt is R1/b.txt.
    expect(
      codeAndReason(
        await run('apply_patch', {
          patch: '--- a/lnk-in/../b.txt\n+++ b/lnk-in/../b.txt\n@@ -1 +1 @@\n-alpha\n+beta\n',
        }),
      ),
    ).toBe('ok');
    expect(readFileSync(path.join(w.R1, 'b.txt'), 'utf8')).toBe('beta\n');
  });

  // Resolution cost grew with the square of the path's length: a 100 KB path held the event loop for 12 s (a 1 MB
  // one, within one JSON-RPC line, for many minutes). Paths of PATH_MAX bytes or more are refused up front.
  it('a path of PATH_MAX bytes or more is VALIDATION path_too_long, at once', async () => {
    for (const p of ['new1/'.repeat(20_000), 'dirA/../'.repeat(600), `${w.T}/O/${'x/'.repeat(3000)}`]) {
      const started = performance.now();
      expect(codeAndReason(await run('read_file', { path: p }))).toBe('VALIDATION path_too_long');
      expect(codeAndReason(await run('delete_path', { path: p }))).toBe('VALIDATION path_too_long');
      expect(performance.now() - started).toBeLessThan(500);
    }
    // Just under the limit still resolves.
    const under = `dirA/${'./'.repeat(2000)}a.txt`;
    expect(Buffer.byteLength(`${w.R1}/${under}`)).toBeGreaterThan(4000);
    const read = await run('read_file', { path: under });
    expect(read.ok && read.structured.content).toBe('inside a alpha\n');
  });
});

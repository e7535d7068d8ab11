/**
 * The hostile-repository matrix (issue 12; SPEC §7 "Repository content is untrusted input"), against the real server
 * (dist/cli.js, both eras, --audit-log) and the real `git`. Repositories are built with real git in a temporary
 * directory; one server session per era serves every case.
 *
 * Config cases — each applied to the superproject, its submodule and the submodule's nested submodule at once, and
 * proven armed first (plain git in those repositories runs the named program and creates a marker file):
 * filter clean/smudge (+required), filter process (+required), diff driver command, textconv, diff.external,
 * core.fsmonitor, core.hooksPath and .git/hooks with every hook name, include.path (inside and outside the roots) and
 * includeIf, .git/info/attributes naming configured drivers, a 1.3 MB config that pushes a driver past the old 1 MiB
 * listing cap, a 5 MB config (over every cap: refused, unsupported_repository), core.worktree outside the roots
 * (NOT_ALLOWED), diff.submodule=diff with submodule drivers.
 * Location cases: a .git file, a symlinked .git, symlinked objects / objects/pack / index / HEAD / packed-refs / config /
 * a loose ref / the refs and info directories pointing outside the roots or to a secret; objects/info/alternates
 * (directly, and through a chain that starts inside the roots) and commondir outside; a packed-refs
 * link to a non-secret file (its text must not leak through git's error); a HEAD naming `refs/heads/../..`; a
 * submodule whose .git file leads outside; and the legitimate neighbours that must keep working (a symlinked .git
 * inside the roots, a linked worktree).
 *
 * For every case (config cases: at one level each in `npm test`, super, sub and nested in turn; at every level in
 * `npm run test:hostile`, FS_TOOLS_HOSTILE_LEVELS=all, run by .ci/run), with one era (the probes alternate between
 * the two sessions: what git runs or reads is the server's, whichever client asks): git_status, git_diff (work tree, staged, paths) and write_file (dry run)
 * with expected_status_hash end with the expected code (or succeed), no marker file appears, and no outside or secret
 * content (nor the outside directory's path) appears in any result, envelope, server stderr or audit line.
 * Also: with TMPDIR inside the roots, the server's private git dir is made outside them (never reachable by an agent).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBatch, runEach } from '../helpers/git-batch.js';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, type CallResult, type Era, type TestClient } from '../helpers/server.js';
import { makeTree, writeTree, type TreeSpec } from '../helpers/tree.js';

const sha = (b: string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

const scratch = makeTree({ home: {}, state: {}, markers: {}, src: {} }, 'fs-tools-hostile-');
const HOME = path.join(scratch.dir, 'home');
const MARKERS = path.join(scratch.dir, 'markers');
const ROOT = path.join(scratch.dir, 'root-zone');
const OUTSIDE = path.join(scratch.dir, 'outside-zone');
const AUDIT = path.join(scratch.dir, 'audit.jsonl');
mkdirSync(ROOT);
mkdirSync(OUTSIDE);
afterAll(() => scratch.cleanup());

/** Strings that must never reach a result, an envelope, stderr or the audit log. */
const FORBIDDEN = [
  'OUTSIDE_CONTENT_MARKER',
  'OUTSIDE_SECRET_MARKER',
  'INSIDE_SECRET_MARKER',
  'GARBAGE_MARKER',
  OUTSIDE,
];

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return { ...env, HOME, XDG_CONFIG_HOME: HOME, GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' };
}
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: gitEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
/** Runs test-side git commands (each `[cwd, ...args]`) one after another in one child process (git-batch.ts). */
function gits(...commands: Array<[string, ...string[]]>): void {
  runBatch(
    scratch.dir,
    gitEnv(),
    commands.map(([cwd, ...args]) => ['git', '-C', cwd, ...args]),
  );
}
const touch = (name: string) => `touch '${path.join(MARKERS, name)}'`;
const markers = () => readdirSync(MARKERS).sort();
const clearMarkers = () => {
  for (const m of readdirSync(MARKERS)) rmSync(path.join(MARKERS, m));
};

const FILES: TreeSpec = {
  'a.txt': 'a\n',
  'b.f': 'b\n',
  'c.d': 'c\n',
  'same.f': 'same\n',
  '.gitattributes': '*.f filter=x\n*.d diff=x\n',
};

/** The git commands that make `dir` a repository holding `files` (written now), committed on branch main. */
function makeRepo(dir: string, files: TreeSpec = FILES): Array<[string, ...string[]]> {
  mkdirSync(dir, { recursive: true });
  writeTree(dir, files);
  return [
    [dir, 'init', '-q', '-b', 'main'],
    [dir, 'add', '-A'],
    [dir, 'commit', '-q', '-m', 'initial'],
  ];
}

/** Staged, modified, stat-dirty (same content, new mtime) and untracked files in each of `dirs`. */
function dirty(...dirs: string[]): void {
  for (const dir of dirs) writeFileSync(path.join(dir, 'a.txt'), 'a\nHOSTILE a\n');
  gits(...dirs.map((dir): [string, ...string[]] => [dir, 'add', 'a.txt']));
  for (const dir of dirs) {
    writeFileSync(path.join(dir, 'b.f'), 'b\nHOSTILE b\n');
    writeFileSync(path.join(dir, 'c.d'), 'c\nHOSTILE c\n');
    const later = new Date(Date.now() + 10_000);
    utimesSync(path.join(dir, 'same.f'), later, later);
    writeFileSync(path.join(dir, 'u.txt'), 'untracked\n');
  }
}

// --- the superproject template: super ⊃ sub ⊃ nested ---------------------------------------------------------
let TEMPLATE = '';
function buildTemplate(): void {
  const src = path.join(scratch.dir, 'src');
  const nested = path.join(src, 'nested');
  const sub = path.join(src, 'sub');
  TEMPLATE = path.join(src, 'template');
  gits(
    [src, 'config', '--global', 'protocol.file.allow', 'always'],
    [src, 'config', '--global', 'user.name', 'Test'],
    [src, 'config', '--global', 'user.email', 'test@example.invalid'],
    ...makeRepo(nested),
    ...makeRepo(sub),
    [sub, 'submodule', 'add', '-q', nested, 'nested'],
    [sub, 'commit', '-q', '-m', 'nested'],
    ...makeRepo(TEMPLATE),
    [TEMPLATE, 'submodule', 'add', '-q', sub, 'sub'],
    [TEMPLATE, 'commit', '-q', '-m', 'sub'],
    [TEMPLATE, 'submodule', 'update', '-q', '--init', '--recursive'],
  );
}

interface Level {
  name: 'super' | 'sub' | 'nested';
  dir: string;
  gitDir: string;
}
function levelsOf(top: string): Level[] {
  return [
    { name: 'super', dir: top, gitDir: path.join(top, '.git') },
    { name: 'sub', dir: path.join(top, 'sub'), gitDir: path.join(top, '.git', 'modules', 'sub') },
    {
      name: 'nested',
      dir: path.join(top, 'sub', 'nested'),
      gitDir: path.join(top, '.git', 'modules', 'sub', 'modules', 'nested'),
    },
  ];
}

/** What a call must end with: success, or a code (and reason). */
type Outcome = 'ok' | { code: string; reason?: string };
const OK: Outcome = 'ok';
const NOT_ALLOWED: Outcome = { code: 'NOT_ALLOWED', reason: 'git_location_outside_roots' };
const SECRET: Outcome = { code: 'SECRET_DENIED' };
const CORRUPT: Outcome = { code: 'IO_ERROR', reason: 'corrupt_repository' };
const UNSUPPORTED: Outcome = { code: 'VALIDATION', reason: 'unsupported_repository' };

const HOOKS = [
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-receive',
  'update',
  'proc-receive',
  'post-receive',
  'post-update',
  'reference-transaction',
  'push-to-checkout',
  'pre-auto-gc',
  'post-rewrite',
  'sendemail-validate',
  'fsmonitor-watchman',
  'p4-changelist',
  'p4-prepare-changelist',
  'p4-post-changelist',
  'p4-pre-submit',
  'post-index-change',
];

function writeHooks(dir: string, tag: string): void {
  mkdirSync(dir, { recursive: true });
  for (const h of HOOKS) {
    writeFileSync(path.join(dir, h), `#!/bin/sh\n${touch(`${tag}-hook-${h}`)}\nexit 0\n`);
    chmodSync(path.join(dir, h), 0o755);
  }
}

/** A config value as written in a config file (quoted: `;` and `#` would start a comment). */
const cfgValue = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** Appends `key = value` to the config of level `l` (as `git config` would, without spawning git). */
function setConfig(l: Level, key: string, value: string): void {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  const section = key.slice(0, first);
  const header = first === last ? `[${section}]` : `[${section} "${key.slice(first + 1, last)}"]`;
  appendFileSync(path.join(l.gitDir, 'config'), `${header}\n\t${key.slice(last + 1)} = ${cfgValue(value)}\n`);
}

/** A config that runs programs through every knob of `tag`, for include files. */
const hostileConfigText = (tag: string) =>
  `[diff]\n\texternal = ${cfgValue(`sh -c "${touch(`${tag}-external`)}"`)}\n` +
  `[core]\n\tfsmonitor = ${cfgValue(`${touch(`${tag}-fsmonitor`)}; false`)}\n` +
  `[filter "x"]\n\tclean = ${cfgValue(`sh -c '${touch(`${tag}-clean`)}; cat'`)}\n\trequired = true\n` +
  `[diff "x"]\n\tcommand = ${cfgValue(touch(`${tag}-diffcmd`))}\n`;

/** Config cases: `apply` arms one level; `arm` is the plain git command that shows it armed (null: a location case). */
interface ConfigCase {
  name: string;
  apply: (l: Level, tag: string) => void;
  outcome: Outcome;
  arm: 'status' | 'diff' | null;
}
const CONFIG_CASES: ConfigCase[] = [
  {
    name: 'filter-clean-smudge',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      setConfig(l, 'filter.x.clean', `sh -c '${touch(`${t}-clean`)}; cat'`);
      setConfig(l, 'filter.x.smudge', `sh -c '${touch(`${t}-smudge`)}; cat'`);
      setConfig(l, 'filter.x.required', 'true');
    },
  },
  {
    name: 'filter-process',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      setConfig(l, 'filter.x.process', `sh -c '${touch(`${t}-process`)}'`);
      setConfig(l, 'filter.x.required', 'true');
    },
  },
  {
    name: 'diff-driver-command',
    outcome: OK,
    arm: 'diff',
    apply: (l, t) => setConfig(l, 'diff.x.command', touch(`${t}-diffcmd`)),
  },
  {
    name: 'textconv',
    outcome: OK,
    arm: 'diff',
    apply: (l, t) => setConfig(l, 'diff.x.textconv', `sh -c '${touch(`${t}-textconv`)}; cat "$0"'`),
  },
  {
    name: 'diff-external',
    outcome: OK,
    arm: 'diff',
    apply: (l, t) => setConfig(l, 'diff.external', `sh -c "${touch(`${t}-external`)}"`),
  },
  {
    name: 'fsmonitor',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => setConfig(l, 'core.fsmonitor', `${touch(`${t}-fsmonitor`)}; false`),
  },
  {
    name: 'hooks',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      const hooksDir = path.join(ROOT, 'hooks', t);
      writeHooks(hooksDir, `${t}-path`);
      writeHooks(path.join(l.gitDir, 'hooks'), `${t}-default`);
      setConfig(l, 'core.hooksPath', hooksDir);
    },
  },
  {
    name: 'include-inside',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      const file = path.join(ROOT, 'includes', `${t}.cfg`);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, hostileConfigText(`${t}-inc`));
      setConfig(l, 'include.path', file);
      setConfig(l, 'includeIf.gitdir:/.path', file);
    },
  },
  {
    name: 'include-outside',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      const file = path.join(OUTSIDE, 'includes', `${t}.cfg`);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(
        file,
        `${hostileConfigText(`${t}-inc`)}# OUTSIDE_SECRET_MARKER\n[user]\n\tname = OUTSIDE_SECRET_MARKER\n`,
      );
      setConfig(l, 'include.path', file);
      setConfig(l, 'includeIf.gitdir:/.path', file);
      setConfig(l, 'includeIf.onbranch:main.path', file);
    },
  },
  {
    name: 'info-attributes',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      mkdirSync(path.join(l.gitDir, 'info'), { recursive: true });
      writeFileSync(path.join(l.gitDir, 'info', 'attributes'), '*.txt filter=y diff=y\n');
      setConfig(l, 'filter.y.clean', `sh -c '${touch(`${t}-clean`)}; cat'`);
      setConfig(l, 'filter.y.required', 'true');
      setConfig(l, 'diff.y.command', touch(`${t}-diffcmd`));
    },
  },
  {
    name: 'config-1.3MB',
    outcome: OK,
    arm: 'status',
    apply: (l, t) => {
      const cfg = path.join(l.gitDir, 'config');
      writeFileSync(
        cfg,
        `${readFileSync(cfg, 'utf8')}[filter "a"]\n${'\tclean = x\n'.repeat(130_000)}` +
          `[filter "x"]\n\tclean = ${cfgValue(`sh -c '${touch(`${t}-clean`)}; cat'`)}\n\trequired = true\n`,
      );
    },
  },
  {
    name: 'config-4.4MB',
    outcome: UNSUPPORTED,
    arm: 'status',
    apply: (l, t) => {
      const cfg = path.join(l.gitDir, 'config');
      writeFileSync(
        cfg,
        `${readFileSync(cfg, 'utf8')}[filter "a"]\n${'\tclean = x\n'.repeat(400_000)}` +
          `[filter "x"]\n\tclean = ${cfgValue(`sh -c '${touch(`${t}-clean`)}; cat'`)}\n\trequired = true\n`,
      );
    },
  },
  {
    name: 'core-worktree-outside',
    outcome: NOT_ALLOWED,
    arm: null,
    apply: (l, t) => {
      const elsewhere = path.join(OUTSIDE, 'worktree', t);
      writeTree(elsewhere, { 'a.txt': 'OUTSIDE_CONTENT_MARKER\n' });
      setConfig(l, 'core.worktree', elsewhere);
    },
  },
  {
    name: 'diff-submodule-diff',
    outcome: OK,
    arm: 'diff',
    apply: (l, t) => {
      setConfig(l, 'diff.submodule', 'diff');
      setConfig(l, 'status.submoduleSummary', 'true');
      setConfig(l, 'submodule.recurse', 'true');
      setConfig(l, 'diff.x.command', touch(`${t}-diffcmd`));
      setConfig(l, 'filter.x.clean', `sh -c '${touch(`${t}-clean`)}; cat'`);
    },
  },
];

/** A case probed at some levels: the directory to call on and what every call must end with. */
interface Probe {
  label: string;
  dir: string;
  outcome: Outcome;
}
const PROBES: Probe[] = [];

/** Location cases: a plain repository (FILES, dirty) whose metadata `mutate` makes hostile. */
interface LocationCase {
  name: string;
  mutate: (repo: string) => string | void;
  outcome: Outcome;
}

let OUTSIDE_REPO = '';
function buildOutside(): void {
  OUTSIDE_REPO = path.join(OUTSIDE, 'repo');
  gits(...makeRepo(OUTSIDE_REPO, { 'o.txt': 'OUTSIDE_CONTENT_MARKER\n', 'a.txt': 'OUTSIDE_CONTENT_MARKER a\n' }), [
    OUTSIDE_REPO,
    'pack-refs',
    '--all',
  ]);
  writeFileSync(path.join(OUTSIDE_REPO, 'o.txt'), 'OUTSIDE_CONTENT_MARKER changed\n');
  writeFileSync(path.join(OUTSIDE_REPO, 'a.txt'), 'OUTSIDE_CONTENT_MARKER staged\n');
  gits([OUTSIDE_REPO, 'add', 'a.txt']);
  writeFileSync(path.join(OUTSIDE, 'secret.txt'), 'OUTSIDE_SECRET_MARKER\nref: refs/heads/main\n');
  writeFileSync(path.join(ROOT, '.env'), 'INSIDE_SECRET_MARKER=1\n');
}

const replaceWithLink = (p: string, target: string) => {
  rmSync(p, { recursive: true, force: true });
  symlinkSync(target, p);
};

const LOCATION_CASES: LocationCase[] = [
  {
    name: 'dotgit-file-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      rmSync(path.join(r, '.git'), { recursive: true });
      writeFileSync(path.join(r, '.git'), `gitdir: ${path.join(OUTSIDE_REPO, '.git')}\n`);
    },
  },
  {
    name: 'dotgit-file-outside-relative',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      rmSync(path.join(r, '.git'), { recursive: true });
      writeFileSync(path.join(r, '.git'), `gitdir: ${path.relative(r, path.join(OUTSIDE_REPO, '.git'))}\n`);
    },
  },
  {
    name: 'dotgit-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => replaceWithLink(path.join(r, '.git'), path.join(OUTSIDE_REPO, '.git')),
  },
  {
    name: 'dotgit-symlink-inside',
    outcome: OK,
    mutate: (r) => {
      const store = path.join(ROOT, 'gitdir-store', path.basename(r));
      mkdirSync(path.dirname(store), { recursive: true });
      renameSync(path.join(r, '.git'), store);
      symlinkSync(store, path.join(r, '.git'));
    },
  },
  {
    name: 'objects-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => replaceWithLink(path.join(r, '.git', 'objects'), path.join(OUTSIDE_REPO, '.git', 'objects')),
  },
  {
    name: 'objects-pack-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) =>
      replaceWithLink(path.join(r, '.git', 'objects', 'pack'), path.join(OUTSIDE_REPO, '.git', 'objects', 'pack')),
  },
  {
    name: 'index-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => replaceWithLink(path.join(r, '.git', 'index'), path.join(OUTSIDE_REPO, '.git', 'index')),
  },
  {
    name: 'index-symlink-secret',
    outcome: SECRET,
    mutate: (r) => replaceWithLink(path.join(r, '.git', 'index'), path.join(ROOT, '.env')),
  },
  {
    name: 'HEAD-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => replaceWithLink(path.join(r, '.git', 'HEAD'), path.join(OUTSIDE, 'secret.txt')),
  },
  {
    name: 'HEAD-symlink-secret',
    outcome: SECRET,
    mutate: (r) => replaceWithLink(path.join(r, '.git', 'HEAD'), path.join(ROOT, '.env')),
  },
  {
    name: 'packed-refs-symlink-secret',
    outcome: SECRET,
    mutate: (r) => {
      git(r, 'pack-refs', '--all');
      writeFileSync(path.join(r, '.env'), 'INSIDE_SECRET_MARKER=2\n');
      replaceWithLink(path.join(r, '.git', 'packed-refs'), '../.env');
    },
  },
  {
    name: 'packed-refs-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      git(r, 'pack-refs', '--all');
      replaceWithLink(path.join(r, '.git', 'packed-refs'), path.join(OUTSIDE, 'secret.txt'));
    },
  },
  {
    name: 'packed-refs-garbage',
    outcome: CORRUPT,
    mutate: (r) => {
      git(r, 'pack-refs', '--all');
      writeFileSync(path.join(r, 'notes.md'), 'GARBAGE_MARKER first line\n');
      replaceWithLink(path.join(r, '.git', 'packed-refs'), '../notes.md');
    },
  },
  {
    name: 'config-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      const cfg = path.join(OUTSIDE, `config-${path.basename(r)}`);
      writeFileSync(cfg, `${hostileConfigText('config-outside')}# OUTSIDE_SECRET_MARKER\n`);
      replaceWithLink(path.join(r, '.git', 'config'), cfg);
    },
  },
  {
    name: 'config-symlink-secret',
    outcome: SECRET,
    mutate: (r) => replaceWithLink(path.join(r, '.git', 'config'), path.join(ROOT, '.env')),
  },
  {
    name: 'ref-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      const ref = path.join(OUTSIDE, `ref-${path.basename(r)}`);
      writeFileSync(ref, `${git(r, 'rev-parse', 'HEAD').trim()}\n`);
      replaceWithLink(path.join(r, '.git', 'refs', 'heads', 'main'), ref);
    },
  },
  {
    name: 'alternates-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      mkdirSync(path.join(r, '.git', 'objects', 'info'), { recursive: true });
      writeFileSync(
        path.join(r, '.git', 'objects', 'info', 'alternates'),
        `${path.join(OUTSIDE_REPO, '.git', 'objects')}\n`,
      );
    },
  },
  {
    name: 'commondir-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      const wt = path.join(ROOT, `wt-${path.basename(r)}`);
      git(r, 'worktree', 'add', '-q', '-b', 'wtbranch', wt);
      const admin = path.join(r, '.git', 'worktrees', path.basename(wt));
      writeFileSync(path.join(admin, 'commondir'), `${path.join(OUTSIDE_REPO, '.git')}\n`);
      return wt;
    },
  },
  {
    name: 'linked-worktree-inside',
    outcome: OK,
    mutate: (r) => {
      const wt = path.join(ROOT, `wt-${path.basename(r)}`);
      git(r, 'worktree', 'add', '-q', '-b', 'wtbranch', wt);
      writeFileSync(path.join(wt, 'a.txt'), 'a\nworktree change\n');
      return wt;
    },
  },
  {
    name: 'refs-dir-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      const refs = path.join(OUTSIDE, `refs-${path.basename(r)}`);
      writeTree(refs, { heads: { main: `${git(r, 'rev-parse', 'HEAD').trim()}\n` }, tags: {} });
      replaceWithLink(path.join(r, '.git', 'refs'), refs);
    },
  },
  {
    name: 'refs-dir-dangling-link-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      // Whether the outside target exists must not change the answer (no existence probe through the link).
      git(r, 'pack-refs', '--all');
      replaceWithLink(path.join(r, '.git', 'refs'), path.join(OUTSIDE, 'no-such-dir', 'refs'));
    },
  },
  {
    name: 'info-dir-symlink-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      const info = path.join(OUTSIDE, `info-${path.basename(r)}`);
      writeTree(info, { exclude: '# OUTSIDE_SECRET_MARKER\n*.txt\n' });
      replaceWithLink(path.join(r, '.git', 'info'), info);
    },
  },
  {
    name: 'alternates-chain-outside',
    outcome: NOT_ALLOWED,
    mutate: (r) => {
      // An alternate inside the roots whose own alternates lead outside: git follows the chain, so must the check.
      const middle = path.join(ROOT, `objects-middle-${path.basename(r)}`);
      mkdirSync(path.join(middle, 'info'), { recursive: true });
      writeFileSync(
        path.join(middle, 'info', 'alternates'),
        `${path.relative(middle, path.join(OUTSIDE_REPO, '.git', 'objects'))}\n`,
      );
      writeFileSync(path.join(r, '.git', 'objects', 'info', 'alternates'), `${middle}\n`);
    },
  },
  {
    name: 'HEAD-ref-traversal',
    outcome: CORRUPT,
    mutate: (r) => writeFileSync(path.join(r, '.git', 'HEAD'), 'ref: refs/heads/../../../../outside\n'),
  },
];

/**
 * `npm test` probes each config case at one level, super, sub and nested in turn down CONFIG_CASES (a fixed subset:
 * every case, and every level for a third of them); FS_TOOLS_HOSTILE_LEVELS=all (`npm run test:hostile`, run by .ci/run)
 * probes every case at every level, the whole matrix.
 */
const EVERY_LEVEL = process.env.FS_TOOLS_HOSTILE_LEVELS === 'all';
/** The levels of config case `c`'s copy that are armed and probed. */
function probedLevels(c: ConfigCase): Level[] {
  const levels = levelsOf(path.join(ROOT, `cfg-${c.name}`));
  return EVERY_LEVEL ? levels : [levels[CONFIG_CASES.indexOf(c) % levels.length]];
}

function buildAll(): void {
  buildTemplate();
  buildOutside();
  const plain = path.join(scratch.dir, 'src', 'plain');
  gits(...makeRepo(plain, { ...FILES, '.gitattributes': '' }));
  // Dirty every level of the template once (the copies keep it: cp -a keeps the future mtime of same.f), and the
  // plain repository the location cases copy.
  dirty(...levelsOf(TEMPLATE).map((l) => l.dir), plain);
  // A copy of the template per config case and for the submodule case, a copy of the plain repository per location
  // case: all in one child process.
  const configTop = (c: ConfigCase) => path.join(ROOT, `cfg-${c.name}`);
  const subTop = path.join(ROOT, 'sub-dotgit-outside');
  const locRepo = (c: LocationCase) => path.join(ROOT, `loc-${c.name}`);
  runBatch(scratch.dir, gitEnv(), [
    ...CONFIG_CASES.map((c) => ['cp', '-a', TEMPLATE, configTop(c)]),
    ['cp', '-a', TEMPLATE, subTop],
    ...LOCATION_CASES.map((c) => ['cp', '-a', plain, locRepo(c)]),
  ]);
  // Config cases: the case applied at every level of its copy, probed at the levels `probedLevels` names.
  for (const c of CONFIG_CASES) {
    for (const l of levelsOf(configTop(c))) c.apply(l, `${c.name}-${l.name}`);
    for (const l of probedLevels(c)) PROBES.push({ label: `${c.name} @${l.name}`, dir: l.dir, outcome: c.outcome });
  }
  // Armed: plain git, as a user would run it in each of these repositories, does run what they name (each level's
  // markers are named after its case and level).
  const armed = CONFIG_CASES.filter((c) => c.arm !== null);
  runEach(
    scratch.dir,
    gitEnv(),
    armed.flatMap((c) =>
      probedLevels(c).map((l) => ({ cwd: l.dir, argv: ['git', c.arm!, '--ignore-submodules=all'] })),
    ),
  );
  const ran = markers();
  for (const c of armed) {
    for (const l of probedLevels(c)) {
      expect(
        ran.some((m) => m.startsWith(`${c.name}-${l.name}-`)),
        `${c.name} at ${l.name} is not armed: ${ran.join(' ')}`,
      ).toBe(true);
      // Plain git refreshed the index: make same.f stat-dirty again, so the server faces a content comparison too.
      const later = new Date(Date.now() + 20_000);
      utimesSync(path.join(l.dir, 'same.f'), later, later);
    }
  }
  clearMarkers();
  // A submodule whose .git file leads outside: the superproject is fine (submodules are not entered), the submodule not.
  writeFileSync(path.join(subTop, 'sub', '.git'), `gitdir: ${path.join(OUTSIDE_REPO, '.git')}\n`);
  PROBES.push({ label: 'sub-dotgit-outside @super', dir: subTop, outcome: OK });
  PROBES.push({ label: 'sub-dotgit-outside @sub', dir: path.join(subTop, 'sub'), outcome: NOT_ALLOWED });
  // Location cases: each case's copy of the plain dirty repository made hostile.
  for (const c of LOCATION_CASES) {
    const repo = locRepo(c);
    const dir = c.mutate(repo) ?? repo;
    PROBES.push({ label: c.name, dir, outcome: c.outcome });
  }
  clearMarkers();
}

/** Asserts `r` ends as `outcome` and carries nothing forbidden. */
function check(r: CallResult, outcome: Outcome, label: string): void {
  const all = JSON.stringify(r);
  for (const f of FORBIDDEN) expect(all.includes(f), `${label}: result carries ${f}: ${all.slice(0, 600)}`).toBe(false);
  if (outcome === 'ok') {
    expect(r.isError, `${label}: ${r.content?.[0]?.text}`).toBeFalsy();
  } else {
    const e = expectCode(r, outcome.code);
    if (outcome.reason) expect(e.error.details.reason, `${label}: ${e.error.message}`).toBe(outcome.reason);
  }
}

/** Every call of the matrix on one probe. */
async function probeOnce(client: TestClient, p: Probe): Promise<void> {
  const label = `${client.era} ${p.label}`;
  const status = await client.call('git_status', { path: p.dir });
  check(status, p.outcome, `${label} git_status`);
  check(await client.call('git_diff', { path: p.dir }), p.outcome, `${label} git_diff`);
  check(await client.call('git_diff', { path: p.dir, staged: true }), p.outcome, `${label} git_diff staged`);
  check(
    await client.call('git_diff', { path: p.dir, paths: [path.join(p.dir, 'c.d'), path.join(p.dir, 'a.txt')] }),
    p.outcome,
    `${label} git_diff paths`,
  );
  const hash = status.isError ? sha('none') : (status.structuredContent!.status_hash as string);
  const write = await client.call('write_file', {
    path: path.join(p.dir, 'probe-new.txt'),
    content: 'p\n',
    expected_status_hash: hash,
    dry_run: true,
  });
  const refused = write.isError
    ? (JSON.parse(write.content[0].text!) as { error: { code: string; details?: { source?: string } } })
    : null;
  // The write guard reads a repository's config to find core.hooksPath (docs/security.md, "Execution-bearing files
  // and git directories"); a config it cannot read refuses the write, and file policy comes before the git check in
  // the order of checks. Still nothing forbidden in it.
  const guardRefused =
    p.label.startsWith('config-') &&
    refused?.error.code === 'FILE_POLICY_DENIED' &&
    refused.error.details?.source === 'builtin';
  check(write, guardRefused ? { code: 'FILE_POLICY_DENIED' } : p.outcome, `${label} write_file expected_status_hash`);
  expect(markers(), `${label}: a repository-named program ran`).toEqual([]);
}

describe('hostile repositories: nothing runs, nothing outside or secret leaks, every call ends with a clear code', () => {
  const clients: Partial<Record<Era, TestClient>> = {};
  beforeAll(async () => {
    buildAll();
    for (const era of ERAS) {
      clients[era] = await connect(era, {
        args: ['--state-dir', path.join(scratch.dir, 'state', era), '--audit-log', `${AUDIT}.${era}`, '--root', ROOT],
        env: { HOME, XDG_CONFIG_HOME: HOME },
      });
    }
  }, 120_000);
  afterAll(async () => {
    for (const c of Object.values(clients)) await c?.close();
  });

  it('the matrix (both eras)', async () => {
    // Every config case at its levels, the submodule case at two, every location case.
    expect(PROBES.length).toBe(CONFIG_CASES.length * (EVERY_LEVEL ? 3 : 1) + 2 + LOCATION_CASES.length);
    const probesOf = (era: Era) => PROBES.filter((_, i) => ERAS[i % ERAS.length] === era);
    await Promise.all(
      ERAS.map(async (era) => {
        for (const p of probesOf(era)) await probeOnce(clients[era]!, p);
      }),
    );
    expect(markers()).toEqual([]);
    for (const era of ERAS) {
      const stderr = clients[era]!.stderr();
      const audit = readFileSync(`${AUDIT}.${era}`, 'utf8');
      expect(audit.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(probesOf(era).length * 5);
      for (const f of FORBIDDEN) {
        expect(stderr.includes(f), `${era} stderr carries ${f}`).toBe(false);
        expect(audit.includes(f), `${era} audit log carries ${f}`).toBe(false);
      }
      expect(stderr).not.toMatch(/incident/i);
    }
  }, 180_000);

  it('with TMPDIR inside the roots, the private git dir is made elsewhere (an agent cannot plant files in it)', async () => {
    const tmp = path.join(ROOT, 'tmp-inside');
    mkdirSync(tmp, { recursive: true });
    const c = await connect('modern', {
      args: ['--state-dir', path.join(scratch.dir, 'state', 'tmpdir'), '--root', ROOT],
      env: { HOME, XDG_CONFIG_HOME: HOME, TMPDIR: tmp },
    });
    try {
      const plain = PROBES.find((p) => p.label === 'dotgit-symlink-inside')!;
      await c.callOk('git_status', { path: plain.dir });
      await c.callOk('git_diff', { path: plain.dir });
      expect(readdirSync(tmp)).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it('the legitimate neighbours work: a symlinked .git inside the roots, a linked worktree, submodules, the 1.3 MB config', async () => {
    const c = clients.modern!;
    const linked = PROBES.find((p) => p.label === 'dotgit-symlink-inside')!;
    const s = await c.callOk('git_status', { path: linked.dir });
    expect(s.entries.map((e: { path: string }) => e.path).sort()).toEqual(['a.txt', 'b.f', 'c.d', 'u.txt']);
    const wt = PROBES.find((p) => p.label === 'linked-worktree-inside')!;
    const w = await c.callOk('git_status', { path: wt.dir });
    expect(w.branch).toBe('wtbranch');
    expect(w.entries.map((e: { path: string }) => e.path)).toEqual(['a.txt']);
    const d = await c.callOk('git_diff', { path: wt.dir });
    expect(d.diff).toContain('+worktree change');
    // Submodules are not entered: the superproject's status leaves them out (its hash is plain git's with
    // --ignore-submodules=all, README "status_hash"); a path inside a submodule shows the submodule's own status.
    const sup = path.join(ROOT, 'neighbour-submodules');
    execFileSync('cp', ['-a', TEMPLATE, sup]);
    const top = await c.callOk('git_status', { path: sup });
    expect(top.entries.map((e: { path: string }) => e.path).sort()).toEqual(['a.txt', 'b.f', 'c.d', 'u.txt']);
    expect(top.status_hash).toBe(
      sha(
        git(
          sup,
          '--no-optional-locks',
          'status',
          '--porcelain=v2',
          '--branch',
          '--untracked-files=all',
          '--ignore-submodules=all',
        ),
      ),
    );
    const sub = await c.callOk('git_status', { path: path.join(sup, 'sub') });
    expect(sub.repo_root).toBe(path.join(sup, 'sub'));
    expect(sub.entries.map((e: { path: string }) => e.path).sort()).toEqual(['a.txt', 'b.f', 'c.d', 'u.txt']);
    const b = await c.callOk('git_diff', { path: path.join(ROOT, 'cfg-config-1.3MB') });
    expect(b.diff).toContain('+HOSTILE b');
    expect(markers()).toEqual([]);
  });
});

/**
 * Which paths the kernel wall lets the server reach (docs/security.md "The kernel wall"), and raising it at start-up.
 *
 * Read-write: the roots as resolved at start, the state directory, and a private per-run directory made here (0700,
 * outside the roots) that becomes TMPDIR for the process and its children — git views and gh token directories are
 * made in it — and is removed at exit. Read and execute: the system's program trees (/usr, /bin, /lib…), Node's own
 * install prefix, and each directory on PATH (the server runs git, gh and glab from there) — except a directory that
 * holds the home directory, a root, the state or run directory or the forge CLIs' configuration, or that anyone may
 * write (/tmp): granting it would open what it holds. Read-only: the package's
 * own files, the /etc entries that name resolution, TLS and user lookup need, the process's own /proc entry, and the
 * forge CLIs' configuration directories. /dev/null read-write. Everything else — the rest of the home directory,
 * other projects, /etc/shadow, other processes' /proc entries — is refused by the kernel, to the server and every
 * child it starts, whatever the policy layer decides.
 *
 * A rejected command-line root (one that does not exist, is not a directory or cannot be read: config.ts) gets no
 * rule; when every one was rejected the wall still stands, with no root in it (fail closed).
 *
 * Client roots announced later can only narrow the command-line roots (`--client-roots=narrow`, the default, or
 * `ignore`), so the start-up list is an upper bound. Where it cannot be — no command-line roots (the client's roots
 * replace the working-directory default), or `--client-roots=replace` — the wall is off and says why (and
 * `--sandbox=require` refuses to start): the server cannot know at start-up the roots a client will announce.
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config.js';
import {
  accessRights,
  confineProcess,
  handledRights,
  loadKernelWallAddon,
  type WallRule,
  type WallState,
} from '../fs/kernel-wall.js';
import { nativeSpawner, setChildSpawner, setChildWall, type ChildWall } from '../vcs/run-command.js';
import { isWithin } from '../fs/path-within.js';
import { copyVerifiedNativeFile, recordedNativeDigest } from '../fs/native-load.js';
import { ghConfigDir } from '../vcs/forge-hosts.js';

/** Program trees: read and execute. */
const SYSTEM_PROGRAM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** /etc entries the process and its children need: TLS roots, name resolution, users and groups, the loader. */
const SYSTEM_READ_ONLY = [
  '/etc/ssl',
  '/etc/pki',
  '/etc/ca-certificates',
  '/etc/crypto-policies',
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/host.conf',
  '/etc/nsswitch.conf',
  '/etc/gai.conf',
  '/etc/services',
  '/etc/protocols',
  '/etc/passwd',
  '/etc/group',
  '/etc/localtime',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/alternatives',
  '/dev/urandom',
  '/dev/random',
  '/proc/meminfo',
  '/proc/stat',
  '/proc/cpuinfo',
  '/sys/fs/cgroup',
  '/sys/devices/system/cpu',
];

/**
 * The wall's plan, or why there is nothing to confine to. `gitRules` is git's narrower layer (the same list without
 * the forge CLIs' configuration and without the run directory, of which git gets only its view's private
 * directory); `helper` is the exec helper's private copy that applies it (null: git runs in the server's wall).
 */
export type WallPlan =
  { rules: WallRule[]; runDir: string; gitRules: WallRule[]; helper: string | null } | { reason: string };

/** The real path of `p`, or null when it does not exist. */
function real(p: string): string | null {
  try {
    return realpathSync.native(p);
  } catch {
    return null;
  }
}

/** The real path of `p`'s nearest existing ancestor joined with the rest (`p` may not exist yet). */
function realSpelling(p: string): string {
  const rest: string[] = [];
  for (let d = path.resolve(p); ; d = path.dirname(d)) {
    const r = real(d);
    if (r !== null) return path.join(r, ...rest);
    if (d === path.dirname(d)) return path.resolve(p);
    rest.unshift(path.basename(d));
  }
}

/** Whether `p` is a directory that anyone may write (mode o+w, like /tmp): never a grant of its own. */
function worldWritableDir(p: string): boolean {
  try {
    const st = lstatSync(p);
    return st.isDirectory() && (st.mode & 0o002) !== 0;
  } catch {
    return false;
  }
}

/**
 * Decides the rules from the configuration and makes the private per-run directory (setting TMPDIR to it).
 * @returns the plan, or the reason the wall cannot be raised (no command-line roots; a root is /)
 */
export function planKernelWall(config: Config, env: NodeJS.ProcessEnv = process.env): WallPlan {
  const roots = config.roots.map((r) => r.real);
  const refused = cannotRaise(config, roots);
  if (refused) return refused;
  const inside = (p: string) => roots.some((r) => isWithin(r, p));
  const rules: WallRule[] = roots.map((r) => ({ path: r, access: 'rw' }));

  // A state directory inside a root is covered by the root's rule (and is not made before it is needed); one outside
  // is made now (0700), since the wall cannot name what does not exist.
  if (!inside(realSpelling(config.stateDir))) {
    try {
      mkdirSync(config.stateDir, { recursive: true, mode: 0o700 });
    } catch {
      // The journal then fails where it is used, with its own envelope; the wall does not widen for it.
    }
    const stateDir = real(config.stateDir);
    if (stateDir) rules.push({ path: stateDir, access: 'rw' });
  }

  const runDir = makeRunDir(inside);
  if (typeof runDir !== 'string') return runDir;
  rules.push({ path: runDir, access: 'rw' }, { path: '/dev/null', access: 'dev' });

  // A grant for what the process needs to run (programs, the package, certificates, the forge CLIs' configuration)
  // must not hold what it would open to a reader: the home directory, a root (its siblings are outside), the state
  // or run directory (git views, gh's private token directories), gh's or glab's configuration (git's layer keeps
  // the program grants). Nor may it be a directory anyone can write (/tmp, /var/tmp): that holds no program of ours.
  const home = real(os.homedir());
  const forgeDirs = [ghConfigDir(env), path.join(os.homedir(), '.config', 'glab-cli')]
    .map(real)
    .filter((d): d is string => d !== null);
  const guarded = [...(home ? [home] : []), ...rules.map((r) => r.path), ...forgeDirs];
  const tooWide = (p: string, keep: readonly string[] = []) =>
    p === '/' || guarded.some((g) => !keep.includes(g) && isWithin(p, g)) || worldWritableDir(p);
  rules.push(...runGrants(env, tooWide));
  const self = real('/proc/self');
  if (self) rules.push({ path: self, access: 'ro' });
  // The package's own files; where its directory is too wide (a bundle copied into the home directory or beside a
  // root), only the bundle's directory, and where that is too wide as well, nothing beyond what is loaded already.
  const distDir = path.dirname(fileURLToPath(import.meta.url));
  const packageDir = [path.dirname(distDir), distDir].map(real).find((d) => d !== null && !tooWide(d));
  if (packageDir) rules.push({ path: packageDir, access: 'ro' });
  // git's layer: everything so far but the run directory (its views' private directories are added per run) and the
  // server's own /proc entry (its environment may hold GH_TOKEN; its descriptors are the MCP protocol's pipes).
  const gitRules = rules.filter((r) => r.path !== runDir && r.path !== self);
  rules.push(...gitConfigGrants(env));
  // The forge CLIs' configuration: gh and glab read it, git never does.
  for (const dir of forgeDirs) if (!tooWide(dir, forgeDirs)) rules.push({ path: dir, access: 'ro' });
  // Node's own coverage output (after git's layer was taken: git never writes it).
  const coverageDir = v8CoverageDir(env, guarded, [
    ...forgeDirs,
    ...rules.filter((r) => r.access === 'rw').map((r) => r.path),
  ]);
  if (coverageDir) rules.push({ path: coverageDir, access: 'rw' });
  const helper = installHelper(distDir, runDir);
  if (helper !== null && typeof helper !== 'string') return helper;
  if (helper) rules.push({ path: helper, access: 'rx' });
  return { rules, runDir, gitRules, helper };
}

/** Why the wall cannot be raised for this configuration (see planKernelWall), or null when it can. */
function cannotRaise(config: Config, roots: readonly string[]): { reason: string } | null {
  // The start-up list must be an upper bound of every root the server may later use: client roots may replace the
  // working-directory default, and under --client-roots=replace the command-line roots too.
  // Only a serving process has a client that may announce roots; `call` and `tools` keep the roots they start with.
  const clientMayAnnounce = config.mode.kind === 'serve' && config.clientRoots !== 'ignore';
  // Command-line roots that were all left out (config.rejectedRoots: missing, not directories, unreadable) leave the
  // wall with no root at all, never without a wall: the policy layer has no root either (ROOTS_EMPTY), and client
  // roots can only narrow that empty set, so the kernel refuses every path a policy bug might let through.
  if ((roots.length === 0 && !config.rootsFromCommandLine) || (!config.rootsFromCommandLine && clientMayAnnounce)) {
    return { reason: 'no command-line roots (client roots are not known at start-up)' };
  }
  if (clientMayAnnounce && config.clientRoots === 'replace') {
    return { reason: '--client-roots=replace (client roots may lie outside the command-line roots)' };
  }
  if (roots.includes('/')) return { reason: 'a root is /' };
  return null;
}

/**
 * What the process needs to run, none of it too wide (see planKernelWall): the system's program directories, Node's
 * installation (or only its binary), the PATH's directories (rx), the system's read-only files and the operator's
 * certificate files (ro).
 */
function runGrants(env: NodeJS.ProcessEnv, tooWide: (p: string) => boolean): WallRule[] {
  const rules: WallRule[] = [];
  for (const dir of SYSTEM_PROGRAM_DIRS) rules.push({ path: dir, access: 'rx' });
  const node = real(process.execPath);
  if (node) {
    const prefix = path.dirname(path.dirname(node));
    if (!tooWide(prefix)) rules.push({ path: prefix, access: 'rx' });
    else if (!tooWide(node)) rules.push({ path: node, access: 'rx' });
  }
  for (const entry of (env.PATH ?? '').split(path.delimiter)) {
    if (!path.isAbsolute(entry)) continue;
    const dir = real(entry);
    if (dir && !tooWide(dir)) rules.push({ path: dir, access: 'rx' });
  }
  for (const p of SYSTEM_READ_ONLY) rules.push({ path: p, access: 'ro' });
  for (const key of ['SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_EXTRA_CA_CERTS', 'GIT_SSL_CAINFO']) {
    const value = env[key] && path.isAbsolute(env[key]) ? real(env[key]) : null;
    if (value && !tooWide(value)) rules.push({ path: value, access: 'ro' });
  }
  return rules;
}

/** The operator's global git configuration files (ro): the server's own git call for safe.directory (src/vcs/git-locate.ts) reads them. */
function gitConfigGrants(env: NodeJS.ProcessEnv): WallRule[] {
  const xdg = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : null;
  const rules: WallRule[] = [];
  for (const file of [
    path.join(os.homedir(), '.gitconfig'),
    path.join(xdg ?? path.join(os.homedir(), '.config'), 'git', 'config'),
  ]) {
    const r = real(file);
    if (r) rules.push({ path: r, access: 'ro' });
  }
  return rules;
}

/**
 * The directory `NODE_V8_COVERAGE` names, as a read-write grant: Node writes the process's coverage there when it
 * exits (the test suite's coverage of the spawned server, docs/development.md). The variable is the operator's, like
 * the configuration; Node reads it at start-up, before the run directory exists, and writes after that directory is
 * emptied, so the output cannot live there. Granted only when it is an existing directory (the wall can only name what
 * exists; Node creates a missing one, which the wall would then refuse) owned by this user, not writable by anyone
 * (o+w), not `/`, holding none of `guarded` (the home directory, the roots, the state and run directories, the forge
 * CLIs' configuration) and lying within none of `enclosing` (the forge CLIs' configuration and every read-write grant
 * so far: a directory inside a root needs no grant of its own). git's layer never gets it.
 * @param env the process environment (`NODE_V8_COVERAGE`: a path, resolved against the working directory as Node does)
 * @param guarded real paths the grant may not hold
 * @param enclosing real paths the grant may not lie within
 * @returns the directory's real path, or null (unset, missing, not a directory, another user's, o+w, or too wide)
 * Source: docs/security.md "The kernel wall".
 */
export function v8CoverageDir(
  env: NodeJS.ProcessEnv,
  guarded: readonly string[],
  enclosing: readonly string[],
): string | null {
  const named = env.NODE_V8_COVERAGE;
  if (!named) return null;
  const dir = real(path.resolve(named));
  if (dir === null || dir === '/') return null;
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o002) !== 0) return null;
  } catch {
    return null;
  }
  return guarded.some((g) => isWithin(dir, g)) || enclosing.some((e) => isWithin(e, dir)) ? null : dir;
}

/**
 * Copies the exec helper from the build (dist/native/<platform>-<arch>/fs_tools_landlock_exec) into the run
 * directory, where no tool can write it, and returns the copy's path; null when the build has none. Only the file
 * this build recorded is copied, and the copy is checked again (src/fs/native-load.ts `copyVerifiedNativeFile`): a
 * helper that is there but differs is a reason, and the wall stays off (docs/security.md "The server's own code and
 * token files").
 */
function installHelper(distDir: string, runDir: string): string | { reason: string } | null {
  const source = path.join(distDir, 'native', `${process.platform}-${process.arch}`, 'fs_tools_landlock_exec');
  const copy = path.join(runDir, 'fs_tools_landlock_exec');
  const outcome = copyVerifiedNativeFile(source, copy, recordedNativeDigest('fs_tools_landlock_exec'), 0o500);
  if (outcome === 'copied') return copy;
  if (outcome === 'digest_mismatch') {
    return { reason: 'the exec helper is not the one this build recorded (sha256 differs)' };
  }
  return null;
}

/**
 * git's narrower layer for the one subprocess runner (src/vcs/run-command.ts): a program named `git` runs through the
 * helper with `gitRules`, plus read-write on its view's private directory — the run-directory entry its HOME lies in
 * (src/vcs/git-view.ts sets HOME inside it). Other programs (gh, glab) run in the server's own wall.
 */
export function gitChildWall(plan: Extract<WallPlan, { rules: unknown }>, abi: number): ChildWall | null {
  const helper = plan.helper;
  if (!helper) return null;
  const handled = String(handledRights(abi));
  const fixed = plan.gitRules.map((r) => `${accessRights(r.access, abi)}:${r.path}`);
  const rw = accessRights('rw', abi);
  return (file, env) => {
    if (path.basename(file) !== 'git' || !path.isAbsolute(file)) return null;
    // The first component of HOME below the run directory, compared after normalizing: HOME spelled `<run>/.` or
    // `<run>/x/..` is the run directory itself and gets nothing (it would open every token directory to git).
    const home = env.HOME && path.isAbsolute(env.HOME) ? path.relative(plan.runDir, env.HOME) : '';
    const first = home.split(path.sep)[0];
    const own = first && first !== '..' && first !== '.' ? [`${rw}:${path.join(plan.runDir, first)}`] : [];
    return { file: helper, prefix: [handled, ...fixed, ...own, '--'] };
  };
}

/**
 * Makes the private per-run directory (0700) under the first of TMPDIR, /tmp, /dev/shm, /var/tmp whose real path is
 * outside the roots, points TMPDIR at it (os.tmpdir() and every child then use it) and removes it at exit.
 */
function makeRunDir(inside: (p: string) => boolean): string | { reason: string } {
  for (const candidate of [os.tmpdir(), '/tmp', '/dev/shm', '/var/tmp']) {
    const base = real(candidate);
    if (!base || inside(base)) continue;
    sweepRunDirs(base);
    let dir: string;
    try {
      dir = mkdtempSync(path.join(base, `fs-tools-run-${process.pid}-`));
    } catch {
      continue;
    }
    process.env.TMPDIR = dir;
    // Its contents go at exit; the directory itself stays (removing it needs a right on its parent, which the wall
    // does not give) until the next start sweeps it.
    process.on('exit', () => emptyDir(dir));
    return dir;
  }
  return { reason: 'every temporary directory lies inside the roots' };
}

/** Removes every entry of `dir`, never throwing (the process is exiting). */
function emptyDir(dir: string): void {
  try {
    for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { recursive: true, force: true });
  } catch {
    // Left for the next start's sweep.
  }
}

/** Removes the run directories of servers that are gone (`fs-tools-run-PID-…` whose PID is not alive). */
function sweepRunDirs(base: string): void {
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^fs-tools-run-(\d+)-[A-Za-z0-9]{6}$/.exec(name);
    if (!m || isAlive(Number(m[1]))) continue;
    const dir = path.join(base, name);
    try {
      if (lstatSync(dir).isDirectory() && lstatSync(dir).uid === process.getuid?.())
        rmSync(dir, { recursive: true, force: true });
    } catch {
      // Another process's, or gone already.
    }
  }
}

/** Whether a process with this id exists (signal 0; EPERM means it exists and is not ours). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Raises the wall as `--sandbox` asks: `off` → off; otherwise the plan, the addon and the kernel decide. Call once,
 * after the process state exists (the audit log is open) and before any request is read.
 */
export async function raiseKernelWall(config: Config): Promise<WallState> {
  if (config.sandbox === 'off') return { enforced: false, reason: '--sandbox=off' };
  const addon = loadKernelWallAddon();
  if (typeof addon === 'string') return { enforced: false, reason: addon };
  // Children start through the addon from now on, without forking the server (src/vcs/run-command.ts).
  setChildSpawner(nativeSpawner(addon));
  const plan = planKernelWall(config);
  if ('reason' in plan) return { enforced: false, reason: plan.reason };
  const state = await confineProcess(addon, plan.rules, config.sandboxAbi);
  if (state.enforced) {
    setChildWall(gitChildWall(plan, state.abi));
    // SIGUSR1 would open Node's inspector on 127.0.0.1, where any local process — a child among them — could run
    // code in this process's domain, wider than git's layer. A listener of our own takes the signal from Node.
    process.on('SIGUSR1', () => {});
  }
  return state;
}

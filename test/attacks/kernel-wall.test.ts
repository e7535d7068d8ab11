/**
 * The kernel wall (docs/security.md "The kernel wall"): Landlock, applied at start-up, confines the server and every
 * child it starts to the roots, the state directory and what they need to run. These tests prove the wall, not the
 * policy:
 *  - a test build whose policy layer is deliberately broken (scripts/bundle.mjs --broken-containment: the policy
 *    takes `/` for a root) reads an outside file with --sandbox=off (the control: the build really is broken), and
 *    with the wall on, no tool reads, creates or changes anything outside — the outside tree is snapshotted before
 *    and after, and its marker never appears in any answer;
 *  - an operator-installed `git` on PATH (outside the roots) probes from inside the server's git child: it can
 *    neither read nor write outside the roots with the wall on, nor read gh's configuration (its token) or list the
 *    server's run directory (where views and gh's private token directories live) — git runs under a narrower layer
 *    of its own — and can do all of it with --sandbox=off (the control);
 *  - `--sandbox=require` exits 2 where the wall cannot be raised (`--sandbox-abi=0` stands in for an old kernel),
 *    `auto` serves and says why the wall is off; `--version` and list_allowed_directories say which is in force.
 * Everything runs for real: the built server over stdio, real git, real files, the real kernel.
 */
import { spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, connect } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const BROKEN_CLI = path.join(REPO, 'dist-broken/cli.js');
const ADDON = path.join(REPO, `dist/native/${process.platform}-${process.arch}/fs_tools_landlock.node`);

/** The kernel's Landlock ABI, asked of the built addon (asking confines nothing). */
function kernelAbi(): number {
  return (createRequire(import.meta.url)(ADDON) as { abi(): number }).abi();
}

let base: string;
let root: string;
let outside: string;
let bin: string;
let ghConfig: string;
const MARKER = `OUTSIDE-${Math.random().toString(36).slice(2)}-MARKER`;

beforeAll(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-wall-'));
  root = path.join(base, 'root');
  outside = path.join(base, 'outside');
  bin = path.join(base, 'bin');
  ghConfig = path.join(base, 'gh-config');
  for (const d of [root, outside, path.join(outside, 'dir'), bin, ghConfig]) mkdirSync(d, { recursive: true });
  // gh's own configuration, with a token: the server (and gh) may read it; git must not.
  writeFileSync(path.join(ghConfig, 'hosts.yml'), `github.com:\n    oauth_token: gho_${MARKER}\n`);
  writeFileSync(path.join(root, 'inside.txt'), 'inside\n');
  writeFileSync(path.join(outside, 'secret.txt'), `${MARKER}\n`);
  writeFileSync(path.join(outside, 'dir', 'nested.txt'), `${MARKER} nested\n`);
  const git = (args: string[], cwd: string) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd, stdio: 'ignore' });
  git(['init', '-q'], root);
  git(['add', 'inside.txt'], root);
  git(['commit', '-qm', 'one'], root);
  // An outside repository, for git_status/git_diff through the broken policy.
  git(['init', '-q'], outside);
  git(['add', '-A'], outside);
  git(['commit', '-qm', 'outside'], outside);
  // The operator's `git` wrapper: before running the real git, it tries to read and to write outside the roots, and
  // writes what happened into the root (the one place it may write).
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(
    path.join(bin, 'git'),
    `#!/bin/sh
if cat ${JSON.stringify(path.join(outside, 'secret.txt'))} >/dev/null 2>&1; then r=read-ok; else r=read-denied; fi
if ( : > ${JSON.stringify(path.join(outside, 'planted.txt'))} ) 2>/dev/null; then w=write-ok; else w=write-denied; fi
if cat "$GH_CONFIG_DIR/hosts.yml" >/dev/null 2>&1; then g=gh-config-ok; else g=gh-config-denied; fi
if ls "$HOME/../.." >/dev/null 2>&1; then t=run-dir-ok; else t=run-dir-denied; fi
echo "$r $w $g $t" >> ${JSON.stringify(path.join(root, 'probe.log'))}
exec ${realGit} "$@"
`,
  );
  chmodSync(path.join(bin, 'git'), 0o755);
  const built = spawnSync(process.execPath, ['scripts/bundle.mjs', '--broken-containment'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  expect(built.status, built.stderr).toBe(0);
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('default flags on this machine', () => {
  it('the wall is enforced with the kernel ABI, and says so in list_allowed_directories and on stderr', async () => {
    const abi = kernelAbi();
    expect(abi).toBeGreaterThanOrEqual(1);
    const client = await connect('modern', { args: [root], cwd: root });
    try {
      const listed = await client.callOk('list_allowed_directories');
      expect(listed.kernel_wall).toEqual({ enforced: true, abi });
      const text = (await client.call('list_allowed_directories')).content[0].text!;
      expect(text).toContain(`kernel wall: landlock ABI ${abi}, enforced`);
      expect(client.stderr()).toContain(`fs-tools: kernel wall: landlock ABI ${abi}, enforced\n`);
    } finally {
      await client.close();
    }
  });

  it('--version says which wall a server would raise', () => {
    const r = spawnSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[1]).toBe(`kernel wall: landlock ABI ${kernelAbi()}, enforced when serving`);
    const off = spawnSync(process.execPath, [CLI, '--sandbox=off', '--version'], { encoding: 'utf8' });
    expect(off.stdout.split('\n')[1]).toBe('kernel wall: off (--sandbox=off)');
  });
});

describe('a git child probes from inside', () => {
  async function probe(flags: string[]): Promise<string> {
    rmSync(path.join(root, 'probe.log'), { force: true });
    rmSync(path.join(outside, 'planted.txt'), { force: true });
    const client = await connect('modern', {
      args: [...flags, root],
      cwd: root,
      env: { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, GH_CONFIG_DIR: ghConfig },
    });
    try {
      const status = await client.callOk('git_status', { path: root });
      expect(status.repo_root).toBe(root);
    } finally {
      await client.close();
    }
    return readFileSync(path.join(root, 'probe.log'), 'utf8');
  }

  it("with the wall, git reads and writes nothing outside the roots, nor gh's token, nor the run directory", async () => {
    const log = await probe([]);
    expect(log.trim().split('\n').length).toBeGreaterThanOrEqual(1);
    for (const line of log.trim().split('\n')) {
      expect(line).toBe('read-denied write-denied gh-config-denied run-dir-denied');
    }
    expect(existsSync(path.join(outside, 'planted.txt'))).toBe(false);
  });

  it('the control: with --sandbox=off the same probe reads and writes outside (so the probe can tell)', async () => {
    const log = await probe(['--sandbox=off']);
    expect(log).toContain('read-ok write-ok gh-config-ok run-dir-ok');
    expect(existsSync(path.join(outside, 'planted.txt'))).toBe(true);
    rmSync(path.join(outside, 'planted.txt'));
  });
});

describe('--sandbox where the wall cannot be raised (--sandbox-abi=0 stands in for a kernel without Landlock)', () => {
  it('require exits 2 with the reason, before serving anything', () => {
    const r = spawnSync(process.execPath, [CLI, '--sandbox=require', '--sandbox-abi=0', root], {
      cwd: root,
      encoding: 'utf8',
      input: '',
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('fs-tools: --sandbox=require: kernel wall: off (Landlock ABI 0 (--sandbox-abi))\n');
  });

  it('auto serves, and says the wall is off and why', async () => {
    const client = await connect('modern', { args: ['--sandbox-abi=0', root], cwd: root });
    try {
      const listed = await client.callOk('list_allowed_directories');
      expect(listed.kernel_wall).toEqual({ enforced: false, reason: 'Landlock ABI 0 (--sandbox-abi)' });
      expect(client.stderr()).toContain('fs-tools: kernel wall: off (Landlock ABI 0 (--sandbox-abi))');
      expect((await client.callOk('read_file', { path: 'inside.txt' })).content).toBe('inside\n');
    } finally {
      await client.close();
    }
  });

  it('a bad --sandbox value is exit 2', () => {
    const r = spawnSync(process.execPath, [CLI, '--sandbox=maybe', root], { cwd: root, encoding: 'utf8', input: '' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--sandbox must be one of auto\|require\|off/);
  });
});

describe('a broken policy layer (the test build): the kernel refuses what the policy lets through', () => {
  const secret = () => path.join(outside, 'secret.txt');
  const calls = (): Array<[string, Record<string, unknown>]> => [
    ['read_file', { path: secret() }],
    ['read_files', { paths: [secret(), path.join(outside, 'dir', 'nested.txt')] }],
    ['read_media', { path: secret() }],
    ['stat', { path: secret() }],
    ['list_directory', { path: outside }],
    ['search_files', { path: outside, query: 'MARKER' }],
    ['search_files', { path: outside, glob: '**/*.txt' }],
    ['write_file', { path: path.join(outside, 'new.txt'), content: 'x' }],
    ['write_file', { path: secret(), content: 'overwritten' }],
    ['edit_file', { path: secret(), edits: [{ old_text: 'MARKER', new_text: 'EDITED' }] }],
    ['create_directory', { path: path.join(outside, 'made') }],
    ['delete_path', { path: secret() }],
    ['delete_path', { path: path.join(outside, 'dir'), recursive: true }],
    ['move_path', { source: secret(), destination: path.join(root, 'moved.txt') }],
    ['move_path', { source: path.join(root, 'inside.txt'), destination: path.join(outside, 'moved-in.txt') }],
    ['copy_path', { source: secret(), destination: path.join(root, 'copied.txt') }],
    ['copy_path', { source: path.join(outside, 'dir'), destination: path.join(root, 'copied-dir'), recursive: true }],
    ['copy_path', { source: path.join(root, 'inside.txt'), destination: path.join(outside, 'copied-out.txt') }],
    [
      'apply_patch',
      {
        patch: `--- a${secret()}\n+++ b${secret()}\n@@ -1 +1 @@\n-${MARKER}\n+patched\n`,
        path: '/',
      },
    ],
    ['replace_in_files', { path: outside, query: 'MARKER', replacement: 'REPLACED', dry_run: false }],
    ['git_status', { path: outside }],
    ['git_diff', { path: outside }],
  ];

  it('the control: with --sandbox=off the test build reads the outside file (its policy really is broken)', async () => {
    const client = await connect('modern', {
      command: process.execPath,
      args: [BROKEN_CLI, `--broken-root=${outside}`, '--sandbox=off', root],
    });
    try {
      expect((await client.callOk('read_file', { path: secret() })).content).toBe(`${MARKER}\n`);
    } finally {
      await client.close();
    }
  });

  it('with the wall: no outside byte in any answer, nothing outside created or changed, refusals say kernel', async () => {
    const before = snapshotTree(outside);
    // The policy takes `/` and the outside directory itself for roots: every tool is handed the outside path, and
    // the first open of the outside directory is where the kernel refuses.
    const client = await connect('modern', {
      command: process.execPath,
      args: [BROKEN_CLI, `--broken-root=${outside}`, root],
      cwd: root,
    });
    const refusals: string[] = [];
    try {
      expect((await client.callOk('list_allowed_directories')).kernel_wall).toMatchObject({ enforced: true });
      for (const [tool, args] of calls()) {
        const result = await client.call(tool, args);
        const text = JSON.stringify(result);
        expect(text, `${tool} ${JSON.stringify(args)}`).not.toContain(MARKER);
        if (result.isError) {
          const envelope = JSON.parse(result.content[0].text!) as {
            error: { code: string; details?: { source?: string } };
          };
          refusals.push(`${tool}:${envelope.error.code}:${envelope.error.details?.source ?? '-'}`);
        }
      }
    } finally {
      await client.close();
    }
    expect(snapshotTree(outside)).toEqual(before);
    // Every refusal that reached the file system is the kernel's.
    for (const r of refusals.filter((x) => x.includes(':FILE_POLICY_DENIED:'))) expect(r).toMatch(/:kernel$/);
    expect(refusals.filter((x) => x.startsWith('read_file:'))).toEqual(['read_file:FILE_POLICY_DENIED:kernel']);
    expect(refusals.filter((x) => x.startsWith('write_file:'))[0]).toBe('write_file:FILE_POLICY_DENIED:kernel');
    expect(refusals.filter((x) => x.startsWith('create_directory:'))).toEqual([
      'create_directory:FILE_POLICY_DENIED:kernel',
    ]);
    // Nothing was carried into the root either.
    for (const name of ['moved.txt', 'copied.txt', 'copied-dir']) expect(existsSync(path.join(root, name))).toBe(false);
    expect(readFileSync(path.join(root, 'inside.txt'), 'utf8')).toBe('inside\n');
  });
});

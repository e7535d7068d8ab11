/**
 * Attack: the state directory, the journal and the audit log as a way out (issue 11 item 6), against real server
 * processes (dist/cli.js).
 *
 * 1. Forged journal entries, written by the test into a state directory that lies inside the root (as an agent could
 *    before the fix), each naming one file: `.git/hooks/pre-commit` with mode 0755, a secret, a `read_only` and a
 *    `deny` policy path, a path outside the roots, a path through an in-root symlink to outside, a file inside the
 *    state directory itself; plus a mixed entry (one harmless file + one refused file), an entry that is not a valid
 *    entry, and one harmless entry (the control). Pins, with and without --readonly:
 *      - no refused entry is applied (every byte and mode of the root and the outside directory unchanged; no hook);
 *      - each is reported at start-up on stderr and in list_allowed_directories (NOT_APPLIED, reason, each file's
 *        refusal code) and stays on disk;
 *      - under --readonly even the harmless entry is not applied (reason readonly) and nothing is removed; without it,
 *        the harmless entry is rolled back (ROLLBACK_COMPLETE) — recovery still works.
 * 2. The state directory inside a root: nothing in it can be read, listed, searched, written, moved or deleted by any
 *    tool (also through an in-root link to it, and for the default state directory under a HOME inside the root);
 *    listings and searches of the root omit it.
 * 3. The audit log inside a root: it cannot be read, edited, replaced, moved or deleted, nor its directory moved or
 *    replaced (the directory swap: move the log's directory away, move in a directory holding `audit.log → outside
 *    file`); when another process performs that swap anyway, every later line still goes to the original log (opened
 *    once, written through its descriptor) and the outside file is untouched.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { envelopeOf } from '../helpers/protocol-asserts.js';
import { CLI, connect, coverageEnv, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';
import { entryPath as listedPath } from '../helpers/entries.js';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...(process.env as Record<string, string>), ...coverageEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const cleanups: Array<() => void> = [];
afterAll(() => {
  for (const c of cleanups.reverse()) c();
});

function tree(spec: Parameters<typeof makeTree>[0], prefix: string): string {
  const t = makeTree(spec, prefix);
  cleanups.push(t.cleanup);
  return t.dir;
}

const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid;
const HOOK = '#!/bin/sh\necho pwned > /tmp/fs-tools-pwned\n';

/** A journal entry as fs-tools writes it, naming files whose rollback would write `old` (new_hash = current). */
function forge(stateDir: string, files: Array<{ path: string; old: string; mode?: number }>): string {
  const id = randomUUID();
  const entry = {
    id,
    pid: deadPid(),
    created_at: new Date().toISOString(),
    files: files.map((f) => {
      const now = existsSync(f.path) && lstatSync(f.path).isFile() ? readFileSync(f.path) : null;
      return {
        path: f.path,
        old_base64: Buffer.from(f.old).toString('base64'),
        old_hash: contentHash(f.old),
        new_hash: now ? contentHash(now) : null,
        mode: f.mode ?? 0o644,
      };
    }),
  };
  mkdirSync(path.join(stateDir, 'journal'), { recursive: true });
  writeFileSync(path.join(stateDir, 'journal', `${id}.json`), JSON.stringify(entry));
  return id;
}

describe('forged journal entries are never applied, with and without --readonly, and each is reported', () => {
  it('refuses every entry naming a protected, outside or linked path; applies only the harmless one, and not under --readonly', async () => {
    const outside = tree({ 'victim.txt': 'outside original\n' }, 'fs-tools-outside-');
    const R = tree(
      {
        '.git': { hooks: { 'pre-commit.sample': 'sample\n' } },
        '.env': 'TOKEN=original\n',
        locked: { 'a.txt': 'locked original\n' },
        private: { 'b.txt': 'private original\n' },
        'ok.txt': 'ok new\n',
        'mixed.txt': 'mixed new\n',
      },
      'fs-tools-journal-root-',
    );
    symlinkSync(outside, path.join(R, 'link'));
    const policyFile = path.join(tree({}, 'fs-tools-policy-'), 'policy.json');
    writeFileSync(
      policyFile,
      JSON.stringify({
        rules: [
          { pattern: 'locked/**', access: 'read_only' },
          { pattern: 'private', access: 'deny' },
        ],
      }),
    );
    const state = path.join(R, '.fs-tools-state');
    const ids = {
      hook: forge(state, [{ path: path.join(R, '.git/hooks/pre-commit'), old: HOOK, mode: 0o755 }]),
      secret: forge(state, [{ path: path.join(R, '.env'), old: 'TOKEN=forged\n' }]),
      readOnly: forge(state, [{ path: path.join(R, 'locked/a.txt'), old: 'forged\n' }]),
      deny: forge(state, [{ path: path.join(R, 'private/b.txt'), old: 'forged\n' }]),
      outside: forge(state, [{ path: path.join(outside, 'victim.txt'), old: 'forged\n' }]),
      viaLink: forge(state, [{ path: path.join(R, 'link/victim.txt'), old: 'forged\n' }]),
      intoState: forge(state, [{ path: path.join(state, 'journal', `${randomUUID()}.json`), old: '{}' }]),
      mixed: forge(state, [
        { path: path.join(R, 'mixed.txt'), old: 'mixed old\n' },
        { path: path.join(R, '.git/hooks/post-checkout'), old: HOOK, mode: 0o755 },
      ]),
      control: forge(state, [{ path: path.join(R, 'ok.txt'), old: 'ok old\n' }]),
    };
    writeFileSync(
      path.join(state, 'journal', `${randomUUID()}.json`),
      JSON.stringify({ id: 'x', pid: 1, files: [{ path: '/etc/passwd' }] }),
    );
    const expectedRefusal: Record<string, unknown[]> = {
      hook: ['FILE_POLICY_DENIED:git_dir'],
      secret: ['SECRET_DENIED'],
      readOnly: ['FILE_POLICY_DENIED:read_only'],
      deny: ['FILE_POLICY_DENIED:deny'],
      outside: ['NOT_ALLOWED:outside_roots'],
      viaLink: [expect.stringMatching(/^NOT_ALLOWED/)],
      intoState: ['FILE_POLICY_DENIED:state_dir'],
      mixed: ['not_applied', 'FILE_POLICY_DENIED:git_dir'],
    };
    const rootBefore = snapshotTree(R);
    const outsideBefore = snapshotTree(outside);
    const journalNames = () => readdirSync(path.join(state, 'journal')).sort();
    const namesBefore = journalNames();
    expect(namesBefore).toHaveLength(10);

    for (const readonly of [true, false]) {
      const run = await cli([
        '--state-dir',
        state,
        `--policy=${policyFile}`,
        ...(readonly ? ['--readonly'] : []),
        '--root',
        R,
        'call',
        'list_allowed_directories',
      ]);
      expect(run.status, run.stderr).toBe(0);
      const reported = JSON.parse(run.stdout).recovered_transactions as Array<Record<string, any>>;
      for (const [name, reasons] of Object.entries(expectedRefusal)) {
        const id = ids[name as keyof typeof ids];
        const t = reported.find((r) => r.id === id);
        expect(t, `${name} reported (readonly=${readonly})`).toMatchObject({
          outcome: 'NOT_APPLIED',
          reason: 'refused',
        });
        // A file that passed authorization in a refused entry is not applied either (`readonly` under --readonly).
        expect(
          t!.files.map((f: any) => f.reason),
          name,
        ).toEqual(reasons.map((r) => (r === 'not_applied' && readonly ? 'readonly' : r)));
        expect(run.stderr, name).toContain(id);
      }
      const invalid = reported.filter((r) => r.reason === 'invalid');
      expect(invalid).toHaveLength(1);
      expect(invalid[0].problem).toMatch(/invalid entry/);
      const control = reported.find((r) => r.id === ids.control);
      if (readonly) {
        expect(control).toMatchObject({
          outcome: 'NOT_APPLIED',
          reason: 'readonly',
          files: [{ status: 'not_restored', reason: 'readonly' }],
        });
        // --readonly changed nothing at all: the root (state directory included) and the outside directory.
        expect(snapshotTree(R)).toEqual(rootBefore);
        expect(journalNames()).toEqual(namesBefore);
      } else {
        expect(control).toMatchObject({ outcome: 'ROLLBACK_COMPLETE', files: [{ status: 'restored' }] });
        expect(readFileSync(path.join(R, 'ok.txt'), 'utf8')).toBe('ok old\n');
        // Every refused (and the invalid) entry stays on disk; only the control's entry is gone.
        expect(journalNames()).toEqual(namesBefore.filter((n) => n !== `${ids.control}.json`));
        const after = snapshotTree(R);
        delete after['ok.txt'];
        const before = { ...rootBefore };
        delete before['ok.txt'];
        for (const k of Object.keys(after)) if (k.startsWith('.fs-tools-state')) delete after[k];
        for (const k of Object.keys(before)) if (k.startsWith('.fs-tools-state')) delete before[k];
        expect(after).toEqual(before);
      }
      expect(existsSync(path.join(R, '.git/hooks/pre-commit'))).toBe(false);
      expect(existsSync(path.join(R, '.git/hooks/post-checkout'))).toBe(false);
      expect(readFileSync(path.join(R, 'mixed.txt'), 'utf8')).toBe('mixed new\n');
      expect(snapshotTree(outside)).toEqual(outsideBefore);
    }
  }, 60_000);
});

describe('the state directory inside a root is unreachable through every tool', () => {
  const R = tree({ 'readme.txt': 'MARKER-STATE-b71 readme\n', home: {} }, 'fs-tools-state-root-');
  const state = path.join(R, '.fs-tools-state');
  let client: TestClient;
  let defaultClient: TestClient;
  afterAll(async () => {
    await client?.close();
    await defaultClient?.close();
  });

  it('refuses reads, listings, searches, writes, moves and deletes of it; listings and searches of the root omit it', async () => {
    // A journal entry with a marker, and a link to the state directory planted in the root.
    forge(state, [{ path: path.join(R, 'readme.txt'), old: 'MARKER-STATE-b71 old\n' }]);
    const entryName = readdirSync(path.join(state, 'journal'))[0];
    chmodSync(path.join(state, 'journal', entryName), 0o644);
    // Keep the entry pending (its owner alive: our own parent) so the server leaves it in place.
    const entryPath = path.join(state, 'journal', entryName);
    const entry = JSON.parse(readFileSync(entryPath, 'utf8'));
    entry.pid = process.ppid;
    writeFileSync(entryPath, JSON.stringify(entry));
    symlinkSync('.fs-tools-state', path.join(R, 'state-link'));
    const snapshot = snapshotTree(state);
    client = await connect('modern', { args: ['--state-dir', state, R] });
    const denied = async (tool: string, args: Record<string, unknown>) => {
      const r = await client.call(tool, args);
      expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
      expect(envelopeOf(r).error.code, `${tool} ${JSON.stringify(args)}`).toMatch(/^(FILE_POLICY_DENIED|NOT_FOUND)$/);
      expect(JSON.stringify(r)).not.toContain('MARKER-STATE-b71 old');
    };
    const journalFile = `.fs-tools-state/journal/${entryName}`;
    for (const p of [
      '.fs-tools-state',
      '.fs-tools-state/journal',
      journalFile,
      `state-link/journal/${entryName}`,
      `${state}/journal/${entryName}`,
    ]) {
      await denied('read_file', { path: p });
      await denied('stat', { path: p });
      await denied('list_directory', { path: p });
      await denied('search_files', { path: p, query: 'MARKER' });
      await denied('write_file', { path: p, content: 'x' });
      await denied('delete_path', { path: p, recursive: true });
      await denied('move_path', { source: p, destination: 'elsewhere' });
    }
    await denied('write_file', { path: '.fs-tools-state/journal/new.json', content: '{}' });
    await denied('write_file', { path: 'state-link/journal/new.json', content: '{}' });
    await denied('create_directory', { path: '.fs-tools-state/journal/sub' });
    await denied('edit_file', { path: journalFile, edits: [{ old_text: 'pid', new_text: 'pod' }] });
    await denied('apply_patch', { patch: '--- /dev/null\n+++ b/.fs-tools-state/journal/p.json\n@@ -0,0 +1 @@\n+{}\n' });
    await denied('move_path', { source: 'readme.txt', destination: '.fs-tools-state/journal/r.json' });
    const r = await client.callOk('read_files', { paths: [journalFile, 'readme.txt'] });
    expect(JSON.stringify(r)).not.toContain('MARKER-STATE-b71 old');
    // Listings and searches of the root omit it.
    const listed = await client.callOk('list_directory', { depth: 5, respect_gitignore: false });
    expect(listed.entries.map(listedPath).filter((p: string) => p.startsWith('.fs-tools-state'))).toEqual([]);
    const found = await client.callOk('search_files', { query: 'MARKER-STATE-b71', respect_gitignore: false });
    expect(found.matches.map((m: any) => m.path)).toEqual(['readme.txt']);
    const globbed = await client.callOk('search_files', { glob: '**/*.json', respect_gitignore: false });
    expect(JSON.stringify(globbed)).not.toContain(entryName);
    expect(snapshotTree(state)).toEqual(snapshot);
  });

  it('guards the default state directory when HOME lies inside the root', async () => {
    const home = path.join(R, 'home');
    defaultClient = await connect('modern', { args: [R], env: { HOME: home, XDG_STATE_HOME: '' } });
    for (const p of ['home/.local/state/fs-tools/journal/x.json', 'home/.local/state/fs-tools']) {
      const r = await defaultClient.call('write_file', { path: p, content: '{}' });
      expect(envelopeOf(r).error).toMatchObject({
        code: 'FILE_POLICY_DENIED',
        details: { source: 'builtin', rule: 'state_dir' },
      });
    }
    const moved = await defaultClient.call('move_path', { source: 'home', destination: 'home2' });
    expect(envelopeOf(moved).error).toMatchObject({
      code: 'FILE_POLICY_DENIED',
      details: { rule: 'state_dir', reason: 'contains' },
    });
    expect(existsSync(path.join(R, 'home/.local'))).toBe(false);
  });
});

describe('the audit log inside a root cannot be moved, replaced, edited or redirected', () => {
  it('refuses every tool sequence on it and its directory; after an outside swap its lines still reach the original log', async () => {
    const outside = tree({ bashrc: 'outside original\n' }, 'fs-tools-audit-outside-');
    const R = tree({ logs: {}, evil: {}, 'a.txt': 'a\n' }, 'fs-tools-audit-root-');
    symlinkSync(path.join(outside, 'bashrc'), path.join(R, 'evil', 'audit.log'));
    const log = path.join(R, 'logs', 'audit.log');
    const state = tree({}, 'fs-tools-audit-state-');
    const client = await connect('legacy', { args: ['--state-dir', state, `--audit-log=${log}`, R] });
    try {
      const lines = () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
      const refuse = async (tool: string, args: Record<string, unknown>) => {
        const r = await client.call(tool, args);
        expect(r.isError, `${tool} ${JSON.stringify(args)}`).toBe(true);
        expect(envelopeOf(r).error.code, `${tool} ${JSON.stringify(args)}`).toBe('FILE_POLICY_DENIED');
      };
      await client.callOk('read_file', { path: 'a.txt' });
      const first = lines();
      expect(first).toBeGreaterThanOrEqual(1);
      await refuse('read_file', { path: 'logs/audit.log' });
      await refuse('write_file', { path: 'logs/audit.log', content: '$(rm -rf ~)\n' });
      await refuse('edit_file', { path: 'logs/audit.log', edits: [{ old_text: 'a', new_text: 'b' }] });
      await refuse('delete_path', { path: 'logs/audit.log' });
      await refuse('delete_path', { path: 'logs', recursive: true });
      await refuse('move_path', { source: 'logs/audit.log', destination: 'moved.log' });
      await refuse('move_path', { source: 'logs', destination: 'logs-away' });
      await refuse('move_path', { source: 'evil', destination: 'logs', overwrite: true });
      await refuse('move_path', { source: 'evil/audit.log', destination: 'logs/audit.log', overwrite: true });
      await refuse('move_path', { source: 'a.txt', destination: 'logs/audit.log', overwrite: true });
      await refuse('apply_patch', { patch: '--- a/logs/audit.log\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n' });
      const listed = await client.callOk('list_directory', { depth: 3 });
      expect(listed.entries.map(listedPath)).not.toContain('logs/audit.log');
      const searched = await client.callOk('search_files', { query: 'read_file' });
      expect(searched.matches).toEqual([]);
      expect(lines()).toBeGreaterThan(first);
      // Another process swaps the directory anyway: the server's lines still go to the log it opened.
      renameSync(path.join(R, 'logs'), path.join(R, 'logs-away'));
      renameSync(path.join(R, 'evil'), path.join(R, 'logs'));
      const movedLog = path.join(R, 'logs-away', 'audit.log');
      const before = readFileSync(movedLog, 'utf8').split('\n').filter(Boolean).length;
      await client.call('read_file', { path: '$(touch /tmp/pwned).txt' });
      await client.callOk('read_file', { path: 'a.txt' });
      const after = readFileSync(movedLog, 'utf8').split('\n').filter(Boolean);
      expect(after.length).toBe(before + 2);
      expect(JSON.parse(after[after.length - 2]).paths).toEqual(['$(touch /tmp/pwned).txt']);
      expect(readFileSync(path.join(outside, 'bashrc'), 'utf8')).toBe('outside original\n');
      expect(lstatSync(path.join(R, 'logs', 'audit.log')).isSymbolicLink()).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('refuses to start the log through a symlink (O_NOFOLLOW), reporting it once on stderr', async () => {
    const outside = tree({ bashrc: 'outside original\n' }, 'fs-tools-audit-outside-');
    const R = tree({ 'a.txt': 'a\n' }, 'fs-tools-audit-link-');
    symlinkSync(path.join(outside, 'bashrc'), path.join(R, 'audit.log'));
    const run = await cli([
      `--audit-log=${path.join(R, 'audit.log')}`,
      '--state-dir',
      tree({}, 'fs-tools-st-'),
      '--root',
      R,
      'call',
      'read_file',
      '{"path":"a.txt"}',
    ]);
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/cannot write audit log .*ELOOP/);
    expect(readFileSync(path.join(outside, 'bashrc'), 'utf8')).toBe('outside original\n');
  });
});

describe('path-lock files are neither shown nor reachable', () => {
  it('a leftover lock file is omitted from listings and searches; no tool reads, writes, creates or moves one', async () => {
    const R = tree({ 'a.txt': 'a\n' }, 'fs-tools-lockname-');
    const name = `.fs-tools-lock-${'ab'.repeat(16)}`;
    writeFileSync(
      path.join(R, name),
      JSON.stringify({ pid: 1, host: 'elsewhere', start: null, boot: null, pidns: null }),
    );
    const client = await connect('modern', { args: ['--state-dir', tree({}, 'fs-tools-lockname-state-'), R] });
    try {
      const listed = await client.callOk('list_directory', { respect_gitignore: false });
      expect(listed.entries.map(listedPath)).toEqual(['a.txt']);
      const globbed = await client.callOk('search_files', { glob: '**', respect_gitignore: false });
      expect(JSON.stringify(globbed)).not.toContain('.fs-tools-lock-');
      const searched = await client.callOk('search_files', { query: 'elsewhere', respect_gitignore: false });
      expect(searched.matches).toEqual([]);
      for (const [tool, args] of [
        ['read_file', { path: name }],
        ['write_file', { path: name, content: 'x' }],
        ['write_file', { path: `.fs-tools-lock-${'cd'.repeat(16)}`, content: '{}' }],
        ['create_directory', { path: `.fs-tools-lock-${'ef'.repeat(16)}` }],
        ['move_path', { source: 'a.txt', destination: `.fs-tools-lock-${'01'.repeat(16)}` }],
        ['delete_path', { path: name }],
      ] as const) {
        const r = await client.call(tool, args);
        expect(envelopeOf(r).error, `${tool} ${JSON.stringify(args)}`).toMatchObject({
          code: 'FILE_POLICY_DENIED',
          details: { rule: 'lock_file' },
        });
      }
      // The planted lock belongs to a process on another host: a write to a.txt is not affected (different name).
      await client.callOk('write_file', { path: 'a.txt', content: 'b\n', expected_hash: contentHash('a\n') });
      expect(readdirSync(R).sort()).toEqual([name, 'a.txt'].sort());
    } finally {
      await client.close();
    }
  });
});

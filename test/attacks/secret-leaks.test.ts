/**
 * Attack: secret exfiltration (SPEC §4.2, §3 "secrets never appear in an envelope", §9; issue 7). A real git work
 * tree holds secret files with unique markers — `.env`, `.ENV` (a different file on Linux), `id_ed25519`, `x.pem`,
 * `.aws/credentials`, `config/.env.local` — and `notes.txt`, a symlink to `.env`. Some are modified in the work tree,
 * one is modified and staged, and `id_ed25519` is staged as renamed to a harmless name with its marker line removed
 * (git pairs the two, so the rename's removed lines are the secret's). Without
 * --allow-secrets, against the real server process (dist/cli.js) of both eras with --audit-log, every tool is called
 * with every action that touches them: reads (every spelling: relative, `./`, `dir/..`, absolute, the symlink,
 * base64, head/tail/offset), read_files, content search with each marker as the query (literal, regex, case-
 * insensitive, with context, on the secret file itself, on `.aws`, ignoring .gitignore), glob search, listings, stat,
 * dry runs and real attempts of write_file / edit_file / apply_patch (modify, create, delete, rename, through the
 * link) / move_path / delete_path (the file, a tree holding one), create_directory under one, git_status, git_diff
 * (unstaged, staged, a paths filter, tiny pages), the issue tools resolving a repository from a secret's path, and
 * error paths (bad arguments next to a secret path, a path through a secret file, a hash mismatch, a conflicting
 * option). Pins, for every call:
 *  - no marker appears in any output: result text, structuredContent, envelopes, base64 content decoded, the
 *    server's stderr, and the audit log;
 *  - neither the sha256 content hash nor the git blob id of any secret file's bytes appears either (a hash of a
 *    short secret is as good as the secret);
 *  - every secret file still holds its bytes at the end (nothing was written, moved or deleted).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ERAS, type CallResult, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const TAG = randomBytes(6).toString('hex');
/** Plain tokens (no `KEY=` shape), so the credential redactor cannot hide a leak from this test. */
const marker = (n: number): string => `SECRETMARK${TAG}N${n}Z`;

/** Lines the secret id_ed25519 shares with the harmless file it is renamed to. */
const SHARED = Array.from({ length: 12 }, (_, i) => `shared line ${i}\n`).join('');

/** Secret path → its content. */
const SECRETS: Record<string, string> = {
  '.env': `${marker(1)}\nalpha\n`,
  '.ENV': `${marker(2)}\nalpha\n`,
  // Mostly lines a harmless file keeps: renamed and changed (the marker line dropped), git pairs it as a rename.
  id_ed25519: `${marker(3)}\nalpha\n${SHARED}`,
  'x.pem': `${marker(4)}\nalpha\n`,
  '.aws/credentials': `${marker(5)}\nalpha\n`,
  'config/.env.local': `${marker(6)}\nalpha\n`,
};
/** Markers written into the work tree after the commit (modified and staged secrets). */
const LATER = { env: marker(7), pem: marker(8), aws: marker(9) };
/** Every marker, and their common prefix (a cut or partial marker is a leak too). */
const ALL_MARKERS = [...Array.from({ length: 9 }, (_, i) => marker(i + 1)), `SECRETMARK${TAG}`];

function git(cwd: string, ...args: string[]): string {
  return execFileSync(
    'git',
    ['-c', 'init.defaultBranch=main', '-c', 'user.name=t', '-c', 'user.email=t@example.invalid', ...args],
    { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } },
  );
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const blobId = (b: Buffer) =>
  createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${b.length}\0`), b]))
    .digest('hex');

describe.each(ERAS)('secrets never leak without --allow-secrets (%s era)', (era) => {
  const tree = makeTree({ 'readme.txt': 'hello alpha\n', docs: { 'guide.md': 'guide alpha\n' } }, 'fs-tools-secrets-');
  const aux = makeTree({}, 'fs-tools-secrets-aux-');
  const R = tree.dir;
  const auditLog = path.join(aux.dir, 'audit.jsonl');
  const stateDir = path.join(aux.dir, 'state');
  let client: TestClient;
  /** Everything a client could see, call by call. */
  const outputs: Array<{ call: string; text: string }> = [];
  /** Hashes of every version of every secret's bytes. */
  const forbiddenHashes: string[] = [];

  const remember = (bytes: Buffer) => {
    forbiddenHashes.push(sha256(bytes), blobId(bytes));
  };

  beforeAll(async () => {
    for (const [rel, content] of Object.entries(SECRETS)) {
      mkdirSync(path.dirname(path.join(R, rel)), { recursive: true });
      writeFileSync(path.join(R, rel), content);
      remember(Buffer.from(content));
    }
    symlinkSync('.env', path.join(R, 'notes.txt'));
    git(R, 'init', '-q');
    git(R, 'add', '-A');
    git(R, 'commit', '-q', '-m', 'with secrets');
    // Work-tree changes to secrets (unstaged), one staged change, one staged rename of a secret to a harmless name.
    writeFileSync(path.join(R, '.env'), `${marker(1)}\n${LATER.env}\nalpha\n`);
    writeFileSync(path.join(R, '.aws/credentials'), `${marker(5)}\n${LATER.aws}\nalpha\n`);
    writeFileSync(path.join(R, 'x.pem'), `${marker(4)}\n${LATER.pem}\nalpha\n`);
    git(R, 'add', 'x.pem');
    git(R, 'mv', 'id_ed25519', 'renamed.txt');
    writeFileSync(path.join(R, 'renamed.txt'), `alpha\n${SHARED}one more line\n`);
    git(R, 'add', 'renamed.txt');
    writeFileSync(path.join(R, 'readme.txt'), 'hello alpha\nchanged\n');
    for (const rel of ['.env', '.aws/credentials', 'x.pem']) remember(readFileSync(path.join(R, rel)));
    client = await connect(era, { args: ['--state-dir', stateDir, `--audit-log=${auditLog}`, R] });
  });
  afterAll(async () => {
    await client?.close();
    tree.cleanup();
    aux.cleanup();
  });

  /** Calls and records what the client sees (and the decoded form of any base64 content). */
  async function see(tool: string, args: Record<string, unknown>): Promise<CallResult> {
    const result = await client.call(tool, args);
    let text = JSON.stringify(result);
    const s = result.structuredContent as Record<string, any> | undefined;
    const decode = (r: Record<string, any> | undefined) => {
      if (r?.encoding === 'base64' && typeof r.content === 'string')
        text += `\n${Buffer.from(r.content, 'base64').toString('latin1')}`;
    };
    decode(s);
    for (const e of (s?.results ?? []) as Array<Record<string, any>>) decode(e.result);
    const call = `${tool} ${JSON.stringify(args).slice(0, 200)}`;
    outputs.push({ call, text });
    // Each collector checks what it collects (issue 11 item 8): a test run alone still fails on its own leak.
    expect(leaksIn(call, text)).toEqual([]);
    return result;
  }

  /** Markers and secret hashes found in one text (empty when clean). */
  function leaksIn(label: string, text: string): string[] {
    const leaks: string[] = [];
    for (const m of ALL_MARKERS) if (text.includes(m)) leaks.push(`${label}: marker ${m}`);
    for (const h of forbiddenHashes) if (text.includes(h)) leaks.push(`${label}: hash ${h}`);
    return leaks;
  }

  /**
   * What every collecting test ends with: it made calls, and neither stderr nor the audit log so far holds a marker
   * or a secret hash, and the audit log has a line for each of its calls.
   */
  function checkCollected(before: number): void {
    expect(outputs.length).toBeGreaterThan(before);
    expect([...leaksIn('stderr', client.stderr()), ...leaksIn('audit log', readFileSync(auditLog, 'utf8'))]).toEqual(
      [],
    );
    expect(readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(outputs.length);
    // Every secret still holds its bytes.
    expect(readFileSync(path.join(R, '.env'), 'utf8')).toBe(`${marker(1)}\n${LATER.env}\nalpha\n`);
    expect(readFileSync(path.join(R, 'x.pem'), 'utf8')).toBe(`${marker(4)}\n${LATER.pem}\nalpha\n`);
    expect(readFileSync(path.join(R, 'config/.env.local'), 'utf8')).toBe(SECRETS['config/.env.local']);
  }

  // (renamed.txt is not among them: a harmless name, readable by design since names decide; git_diff must still
  // withhold its rename, whose removed lines are the secret's.)
  const secretPaths = ['.env', '.ENV', 'x.pem', '.aws/credentials', 'config/.env.local', 'notes.txt'];
  /** Every spelling of the secrets a caller might try. */
  const spellings = () => [
    ...secretPaths,
    './.env',
    'docs/../.env',
    `${R}/.env`,
    `${R}//.aws/./credentials`,
    '.aws/../.env',
    '.Env',
    'NOTES.TXT',
  ];

  it('reads, read_files and stat refuse or show metadata only', async () => {
    const before = outputs.length;
    for (const p of spellings()) {
      await see('read_file', { path: p });
      await see('read_file', { path: p, encoding: 'base64' });
      await see('read_file', { path: p, tail: 1 });
      await see('read_file', { path: p, offset: 3, max_bytes: 5 });
      await see('stat', { path: p });
      await see('stat', { path: p, hash: true });
    }
    await see('read_files', { paths: [...spellings(), 'readme.txt'] });
    await see('read_files', { paths: secretPaths, encoding: 'base64' });
    checkCollected(before);
  });

  it('content search with every marker as the query finds nothing and counts the skipped secrets', async () => {
    const before = outputs.length;
    for (const m of ALL_MARKERS) {
      for (const extra of [
        {},
        { case_sensitive: false },
        { context_lines: 3 },
        { respect_gitignore: false },
        { include: ['*'] },
      ]) {
        const r = await see('search_files', { query: m, ...extra });
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
        expect((r.structuredContent as any).matches).toEqual([]);
        expect((r.structuredContent as any).skipped.secret).toBeGreaterThanOrEqual(5);
      }
    }
    const regex = await see('search_files', { query: `SECRETMARK[0-9a-f]+N\\d+Z`, regex: true });
    expect(regex.isError, JSON.stringify(regex)).toBeFalsy();
    expect((regex.structuredContent as any).matches).toEqual([]);
    await see('search_files', { query: 'alpha', context_lines: 5 });
    await see('search_files', { query: '.', regex: true, context_lines: 2 });
    for (const p of ['.env', '.aws', '.aws/credentials', 'notes.txt', 'config', 'x.pem']) {
      await see('search_files', { path: p, query: marker(1) });
      await see('search_files', { path: p, query: 'alpha', context_lines: 2 });
      await see('search_files', { path: p, glob: '**' });
    }
    await see('search_files', { glob: '**', respect_gitignore: false });
    await see('search_files', { glob: '*.pem' });
    checkCollected(before);
  });

  it('listings show secret names, never contents', async () => {
    const before = outputs.length;
    for (const p of ['.', '.aws', 'config', 'notes.txt']) {
      await see('list_directory', { path: p, depth: 5, respect_gitignore: false });
      await see('list_directory', { path: p, depth: 5, include: ['*'] });
    }
    const list = await see('list_directory', { depth: 3 });
    const names = (list.structuredContent as any).entries.filter((e: any) => e.secret).map((e: any) => e.path);
    expect(names).toEqual(expect.arrayContaining(['.env', '.ENV', 'x.pem', '.aws/credentials', 'config/.env.local']));
    checkCollected(before);
  });

  it('mutations, dry or not, refuse secrets and never echo their bytes', async () => {
    const before = outputs.length;
    for (const p of [...secretPaths, './.env', `${R}/.aws/credentials`]) {
      // notes.txt is a link, not a secret: moving or deleting the link itself is allowed, so it only gets dry runs here.
      for (const dry of p === 'notes.txt' ? [true] : [true, false]) {
        await see('write_file', { path: p, content: 'overwritten\n', dry_run: dry });
        await see('edit_file', { path: p, edits: [{ old_text: 'alpha', new_text: 'beta' }], dry_run: dry });
        await see('edit_file', { path: p, edits: [{ old_text: 'no such text', new_text: 'x' }], dry_run: dry });
        await see('delete_path', { path: p, dry_run: dry, expected_hash: `sha256:${'0'.repeat(64)}` });
        await see('move_path', { source: p, destination: 'public.txt', dry_run: dry });
      }
    }
    const modify = (p: string, old = 'alpha') => `--- a/${p}\n+++ b/${p}\n@@ -1 +1 @@\n-${old}\n+beta\n`;
    const patches = [
      modify('.env'),
      modify('notes.txt'),
      modify('x.pem'),
      modify('.aws/credentials'),
      modify('.ENV', 'nothing'),
      '--- /dev/null\n+++ b/.env.production\n@@ -0,0 +1 @@\n+new secret\n',
      `--- a/x.pem\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-${marker(4)}\n-${LATER.pem}\n-alpha\n`,
      'diff --git a/.env b/public.txt\nsimilarity index 100%\nrename from .env\nrename to public.txt\n',
      `${modify('readme.txt', 'hello alpha')}${modify('.env')}`,
      `${modify('readme.txt', 'no such line')}${modify('.env')}`,
    ];
    for (const patch of patches) {
      for (const dry of [true, false]) await see('apply_patch', { patch, dry_run: dry });
    }
    await see('apply_patch', { patch: '@@ -1 +1 @@\n-alpha\n+beta\n', path: '.env', dry_run: true });
    await see('apply_patch', { patch: '@@ -1 +1 @@\n-alpha\n+beta\n', path: 'notes.txt' });
    await see('move_path', { source: 'readme.txt', destination: '.env', overwrite: true, dry_run: true });
    await see('move_path', { source: 'readme.txt', destination: 'config/.env.local', overwrite: true });
    await see('delete_path', { path: '.aws', recursive: true, dry_run: true });
    await see('delete_path', { path: 'config', recursive: true });
    await see('create_directory', { path: '.aws/credentials/sub' });
    await see('create_directory', { path: '.env/x' });
    checkCollected(before);
  });

  it('git_status and git_diff list secrets as omitted, never their diff', async () => {
    const before = outputs.length;
    const status = await see('git_status', {});
    expect(status.isError, JSON.stringify(status)).toBeFalsy();
    const unstaged = await see('git_diff', {});
    expect(unstaged.isError, JSON.stringify(unstaged)).toBeFalsy();
    const files = (unstaged.structuredContent as any).files as Array<{ path: string; omitted?: string }>;
    expect(files.find((f) => f.path === '.env')?.omitted).toBe('secret');
    expect(files.find((f) => f.path === '.aws/credentials')?.omitted).toBe('secret');
    expect(files.find((f) => f.path === 'readme.txt')?.omitted).toBeUndefined();
    const staged = await see('git_diff', { staged: true });
    const stagedFiles = (staged.structuredContent as any).files as Array<{
      path: string;
      old_path?: string;
      omitted?: string;
    }>;
    expect(stagedFiles.find((f) => f.path === 'x.pem')?.omitted).toBe('secret');
    // A secret renamed (and changed) to a harmless name: the old name makes the whole rename withheld.
    expect(stagedFiles.find((f) => f.path === 'renamed.txt')).toMatchObject({
      old_path: 'id_ed25519',
      omitted: 'secret',
    });
    for (const args of [
      { paths: ['.env'] },
      { paths: ['.aws', 'notes.txt'] },
      { staged: true, paths: ['x.pem', 'renamed.txt'] },
      { context_lines: 100 },
      { staged: true, context_lines: 0 },
      { path: '.env' },
      { path: '.aws/credentials', staged: true },
    ]) {
      await see('git_diff', args);
    }
    // Tiny pages: every page, placeholders cut mid-line included.
    for (const staged of [false, true]) {
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r = await see('git_diff', { staged, max_bytes: 61, ...(cursor ? { cursor } : {}) });
        expect(r.isError, JSON.stringify(r)).toBeFalsy();
        cursor = (r.structuredContent as any).next_cursor;
      } while (cursor && ++pages < 500);
    }
    await see('git_status', { path: '.env' });
    await see('git_status', { path: 'notes.txt' });
    checkCollected(before);
  });

  it('list_allowed_directories, issue tools resolving a repository from a secret path, and error paths', async () => {
    const before = outputs.length;
    await see('list_allowed_directories', {});
    for (const tool of ['github_issues', 'gitlab_issues']) {
      for (const p of ['.env', 'notes.txt', '.aws/credentials']) {
        await see(tool, { action: 'list', path: p });
        await see(tool, { action: 'view', number: 1, path: p });
        await see(tool, { action: 'create', title: 'from a secret path', path: p });
        await see(tool, { action: 'comment', number: 1, body: 'hello', path: p });
        await see(tool, { action: 'close', number: 1, path: p });
      }
    }
    await see('read_file', { path: '.env', colour: 'red' });
    await see('read_file', { path: '.env', head: 0 });
    await see('read_file', { path: '.env', head: 1, tail: 1 });
    await see('read_file', { path: '.env/x' });
    await see('read_file', { path: 'notes.txt/' });
    await see('read_file', { path: '.aws/credentials/../credentials' });
    await see('edit_file', { path: '.env', edits: [{ old_text: '', new_text: 'x' }] });
    await see('write_file', { path: '.env', content: 'x', content_base64: 'eA==' });
    await see('write_file', { path: '.env', content: 'x', expected_hash: 'absent' });
    await see('search_files', { path: '.env', query: '(a+)+$', regex: true });
    await see('search_files', { path: '.env' });
    await see('list_directory', { path: '.env' });
    await see('stat', { path: '.env/' });
    checkCollected(before);
  });

  it('no marker or secret hash in any output, stderr or the audit log; every secret keeps its bytes', async () => {
    expect(outputs.length).toBeGreaterThan(300);
    const leaks: string[] = [];
    for (const o of outputs) {
      for (const m of ALL_MARKERS) if (o.text.includes(m)) leaks.push(`${o.call}: marker ${m}`);
      for (const h of forbiddenHashes) if (o.text.includes(h)) leaks.push(`${o.call}: hash ${h}`);
    }
    const stderr = client.stderr();
    const audit = readFileSync(auditLog, 'utf8');
    for (const [name, text] of [
      ['stderr', stderr],
      ['audit log', audit],
    ] as const) {
      for (const m of ALL_MARKERS) if (text.includes(m)) leaks.push(`${name}: marker ${m}`);
      for (const h of forbiddenHashes) if (text.includes(h)) leaks.push(`${name}: hash ${h}`);
    }
    expect(leaks).toEqual([]);
    expect(audit.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(outputs.length);
    expect(stderr).not.toMatch(/INTERNAL|incident/);
    // Nothing was written, moved or deleted.
    expect(readFileSync(path.join(R, '.env'), 'utf8')).toBe(`${marker(1)}\n${LATER.env}\nalpha\n`);
    expect(readFileSync(path.join(R, '.ENV'), 'utf8')).toBe(SECRETS['.ENV']);
    expect(readFileSync(path.join(R, 'x.pem'), 'utf8')).toBe(`${marker(4)}\n${LATER.pem}\nalpha\n`);
    expect(readFileSync(path.join(R, '.aws/credentials'), 'utf8')).toBe(`${marker(5)}\n${LATER.aws}\nalpha\n`);
    expect(readFileSync(path.join(R, 'config/.env.local'), 'utf8')).toBe(SECRETS['config/.env.local']);
    expect(lstatSync(path.join(R, 'notes.txt')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(R, 'notes.txt'))).toBe('.env');
    expect(() => lstatSync(path.join(R, '.env.production'))).toThrow(/ENOENT/);
    expect(() => lstatSync(path.join(R, 'public.txt'))).toThrow(/ENOENT/);
  });
});

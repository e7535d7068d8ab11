/**
 * replace_in_files (issue 18, "Replace across files") end to end through real server processes of both protocol
 * eras. Pins: a preview (dry_run) returns per-file diffs, counts and current hashes and writes nothing; applying with
 * those hashes changes exactly the previewed files; a file changed after the preview is OCC_MISMATCH naming it with
 * nothing written; a file that gained matches after the preview is left alone (not_previewed); secret, gitignored,
 * policy read-only and .git files are never touched (skipped and counted); a regex is bounded (regex_timeout, nothing
 * written); caps give truncated; the order of checks (VALIDATION before READONLY before BUDGET_EXCEEDED before
 * NOT_ALLOWED); --readonly does not list it and refuses it; one budget unit per applying call, none for a preview; the
 * whole replacement is one undo change; a replacement killed part-way recovers to nothing applied after a restart.
 * Under both eras except, once each: the regex bound (modern; it spends the whole REGEX_FILE_TIMEOUT_MS of a reader
 * thread), the budget (modern), the policy and the crash recovery — what they prove is the server's work (its bound,
 * its count of units, the files on disk), whichever client asks; --readonly runs under both (it changes tools/list).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { CLI, connect, SEAMS_CLI, ERAS, inEra, type Era, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const TREE = {
  src: { 'a.ts': 'const foo = 1;\nfoo();\n', 'b.ts': 'let x = foo;\r\n', 'c.md': 'no match here\n' },
  docs: { 'd.md': 'foo in docs\n' },
  '.env': 'TOKEN=foo\n',
  '.gitignore': 'build/\n',
  build: { 'out.js': 'foo\n' },
  '.git': { config: '[core]\nfoo = 1\n', hooks: { 'pre-commit': 'foo\n' } },
  'bin.dat': Buffer.from([0x66, 0x6f, 0x6f, 0x00, 0x01]),
};

function start(era: Era, root: string, state: string, flags: string[] = []): Promise<TestClient> {
  return connect(era, { args: ['--state-dir', state, ...flags, root] });
}

describe.each(ERAS)('replace_in_files (%s era)', (era) => {
  const modernOnly = inEra(era, 'modern', it);
  let R: string;
  let S: string;
  let client: TestClient;
  const cleanups: Array<() => void> = [];
  beforeAll(async () => {
    const r = makeTree(TREE);
    const s = makeTree();
    cleanups.push(r.cleanup, s.cleanup);
    R = r.dir;
    S = s.dir;
    client = await start(era, R, S);
  });
  afterAll(async () => {
    await client.close();
    for (const c of cleanups) c();
  });
  const read = (name: string) => readFileSync(path.join(R, name), 'utf8');

  it('previews without writing, then applies exactly the preview with its hashes; one undo change reverts it', async () => {
    const before = snapshotTree(R);
    const dry = await client.callOk('replace_in_files', { query: 'foo', replacement: 'bar', dry_run: true });
    expect(snapshotTree(R)).toEqual(before);
    expect(dry.files.map((f: { path: string }) => f.path)).toEqual(['docs/d.md', 'src/a.ts', 'src/b.ts']);
    expect(dry.files[1]).toMatchObject({
      replacements: 2,
      previous_hash: contentHash('const foo = 1;\nfoo();\n'),
      content_hash: contentHash('const bar = 1;\nbar();\n'),
    });
    expect(dry.files[1].diff).toContain('-const foo = 1;');
    expect(dry.files[1].diff).toContain('+const bar = 1;');
    expect(dry.replacements).toBe(4);
    // .env (secret) and bin.dat (binary) are counted; build/ (gitignored) and .git are never walked.
    expect(dry.skipped).toMatchObject({ secret: 1, binary: 1 });
    expect(dry.truncated).toBe(false);

    const expected_hashes = Object.fromEntries(
      dry.files.map((f: { path: string; previous_hash: string }) => [f.path, f.previous_hash]),
    );
    const done = await client.callOk('replace_in_files', { query: 'foo', replacement: 'bar', expected_hashes });
    expect(done.files.map((f: { content_hash: string }) => f.content_hash)).toEqual(
      dry.files.map((f: { content_hash: string }) => f.content_hash),
    );
    expect(read('src/a.ts')).toBe('const bar = 1;\nbar();\n');
    expect(read('src/b.ts')).toBe('let x = bar;\r\n'); // CRLF kept
    expect(read('docs/d.md')).toBe('bar in docs\n');
    expect(read('.env')).toBe('TOKEN=foo\n');
    expect(read('build/out.js')).toBe('foo\n');
    expect(read('.git/config')).toBe('[core]\nfoo = 1\n');
    expect(read('.git/hooks/pre-commit')).toBe('foo\n');

    // One change in the history, reverted as a whole.
    const listed = await client.callOk('list_changes', { limit: 1 });
    expect(listed.changes[0].tool).toBe('replace_in_files');
    expect(listed.changes[0].files).toHaveLength(3);
    await client.callOk('revert_changes', { change_id: listed.changes[0].id });
    expect(read('src/a.ts')).toBe('const foo = 1;\nfoo();\n');
    expect(read('src/b.ts')).toBe('let x = foo;\r\n');
    expect(read('docs/d.md')).toBe('foo in docs\n');
  });

  it('refuses to apply a preview after one of its files moved (OCC_MISMATCH naming it), writing nothing', async () => {
    const dry = await client.callOk('replace_in_files', {
      path: 'src',
      query: 'foo',
      replacement: 'baz',
      dry_run: true,
    });
    const expected_hashes = Object.fromEntries(
      dry.files.map((f: { path: string; previous_hash: string }) => [f.path, f.previous_hash]),
    );
    writeFileSync(path.join(R, 'src/b.ts'), 'let x = foo; // theirs\r\n');
    const before = snapshotTree(R);
    const e = expectCode(
      await client.call('replace_in_files', { path: 'src', query: 'foo', replacement: 'baz', expected_hashes }),
      'OCC_MISMATCH',
    );
    expect(e.error.path).toBe(path.join(R, 'src/b.ts'));
    expect(e.error.current_hash).toBe(contentHash('let x = foo; // theirs\r\n'));
    expect(snapshotTree(R)).toEqual(before); // a.ts untouched too
    writeFileSync(path.join(R, 'src/b.ts'), 'let x = foo;\r\n');
  });

  it('leaves alone a file that gained matches after the preview (not_previewed)', async () => {
    const dry = await client.callOk('replace_in_files', { path: 'src', query: 'foo', replacement: 'q', dry_run: true });
    const expected_hashes = Object.fromEntries(
      dry.files.map((f: { path: string; previous_hash: string }) => [f.path, f.previous_hash]),
    );
    writeFileSync(path.join(R, 'src/c.md'), 'now foo\n');
    const done = await client.callOk('replace_in_files', {
      path: 'src',
      query: 'foo',
      replacement: 'q',
      expected_hashes,
    });
    expect(done.skipped.not_previewed).toBe(1);
    expect(read('src/c.md')).toBe('now foo\n');
    expect(read('src/a.ts')).toBe('const q = 1;\nq();\n');
    await client.callOk('revert_changes', { last: 1 });
    writeFileSync(path.join(R, 'src/c.md'), 'no match here\n');
  });

  it('expands regex groups, keeps literal replacements as typed, caps with truncated', async () => {
    const re = await client.callOk('replace_in_files', {
      path: 'src/a.ts',
      query: '(\\w+) = (\\d)',
      regex: true,
      replacement: '$2 = $1',
      dry_run: true,
    });
    expect(re.files[0].path).toBe('a.ts');
    expect(re.files[0].diff).toContain('+const 1 = foo;');
    const lit = await client.callOk('replace_in_files', {
      path: 'src/a.ts',
      query: 'foo',
      replacement: '$&$1',
      dry_run: true,
    });
    expect(lit.files[0].diff).toContain('+const $&$1 = 1;');
    const capped = await client.callOk('replace_in_files', {
      query: 'foo',
      replacement: 'x',
      max_files: 1,
      dry_run: true,
    });
    expect(capped.files).toHaveLength(1);
    expect(capped.truncated).toBe(true);
  });

  it('skips a file with more matches than max_replacements (too_many_matches), replacing the others', async () => {
    mkdirSync(path.join(R, 'counts'));
    writeFileSync(path.join(R, 'counts', 'many.txt'), 'zz '.repeat(30) + '\n');
    writeFileSync(path.join(R, 'counts', 'few.txt'), 'zz zz\n');
    const args = { path: 'counts', query: 'zz', replacement: 'y', max_replacements: 20 };
    const dry = await client.callOk('replace_in_files', { ...args, dry_run: true });
    expect(dry).toMatchObject({ files: [{ path: 'few.txt', replacements: 2 }], truncated: false });
    expect(dry.skipped).toMatchObject({ too_many_matches: 1, too_large: 0 });
    const done = await client.callOk('replace_in_files', {
      ...args,
      expected_hashes: { 'few.txt': dry.files[0].previous_hash },
    });
    expect(done).toMatchObject({ replacements: 2, truncated: false, skipped: { too_many_matches: 1 } });
    expect(read('counts/few.txt')).toBe('y y\n');
    expect(read('counts/many.txt')).toBe('zz '.repeat(30) + '\n');
    // Raised to cover it, the file is replaced.
    const raised = await client.callOk('replace_in_files', { ...args, max_replacements: 30, dry_run: true });
    expect(raised).toMatchObject({ files: [{ path: 'many.txt', replacements: 30 }], skipped: { too_many_matches: 0 } });
  });

  modernOnly('bounds a regular expression like search_files (regex_timeout), writing nothing', async () => {
    writeFileSync(path.join(R, 'src/slow.txt'), `${'a'.repeat(40)}!\n`);
    const before = snapshotTree(R);
    const e = expectCode(
      await client.call('replace_in_files', {
        path: 'src/slow.txt',
        query: '(a+)+$',
        regex: true,
        replacement: 'x',
        expected_hashes: { 'slow.txt': contentHash(`${'a'.repeat(40)}!\n`) },
      }),
      'VALIDATION',
    );
    expect(e.error.details.reason).toBe('regex_timeout');
    expect(snapshotTree(R)).toEqual(before);
  });

  it('checks in SPEC §3.3 order: VALIDATION, then path checks; the .git directory is refused', async () => {
    const before = snapshotTree(R);
    expectCode(
      await client.call('replace_in_files', { path: '/etc', query: '(', regex: true, replacement: 'x' }),
      'VALIDATION',
    );
    expectCode(await client.call('replace_in_files', { path: '/etc', query: 'x', replacement: 'y' }), 'NOT_ALLOWED');
    expectCode(
      await client.call('replace_in_files', { path: '.git', query: 'foo', replacement: 'y', dry_run: true }),
      'FILE_POLICY_DENIED',
    );
    expectCode(
      await client.call('replace_in_files', { path: '.env', query: 'foo', replacement: 'y' }),
      'SECRET_DENIED',
    );
    expect(snapshotTree(R)).toEqual(before);
  });
});

describe.each(ERAS)('replace_in_files gates (%s era)', (era) => {
  const modernOnly = inEra(era, 'modern', it);
  it('--readonly: not listed, refused after validation', async () => {
    const r = makeTree({ 'a.txt': 'foo\n', 'b.txt': 'foo\n' });
    const s = makeTree();
    try {
      const ro = await start(era, r.dir, s.dir, ['--readonly']);
      try {
        expect((await ro.listTools()).map((t) => t.name)).not.toContain('replace_in_files');
        expectCode(await ro.call('replace_in_files', { query: '(', regex: true, replacement: 'x' }), 'VALIDATION');
        expectCode(await ro.call('replace_in_files', { query: 'foo', replacement: 'x', dry_run: true }), 'READONLY');
        expect(readFileSync(path.join(r.dir, 'a.txt'), 'utf8')).toBe('foo\n');
      } finally {
        await ro.close();
      }
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });

  modernOnly('the budget counts applying calls only', async () => {
    const r = makeTree({ 'a.txt': 'foo\n', 'b.txt': 'foo\n' });
    const s = makeTree();
    try {
      const budget = await start(era, r.dir, s.dir, ['--mutation-budget=1', '--auto-occ=off']);
      try {
        await budget.callOk('replace_in_files', { query: 'foo', replacement: 'x', dry_run: true });
        await budget.callOk('replace_in_files', { path: 'a.txt', query: 'foo', replacement: 'bar' });
        const before = snapshotTree(r.dir);
        expectCode(
          await budget.call('replace_in_files', { path: '/etc', query: 'foo', replacement: 'x' }),
          'BUDGET_EXCEEDED',
        );
        expect(snapshotTree(r.dir)).toEqual(before);
        expect(readFileSync(path.join(r.dir, 'b.txt'), 'utf8')).toBe('foo\n');
      } finally {
        await budget.close();
      }
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });
});

describe('replace_in_files: policy and crash recovery', () => {
  it('skips and counts files the policy makes read-only, writing the others', async () => {
    const r = makeTree({ 'keep.txt': 'foo\n', 'mine.txt': 'foo\n' });
    const s = makeTree();
    const pol = makeTree({ 'policy.json': JSON.stringify({ rules: [{ pattern: 'keep.txt', access: 'read_only' }] }) });
    try {
      const c = await start('modern', r.dir, s.dir, [
        `--policy=${path.join(pol.dir, 'policy.json')}`,
        '--auto-occ=off',
      ]);
      try {
        const done = await c.callOk('replace_in_files', { query: 'foo', replacement: 'bar' });
        expect(done.skipped.policy).toBe(1);
        expect(done.files.map((f: { path: string }) => f.path)).toEqual(['mine.txt']);
        expect(readFileSync(path.join(r.dir, 'keep.txt'), 'utf8')).toBe('foo\n');
        expect(readFileSync(path.join(r.dir, 'mine.txt'), 'utf8')).toBe('bar\n');
      } finally {
        await c.close();
      }
    } finally {
      r.cleanup();
      s.cleanup();
      pol.cleanup();
    }
  });

  it('a replacement killed part-way recovers to nothing applied after a restart', () => {
    const r = makeTree({ 'k1.txt': 'one foo\n', 'k2.txt': 'two foo\n' });
    const s = makeTree();
    try {
      const args = {
        query: 'foo',
        replacement: 'bar',
        expected_hashes: { 'k1.txt': contentHash('one foo\n'), 'k2.txt': contentHash('two foo\n') },
      };
      // --test-seams=kill-at:2: SIGKILL right after the first file's rename (src/patch/transaction.ts seam; the
      // seams test build).
      const killed = spawnSync(
        process.execPath,
        [
          SEAMS_CLI,
          '--test-seams=kill-at:2',
          '--state-dir',
          s.dir,
          '--root',
          r.dir,
          'call',
          'replace_in_files',
          JSON.stringify(args),
        ],
        { encoding: 'utf8' },
      );
      expect(killed.signal).toBe('SIGKILL');
      expect(readFileSync(path.join(r.dir, 'k1.txt'), 'utf8')).toBe('one bar\n'); // the kill landed mid-transaction
      expect(readFileSync(path.join(r.dir, 'k2.txt'), 'utf8')).toBe('two foo\n');
      const restart = spawnSync(
        process.execPath,
        [CLI, '--state-dir', s.dir, '--root', r.dir, 'call', 'list_changes', '{}'],
        { encoding: 'utf8' },
      );
      expect(readFileSync(path.join(r.dir, 'k1.txt'), 'utf8')).toBe('one foo\n');
      expect(readFileSync(path.join(r.dir, 'k2.txt'), 'utf8')).toBe('two foo\n');
      // The killed replacement was never recorded as a change.
      expect(JSON.parse(restart.stdout).changes, restart.stderr).toEqual([]);
    } finally {
      r.cleanup();
      s.cleanup();
    }
  });
});

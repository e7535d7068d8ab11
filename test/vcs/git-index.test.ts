/**
 * The server's index reader (src/vcs/git-index.ts; docs/security.md "What git may read"):
 * - `indexPathProblem` is git's checkout path rule with the NTFS and HFS protections on, plus NUL;
 * - `validateIndex` accepts what real git writes (versions 2, 3 and 4, extensions, index.skipHash, sha256) and its
 *   rebuilt copy reads back in git exactly as the original (`git ls-files --stage`, `git status`);
 * - everything it does not understand fails closed: bad signature or checksum, truncation, a name length that
 *   disagrees with the NUL, unsorted or repeated entries, unknown modes, flags and versions, split and sparse indexes,
 *   an unknown required extension, v4 prefix compression dropping more than the previous name.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IndexRejection, indexPathProblem, validateIndex } from '../../src/vcs/git-index.js';
import { Slicer } from '../../src/vcs/slicer.js';
import { blobId, buildIndex, type IndexSpec } from '../helpers/git-index.js';

const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-gitindex-test-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]): string {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      HOME: base,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e.invalid',
    },
  });
}

const validate = (bytes: Buffer, hashBytes: 20 | 32 = 20) => validateIndex(bytes, hashBytes, new Slicer());
async function rejection(spec: IndexSpec | Buffer): Promise<IndexRejection> {
  const bytes = Buffer.isBuffer(spec) ? spec : buildIndex(spec);
  const error: unknown = await validate(bytes).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(IndexRejection);
  return error as IndexRejection;
}

const EMPTY = blobId('');

describe('indexPathProblem (git verify_path, NTFS and HFS protections on)', () => {
  it.each([
    'a',
    'a/b.txt',
    '.gitignore',
    '.gitattributes',
    '.github/workflows/ci.yml',
    'x/.gitkeep',
    'git~2',
    '.gitx/y',
    '..a',
    'a..',
    'foo\\bar.txt',
    'ä/ö.txt',
    'a b/c d',
    '.g\u200cx',
  ])('accepts %j', (p) => expect(indexPathProblem(Buffer.from(p))).toBeNull());

  it.each([
    ['', 'empty'],
    ['a\0b', 'nul'],
    ['/etc/hostname', 'absolute'],
    ['a/', 'trailing_slash'],
    ['a//b', 'empty_component'],
    ['./a', 'dot_component'],
    ['a/./b', 'dot_component'],
    ['../outside/notes.txt', 'dotdot_component'],
    ['x/../../y', 'dotdot_component'],
    ['a/..', 'dotdot_component'],
    ['.git/config', 'dot_git'],
    ['.GIT/config', 'dot_git'],
    ['sub/.Git/hooks/x', 'dot_git'],
    ['.git', 'dot_git'],
    ['.git./config', 'dot_git'],
    ['.git /config', 'dot_git'],
    ['.git. . /x', 'dot_git'],
    ['git~1/config', 'dot_git'],
    ['GIT~1', 'dot_git'],
    ['.git::$INDEX_ALLOCATION/x', 'dot_git'],
    ['.g\u200cit/config', 'dot_git'],
    ['\ufeff.git/config', 'dot_git'],
    ['.gi\u206at/x', 'dot_git'],
    ['a\\.git\\config', 'dot_git'],
    ['a\\..\\x', 'dotdot_component'],
  ])('refuses %j (%s)', (p, rule) => expect(indexPathProblem(Buffer.from(p))).toBe(rule));
});

describe('validateIndex against real git', () => {
  function repoWithIndex(name: string, setup: (dir: string) => void): string {
    const dir = path.join(base, name);
    mkdirSync(dir);
    git(dir, 'init', '-q', '-b', 'main');
    for (const f of ['a.txt', 'dir/b.txt', 'dir/sub/c.txt', 'z.txt']) {
      mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
      writeFileSync(path.join(dir, f), `${f}\n`);
    }
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', 'i');
    setup(dir);
    return dir;
  }

  /** The rebuilt index, written beside the original, reads back in git exactly as the original. */
  async function roundTrip(dir: string, hashBytes: 20 | 32 = 20): Promise<void> {
    const original = readFileSync(path.join(dir, '.git', 'index'));
    const v = await validate(original, hashBytes);
    const copy = path.join(base, `${path.basename(dir)}.index`);
    writeFileSync(copy, Buffer.concat(v.parts));
    const withIndex = (file: string, ...args: string[]) =>
      execFileSync('git', args, { cwd: dir, encoding: 'utf8', env: { ...process.env, GIT_INDEX_FILE: file } });
    const orig = path.join(dir, '.git', 'index');
    expect(withIndex(copy, 'ls-files', '--stage', '--debug')).toBe(withIndex(orig, 'ls-files', '--stage', '--debug'));
    expect(withIndex(copy, 'status', '--porcelain=v2', '--untracked-files=all')).toBe(
      withIndex(orig, 'status', '--porcelain=v2', '--untracked-files=all'),
    );
    expect(v.names.map((n) => n.toString())).toEqual(
      withIndex(orig, 'ls-files', '--stage', '-z')
        .split('\0')
        .filter(Boolean)
        .map((l) => l.slice(l.indexOf('\t') + 1)),
    );
  }

  it('version 2 with a cache tree and an untracked cache', async () => {
    const dir = repoWithIndex('v2', (d) => {
      git(d, 'config', 'core.untrackedCache', 'true');
      writeFileSync(path.join(d, 'untracked.txt'), 'u\n');
      git(d, 'status', '--untracked-files=all');
      writeFileSync(path.join(d, 'a.txt'), 'changed\n');
    });
    expect(readFileSync(path.join(dir, '.git', 'index')).includes('UNTR')).toBe(true);
    await roundTrip(dir);
  });

  it('version 3 (intent-to-add, skip-worktree) and version 4 (prefix compression)', async () => {
    const v3 = repoWithIndex('v3', (d) => {
      writeFileSync(path.join(d, 'new.txt'), 'n\n');
      git(d, 'add', '-N', 'new.txt');
      git(d, 'update-index', '--skip-worktree', 'z.txt');
    });
    expect(readFileSync(path.join(v3, '.git', 'index')).readUInt32BE(4)).toBe(3);
    await roundTrip(v3);
    const v4 = repoWithIndex('v4', (d) => git(d, 'update-index', '--index-version', '4'));
    expect(readFileSync(path.join(v4, '.git', 'index')).readUInt32BE(4)).toBe(4);
    await roundTrip(v4);
  });

  it('index.skipHash (a zero checksum) and a sha256 repository', async () => {
    const skip = repoWithIndex('skiphash', (d) => {
      git(d, 'config', 'index.skipHash', 'true');
      writeFileSync(path.join(d, 'a.txt'), 'again\n');
      git(d, 'add', 'a.txt');
    });
    await roundTrip(skip);
    const dir = path.join(base, 'sha256');
    mkdirSync(dir);
    git(dir, 'init', '-q', '--object-format=sha256');
    writeFileSync(path.join(dir, 'a.txt'), 'a\n');
    git(dir, 'add', 'a.txt');
    await roundTrip(dir, 32);
  });

  it('a split index is refused (unsupported)', async () => {
    const dir = repoWithIndex('split', (d) => git(d, 'update-index', '--split-index'));
    const e = await rejection(readFileSync(path.join(dir, '.git', 'index')));
    expect(e.kind).toBe('unsupported');
    expect(e.message).toMatch(/split index/);
  });
});

describe('validateIndex on crafted files', () => {
  const ok = { path: 'a.txt', oid: EMPTY };

  it('accepts a crafted valid index, drops optional extensions, and rewrites the checksum', async () => {
    const v = await validate(
      buildIndex({
        version: 4,
        entries: [ok, { path: 'a/b', oid: EMPTY }, { path: 'a/c', oid: EMPTY }],
        extensions: [{ signature: 'ZZZZ', data: Buffer.from('anything') }],
      }),
    );
    expect(v.names.map(String)).toEqual(['a.txt', 'a/b', 'a/c']);
    expect(Buffer.concat(v.parts).includes('ZZZZ')).toBe(false);
    await validate(Buffer.concat(v.parts)); // the rebuilt file is itself valid
  });

  it.each<[string, IndexSpec | (() => Buffer), 'corrupt' | 'unsupported']>([
    ['a dot-dot entry', { entries: [{ path: '../../outside/notes.txt', oid: EMPTY }] }, 'unsupported'],
    ['an absolute entry', { entries: [{ path: '/etc/hostname', oid: EMPTY }] }, 'unsupported'],
    ['a .GIT entry in v4', { version: 4, entries: [{ path: '.GIT/config', oid: EMPTY }] }, 'unsupported'],
    [
      'a v4 entry that becomes ../ through prefix compression',
      {
        version: 4,
        entries: [
          { path: '..a', oid: EMPTY },
          { path: '../x', oid: EMPTY },
        ],
      },
      'unsupported',
    ],
    ['a NUL inside the declared name', { entries: [{ path: Buffer.from('ok\0/../../x'), oid: EMPTY }] }, 'corrupt'],
    ['a declared length shorter than the name', { entries: [{ path: 'a.txt', oid: EMPTY, nameLength: 1 }] }, 'corrupt'],
    ['a wrong checksum', { entries: [ok], checksum: 'wrong' }, 'corrupt'],
    ['more entries declared than present', { entries: [ok], count: 2 }, 'corrupt'],
    ['entries out of order', { entries: [{ path: 'b', oid: EMPTY }, ok] }, 'corrupt'],
    ['a repeated entry', { entries: [ok, ok] }, 'corrupt'],
    ['an unknown mode', { entries: [{ ...ok, mode: 0o100666 }] }, 'unsupported'],
    ['a directory entry (sparse index)', { entries: [{ path: 'd', oid: EMPTY, mode: 0o40000 }] }, 'unsupported'],
    ['an unknown extended flag', { version: 3, entries: [{ ...ok, extended: 0x0001 }] }, 'unsupported'],
    ['an extended flag in version 2', { version: 2, entries: [{ ...ok, extended: 0x4000 }] }, 'corrupt'],
    ['version 5', { version: 4, entries: [ok] }, 'unsupported'],
    [
      'a split-index link',
      { entries: [ok], extensions: [{ signature: 'link', data: Buffer.alloc(20) }] },
      'unsupported',
    ],
    [
      'an unknown required extension',
      { entries: [ok], extensions: [{ signature: 'abcd', data: Buffer.alloc(4) }] },
      'unsupported',
    ],
    [
      'an extension longer than the file',
      () => {
        const b = buildIndex({ entries: [ok], extensions: [{ signature: 'TREE', data: Buffer.alloc(4) }] });
        b.writeUInt32BE(1 << 20, b.length - 20 - 8);
        return b;
      },
      'corrupt',
    ],
    ['not an index', () => Buffer.from('not an index at all, just text that is long enough'), 'corrupt'],
    ['a truncated entry', () => buildIndex({ entries: [ok], checksum: 'zero' }).subarray(0, 60), 'corrupt'],
  ])('%s → %s', async (_label, spec, kind) => {
    let bytes = typeof spec === 'function' ? spec() : buildIndex(spec);
    if (_label === 'version 5') {
      bytes = Buffer.from(bytes);
      bytes.writeUInt32BE(5, 4);
    }
    if (_label === 'an extended flag in version 2') {
      // buildIndex writes extended flags only from version 3: set the bit by hand (checksum left zero).
      bytes = buildIndex({ version: 2, entries: [ok], checksum: 'zero' });
      bytes.writeUInt16BE(bytes.readUInt16BE(12 + 60) | 0x4000, 12 + 60);
    }
    if (_label === 'an extension longer than the file') bytes.fill(0, bytes.length - 20);
    const e = await rejection(bytes);
    expect(e.kind).toBe(kind);
    expect(e.message).not.toContain('outside');
    expect(JSON.stringify(e.facts)).not.toMatch(/outside|hostname|config/);
  });
});

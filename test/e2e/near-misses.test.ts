/**
 * The remaining near misses of issue 30 (items 3, 4 and 6) through the real server, fields asserted one by one, and
 * nothing changed on a refusal:
 *  - a path spelled with `\` (POSIX) that does not exist: NOT_FOUND whose `near` offers the `/` spelling, while a file
 *    really named with a `\` is read as itself;
 *  - a path outside the roots: NOT_ALLOWED whose `near` offers the inside paths ending like it, policy-filtered, and
 *    the same envelope whether or not the outside path exists;
 *  - copy_path and move_path onto a symbolic link: the link itself is replaced (its target untouched), with the hash
 *    read through the link, without one, and under --auto-occ=off; a wrong hash is OCC_MISMATCH and changes nothing;
 *  - apply_patch creates no symbolic link (a git link mode is not honoured);
 *  - replace_in_files: `.git` is never walked nor counted, a secret named in expected_hashes is SECRET_DENIED, and
 *    HASH_REQUIRED names the parameter the tool takes (expected_hashes; expected_hash for single-file tools).
 * Docs: docs/errors.md "The error envelope", docs/tools.md "Links as destinations".
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree, symlink } from '../helpers/tree.js';

const posix = path.sep === '/';

function setup(flags: string[] = []) {
  const s = {
    tree: makeTree({
      src: { 'util.ts': 'export const u = 1;\n', 'a\\b.txt': 'backslash name\n' },
      'target.txt': 'target\n',
      'other.txt': 'other\n',
      ln: symlink('target.txt'),
      ln2: symlink('target.txt'),
      ln3: symlink('target.txt'),
      ln4: symlink('target.txt'),
      ln5: symlink('target.txt'),
      hid: { 'plan.md': 'hidden\n' },
      '.env': 'TOKEN=1\n',
      notes: { 'a.txt': 'hello world\n', 'b.txt': 'hello again\n' },
      '.git': { description: 'hello from git\n' },
    }),
    outside: makeTree({ 'policy.json': JSON.stringify({ rules: [{ pattern: 'hid/**', access: 'hidden' }] }) }),
    client: undefined as unknown as TestClient,
    root: '',
  };
  beforeAll(async () => {
    s.root = s.tree.dir;
    mkdirSync(path.join(s.outside.dir, 'state'));
    s.client = await connect('modern', {
      args: [
        '--state-dir',
        path.join(s.outside.dir, 'state'),
        '--policy',
        path.join(s.outside.dir, 'policy.json'),
        ...flags,
        s.root,
      ],
    });
  });
  afterAll(async () => {
    await s.client.close();
    s.tree.cleanup();
    s.outside.cleanup();
  });
  return s;
}

describe('near paths (issue 30 item 3)', () => {
  const s = setup();
  const p = (...parts: string[]) => path.join(s.root, ...parts);

  it.skipIf(!posix)('`src\\util.ts` that does not exist: NOT_FOUND offering src/util.ts; nothing written', async () => {
    const before = snapshotTree(s.root);
    for (const [tool, args] of [
      ['read_file', { path: 'src\\util.ts' }],
      ['edit_file', { path: 'src\\util.ts', edits: [{ old_text: 'u = 1', new_text: 'u = 2' }] }],
    ] as const) {
      const e = expectCode(await s.client.call(tool, args), 'NOT_FOUND').error;
      expect(e.path).toBe(p('src\\util.ts'));
      expect(e.details).toEqual({ near: [p('src/util.ts')] });
      expect(e.retryable).toBe(false);
      expect(e.recovery).toBe('fix_arguments');
      expect(e.suggestion).toContain(p('src/util.ts'));
    }
    expect(snapshotTree(s.root)).toEqual(before);
  });

  it.skipIf(!posix)('a file really named with a backslash is itself, never normalised', async () => {
    const r = await s.client.callOk('read_file', { path: 'src/a\\b.txt' });
    expect(r.content).toBe('backslash name\n');
  });

  it('an outside path: NOT_ALLOWED with details.near, the inside path ending like it; nothing written', async () => {
    const before = snapshotTree(s.root);
    const outsideBefore = snapshotTree(s.outside.dir);
    for (const given of ['/home/me/proj/src/util.ts', path.relative(s.root, '/src/util.ts')]) {
      for (const [tool, args] of [
        ['read_file', { path: given }],
        ['write_file', { path: given, content: 'x\n' }],
      ] as const) {
        const e = expectCode(await s.client.call(tool, args), 'NOT_ALLOWED').error;
        expect(e.path).toBe(path.resolve(s.root, given));
        expect(e.details).toEqual({ reason: 'outside_roots', roots: [s.root], near: [p('src/util.ts')] });
        expect(e.retryable).toBe(false);
        expect(e.recovery).toBe('fix_arguments');
        expect(e.suggestion).toContain(p('src/util.ts'));
      }
    }
    expect(snapshotTree(s.root)).toEqual(before);
    expect(snapshotTree(s.outside.dir)).toEqual(outsideBefore);
  });

  it('reveals nothing about the outside path: the same envelope whether it exists or not', async () => {
    const outsidePath = path.join(s.outside.dir, 'src', 'util.ts');
    const missing = await s.client.call('read_file', { path: outsidePath });
    mkdirSync(path.dirname(outsidePath));
    writeFileSync(outsidePath, 'outside content\n');
    try {
      const existing = await s.client.call('read_file', { path: outsidePath });
      expect(existing).toEqual(missing);
      const e = expectCode(existing, 'NOT_ALLOWED').error;
      expect(e.details.near).toEqual([p('src/util.ts')]);
      expect(JSON.stringify(existing)).not.toContain('outside content');
    } finally {
      rmSync(path.dirname(outsidePath), { recursive: true });
    }
  });

  it('never offers a secret, a policy-hidden path or a link; no near: details as before', async () => {
    for (const given of ['/elsewhere/.env', '/elsewhere/hid/plan.md', '/elsewhere/ln', '/elsewhere/none.txt']) {
      const e = expectCode(await s.client.call('read_file', { path: given }), 'NOT_ALLOWED').error;
      expect(e.details, given).toEqual({ reason: 'outside_roots', roots: [s.root] });
      expect(e.suggestion).toBe('Use a path inside details.roots.');
    }
  });
});

describe.each([[[]], [['--auto-occ=off']]])(
  'copy_path and move_path onto a link (flags %j, issue 30 item 4)',
  (flags) => {
    const s = setup(flags);
    const p = (...parts: string[]) => path.join(s.root, ...parts);
    const targetHash = contentHash('target\n');

    it('with the hash read through the link: both replace the link itself; the target is untouched', async () => {
      const read = await s.client.callOk('read_file', { path: 'ln' });
      expect(read.content_hash).toBe(targetHash);
      writeFileSync(p('c-src.txt'), 'copied\n');
      writeFileSync(p('m-src.txt'), 'moved\n');
      const c = await s.client.callOk('copy_path', {
        source: 'c-src.txt',
        destination: 'ln',
        overwrite: true,
        expected_hash: read.content_hash,
      });
      expect(c.type).toBe('file');
      expect(c.overwritten).toBe(true);
      expect(c.previous_destination_hash).toBeNull();
      expect(c.content_hash).toBe(contentHash('copied\n'));
      expect(lstatSync(p('ln')).isFile()).toBe(true);
      expect(readFileSync(p('ln'), 'utf8')).toBe('copied\n');
      const m = await s.client.callOk('move_path', {
        source: 'm-src.txt',
        destination: 'ln2',
        overwrite: true,
        expected_hash: targetHash,
      });
      expect(m.type).toBe('file');
      expect(m.overwritten).toBe(true);
      expect(m.previous_destination_hash).toBeNull();
      expect(lstatSync(p('ln2')).isFile()).toBe(true);
      expect(readFileSync(p('ln2'), 'utf8')).toBe('moved\n');
      expect(existsSync(p('m-src.txt'))).toBe(false);
      expect(readFileSync(p('target.txt'), 'utf8')).toBe('target\n');
    });

    it('without a hash: both replace the link (it holds no content of its own)', async () => {
      writeFileSync(p('c2.txt'), 'c2\n');
      writeFileSync(p('m2.txt'), 'm2\n');
      await s.client.callOk('copy_path', { source: 'c2.txt', destination: 'ln3', overwrite: true });
      await s.client.callOk('move_path', { source: 'm2.txt', destination: 'ln4', overwrite: true });
      expect(readFileSync(p('ln3'), 'utf8')).toBe('c2\n');
      expect(lstatSync(p('ln3')).isFile()).toBe(true);
      expect(readFileSync(p('ln4'), 'utf8')).toBe('m2\n');
      expect(lstatSync(p('ln4')).isFile()).toBe(true);
      expect(readFileSync(p('target.txt'), 'utf8')).toBe('target\n');
    });

    it('a hash that is not what the link leads to: OCC_MISMATCH from both, nothing changed', async () => {
      writeFileSync(p('c3.txt'), 'c3\n');
      const before = snapshotTree(s.root);
      for (const tool of ['copy_path', 'move_path']) {
        const e = expectCode(
          await s.client.call(tool, {
            source: 'c3.txt',
            destination: 'ln5',
            overwrite: true,
            expected_hash: contentHash('something else\n'),
          }),
          'OCC_MISMATCH',
        ).error;
        expect(e.path).toBe(p('ln5'));
        expect(e.expected_hash).toBe(contentHash('something else\n'));
        expect(e.current_hash).toBe(targetHash);
        expect(e.conflict).toEqual({ reason: 'modified' });
        expect(e.retryable).toBe(true);
        expect(e.recovery).toBe('read_and_rebase');
        const absent = expectCode(
          await s.client.call(tool, { source: 'c3.txt', destination: 'ln5', overwrite: true, expected_hash: 'absent' }),
          'OCC_MISMATCH',
        ).error;
        expect(absent.conflict).toEqual({ reason: 'created' });
        expect(absent.current_hash).toBe(targetHash);
      }
      expect(snapshotTree(s.root)).toEqual(before);
      expect(readlinkSync(p('ln5'))).toBe('target.txt');
    });

    it('the copy over a link is undone like the move: revert_changes puts the link back', async () => {
      writeFileSync(p('c4.txt'), 'c4\n');
      await s.client.callOk('copy_path', { source: 'c4.txt', destination: 'ln5', overwrite: true });
      expect(lstatSync(p('ln5')).isFile()).toBe(true);
      await s.client.callOk('revert_changes', { last: 1 });
      expect(lstatSync(p('ln5')).isSymbolicLink()).toBe(true);
      expect(readlinkSync(p('ln5'))).toBe('target.txt');
      expect(readFileSync(p('target.txt'), 'utf8')).toBe('target\n');
    });
  },
);

describe('no tool creates a link (issue 30 item 4)', () => {
  const s = setup();
  it('apply_patch with a git link mode creates no symbolic link: a regular file holding the text', async () => {
    const patch =
      'diff --git a/newlink b/newlink\nnew file mode 120000\n--- /dev/null\n+++ b/newlink\n@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n';
    const r = await s.client.callOk('apply_patch', { patch, path: s.root });
    expect(r.files[0].action).toBe('created');
    const at = path.join(s.root, 'newlink');
    expect(lstatSync(at).isSymbolicLink()).toBe(false);
    expect(lstatSync(at).isFile()).toBe(true);
    expect(readFileSync(at, 'utf8')).toBe('/etc');
  });
});

describe('replace_in_files and HASH_REQUIRED (issue 30 item 6)', () => {
  const s = setup();
  const p = (...parts: string[]) => path.join(s.root, ...parts);

  it('.git is never walked and never counted in skipped; its files are untouched', async () => {
    const r = await s.client.callOk('replace_in_files', {
      path: '.',
      query: 'hello',
      replacement: 'bye',
      dry_run: true,
    });
    expect(r.files.map((f: { path: string }) => f.path).sort()).toEqual(['notes/a.txt', 'notes/b.txt']);
    expect(r.skipped.git).toBe(0);
    expect(readFileSync(p('.git', 'description'), 'utf8')).toBe('hello from git\n');
  });

  it('a secret named in expected_hashes: SECRET_DENIED (not OCC_MISMATCH), nothing written', async () => {
    const before = snapshotTree(s.root);
    const e = expectCode(
      await s.client.call('replace_in_files', {
        path: '.',
        query: 'hello',
        replacement: 'bye',
        expected_hashes: {
          'notes/a.txt': contentHash('hello world\n'),
          [p('.env')]: contentHash('TOKEN=1\n'),
        },
      }),
      'SECRET_DENIED',
    ).error;
    expect(e.path).toBe(p('.env'));
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
    expect(JSON.stringify(e)).not.toContain('TOKEN');
    expect(snapshotTree(s.root)).toEqual(before);
  });

  it('HASH_REQUIRED names expected_hashes for replace_in_files, expected_hash for a single-file tool', async () => {
    const before = snapshotTree(s.root);
    const multi = expectCode(
      await s.client.call('replace_in_files', { path: 'notes/a.txt', query: 'hello', replacement: 'bye' }),
      'HASH_REQUIRED',
    ).error;
    expect(multi.path).toBe(p('notes/a.txt'));
    expect(multi.details).toEqual({ current_hash: contentHash('hello world\n'), field: 'expected_hashes' });
    expect(multi.message).toContain('expected_hashes');
    expect(multi.retryable).toBe(true);
    const single = expectCode(
      await s.client.call('write_file', { path: 'notes/a.txt', content: 'x\n' }),
      'HASH_REQUIRED',
    ).error;
    expect(single.details).toEqual({ current_hash: contentHash('hello world\n'), field: 'expected_hash' });
    expect(single.message).toContain('expected_hash.');
    expect(snapshotTree(s.root)).toEqual(before);
    // Acting on the envelope: the hash under the parameter it names.
    const r = await s.client.callOk('replace_in_files', {
      path: 'notes/a.txt',
      query: 'hello',
      replacement: 'bye',
      expected_hashes: { [p('notes/a.txt')]: multi.details.current_hash },
    });
    expect(r.replacements).toBe(1);
    expect(readFileSync(p('notes/a.txt'), 'utf8')).toBe('bye world\n');
  });
});

/**
 * Issue 21 through the real server (stdio, one era: the envelope is era-independent): envelopes an agent can act on
 * in one step.
 *  - PATCH_FAILED lists every failing hunk (apply_patch) and every failing edit (edit_file) in details.failures, each
 *    with its reason and nearest region, the first still in the top-level fields; nothing is written.
 *  - a patch with no usable hunk (prose, Codex's bare `@@`) is PATCH_FAILED no_hunks with recovery fix_arguments.
 *  - NOT_FOUND offers up to five existing near paths (same directory within edit distance 2 or case-only, a mistyped
 *    parent directory, the same name elsewhere), never a secret or a policy-hidden path; a hidden path answers
 *    exactly like a missing one (same near list).
 *  - NOT_ALLOWED carries the roots in force.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const APP = [
  'import os',
  '',
  'def load():',
  '    timeout = 10',
  '    retries = 3',
  '    return timeout',
  '',
  'def save():',
  '    path = "out.txt"',
  '    mode = "w"',
  '    return path',
  '',
  'def run():',
  '    load()',
  '    save()',
  '',
].join('\n');

const APP_HASH = `sha256:${createHash('sha256').update(APP).digest('hex')}`;
let client: TestClient;
let R = '';
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  const root = makeTree({
    'app.py': APP,
    'src/utils.ts': 'export const u = 1;\n',
    'src/index.ts': 'export {};\n',
    'src/deep/helpers.ts': 'export const h = 1;\n',
    'README.md': '# r\n',
    'conf/server.pem': 'KEY\n',
    'conf/settings.json': '{}\n',
    'private/notes.md': 'hidden\n',
    'docs/notes.md': 'visible\n',
    'far/away/deep/config.yaml': 'far\n',
    'pkg/a/config.yaml': 'near\n',
  });
  const state = makeTree({}, 'fs-tools-state-');
  const policyDir = makeTree(
    {
      'policy.json': JSON.stringify({
        rules: [
          { pattern: 'private/**', access: 'hidden' },
          { pattern: 'src/secret-plan.ts', access: 'hidden' },
        ],
      }),
    },
    'fs-tools-pol-',
  );
  writeFileSync(path.join(root.dir, 'src', 'secret-plan.ts'), 'plan\n');
  cleanups.push(root.cleanup, state.cleanup, policyDir.cleanup);
  R = realpathSync(root.dir);
  client = await connect('modern', {
    args: ['--state-dir', state.dir, '--auto-occ=off', `--policy=${path.join(policyDir.dir, 'policy.json')}`, root.dir],
  });
});
afterAll(async () => {
  await client?.close();
  for (const c of cleanups) c();
});

describe('PATCH_FAILED: every failing hunk and edit in one envelope', () => {
  it('apply_patch: hunks 1 and 3 fail, hunk 2 applies → failures lists 1 and 3; the first is top-level; nothing written', async () => {
    const patch = [
      '--- a/app.py',
      '+++ b/app.py',
      '@@ -3,3 +3,3 @@',
      ' def load():',
      '-    timeout = 11',
      '+    timeout = 20',
      '     retries = 3',
      '@@ -8,3 +8,3 @@',
      ' def save():',
      '-    path = "out.txt"',
      '+    path = "o.txt"',
      '     mode = "w"',
      '@@ -13,3 +13,3 @@',
      ' def run():',
      '-    lod()',
      '+    load(1)',
      '     save()',
      '',
    ].join('\n');
    const { error: e } = await client.callError('apply_patch', { patch, path: path.join(R, 'app.py') });
    expect(e.code).toBe('PATCH_FAILED');
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('read_and_rebase');
    expect(e.path).toBe(path.join(R, 'app.py'));
    expect(e.details.reason).toBe('no_match');
    expect(e.details.hunk).toBe(1);
    expect(e.details.hunks).toBe(3);
    expect(e.details.failed_count).toBe(2);
    expect(e.details.current_hash).toBe(APP_HASH);
    expect(e.details.failures).toHaveLength(2);
    const [f1, f3] = e.details.failures;
    expect(Object.keys(f1).sort()).toEqual(['expected', 'hunk', 'nearest', 'reason']);
    expect(f1.reason).toBe('no_match');
    expect(f1.hunk).toBe(1);
    expect(f1.expected).toEqual(['def load():', '    timeout = 11', '    retries = 3']);
    expect(f1.nearest.line).toBe(3);
    expect(f1.nearest.first_difference).toEqual({
      line: 4,
      expected: '    timeout = 11',
      actual: '    timeout = 10',
      whitespace_only: false,
    });
    expect(e.details.nearest).toEqual(f1.nearest);
    expect(f3.reason).toBe('no_match');
    expect(f3.hunk).toBe(3);
    expect(f3.expected).toEqual(['def run():', '    lod()', '    save()']);
    expect(f3.nearest.line).toBe(13);
    expect(f3.nearest.first_difference).toEqual({
      line: 14,
      expected: '    lod()',
      actual: '    load()',
      whitespace_only: false,
    });
    expect(readFileSync(path.join(R, 'app.py'), 'utf8')).toBe(APP);
  });

  it('edit_file: edits 0 (typo) and 2 (ambiguous) fail, edit 1 applies → both listed with index, reason, diagnosis; nothing written', async () => {
    const { error: e } = await client.callError('edit_file', {
      path: path.join(R, 'app.py'),
      edits: [
        { old_text: '    retries = 4\n', new_text: '    retries = 5\n' },
        { old_text: '    mode = "w"', new_text: '    mode = "a"' },
        { old_text: '    return ', new_text: '    return  ' },
      ],
    });
    expect(e.code).toBe('PATCH_FAILED');
    expect(e.recovery).toBe('read_and_rebase');
    expect(e.details.reason).toBe('no_match');
    expect(e.details.edit_index).toBe(0);
    expect(e.details.failed_count).toBe(2);
    const [a, b] = e.details.failures;
    expect(a.edit_index).toBe(0);
    expect(a.reason).toBe('no_match');
    expect(a.nearest.line).toBe(5);
    expect(a.nearest.first_difference).toEqual({
      line: 5,
      expected: '    retries = 4',
      actual: '    retries = 3',
      whitespace_only: false,
    });
    // candidate_context (issue 21, mutation-tool items): the lines around each match, on the text as it stands (edit 1
    // applied).
    expect(b).toEqual({
      reason: 'ambiguous',
      edit_index: 2,
      count: 2,
      candidates: [6, 11],
      candidate_context: [
        { line: 6, before: ['    timeout = 10', '    retries = 3'], after: ['', 'def save():'] },
        { line: 11, before: ['    path = "out.txt"', '    mode = "a"'], after: ['', 'def run():'] },
      ],
    });
    expect(readFileSync(path.join(R, 'app.py'), 'utf8')).toBe(APP);
  });

  it('old_text indented less than the line never matches inside its indentation (SPEC §6.2: indentation is never changed silently)', async () => {
    const { error: e } = await client.callError('edit_file', {
      path: path.join(R, 'app.py'),
      edits: [{ old_text: '  timeout = 10', new_text: '    timeout = 20' }],
    });
    expect(e.code).toBe('PATCH_FAILED');
    expect(e.details.reason).toBe('no_match');
    expect(e.details.edit_index).toBe(0);
    expect(e.details.nearest.line).toBe(4);
    expect(e.details.nearest.first_difference).toEqual({
      line: 4,
      expected: '  timeout = 10',
      actual: '    timeout = 10',
      whitespace_only: true,
    });
    expect(readFileSync(path.join(R, 'app.py'), 'utf8')).toBe(APP);
    // A match that starts at the indentation's start, or mid-line after other text, still applies (dry run).
    const ok = await client.callOk('edit_file', {
      path: path.join(R, 'app.py'),
      dry_run: true,
      edits: [
        { old_text: '    timeout = 10', new_text: '    timeout = 20' },
        { old_text: ' = "w"', new_text: ' = "a"' },
      ],
    });
    expect(ok.dry_run).toBe(true);
  });

  it('one failing edit → no list (the top-level fields are the whole story)', async () => {
    const { error: e } = await client.callError('edit_file', {
      path: path.join(R, 'app.py'),
      edits: [{ old_text: 'nothing like this anywhere at all', new_text: 'x' }],
    });
    expect(e.details).toEqual({ reason: 'no_match', edit_index: 0, current_hash: APP_HASH });
  });

  it.each([
    ['prose', 'Please change the timeout to 20.'],
    ["Codex's bare @@ lines", '@@\n@@\n'],
  ])('%s → PATCH_FAILED no_hunks, recovery fix_arguments (the patch text is the problem)', async (_l, patch) => {
    const { error: e } = await client.callError('apply_patch', { patch, path: path.join(R, 'app.py') });
    expect(e.code).toBe('PATCH_FAILED');
    expect(e.details).toEqual({ reason: 'no_hunks' });
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
  });

  it('malformed → recovery fix_arguments', async () => {
    const patch =
      '--- a/app.py\n+++ b/app.py\n@@ -3,2 +3,2 @@\n def load():\nbroken line\n-    timeout = 10\n+    timeout = 2\n';
    const { error: e } = await client.callError('apply_patch', { patch, path: path.join(R, 'app.py') });
    expect(e.code).toBe('PATCH_FAILED');
    expect(e.details.reason).toBe('malformed');
    expect(e.recovery).toBe('fix_arguments');
  });
});

describe('NOT_FOUND: near paths', () => {
  it.each([
    ['same directory, edit distance 1', 'src/util.ts', ['src/utils.ts']],
    ['case only', 'readme.md', ['README.md']],
    ['mistyped parent directory', 'srcc/index.ts', ['src/index.ts']],
    ['same name elsewhere', 'lib/helpers.ts', ['src/deep/helpers.ts']],
  ])('%s: %s', async (_l, requested, near) => {
    const { error: e } = await client.callError('read_file', { path: requested });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.path).toBe(path.join(R, requested));
    expect(e.details).toEqual({ near: near.map((n) => path.join(R, n)) });
    expect(e.suggestion).toContain(path.join(R, near[0]));
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
  });

  it('same name elsewhere: the relative under the nearest existing ancestor comes first', async () => {
    const { error: e } = await client.callError('read_file', { path: 'pkg/b/config.yaml' });
    expect(e.details).toEqual({ near: [path.join(R, 'pkg/a/config.yaml'), path.join(R, 'far/away/deep/config.yaml')] });
  });

  it('edit_file (a mutation) offers near paths too', async () => {
    const { error: e } = await client.callError('edit_file', {
      path: 'src/utils.tss',
      edits: [{ old_text: 'u', new_text: 'v' }],
    });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.details).toEqual({ near: [path.join(R, 'src/utils.ts')] });
  });

  it('never offers a secret: conf/server.pen → no near (the secret server.pem is not named)', async () => {
    const { error: e } = await client.callError('read_file', { path: 'conf/server.pen' });
    expect(e.code).toBe('NOT_FOUND');
    expect(e.details).toEqual({});
    expect(JSON.stringify(e)).not.toContain('server.pem');
  });

  it('never offers a policy-hidden path: notes.md elsewhere is only docs/notes.md, never private/notes.md', async () => {
    const { error: e } = await client.callError('read_file', { path: 'misc/notes.md' });
    expect(e.details).toEqual({ near: [path.join(R, 'docs/notes.md')] });
  });

  it('a hidden file answers exactly like a missing one (the same near list, so near cannot reveal it)', async () => {
    const hidden = (await client.callError('read_file', { path: 'src/secret-plan.ts' })).error;
    const missing = (await client.callError('read_file', { path: 'src/secret-plam.ts' })).error;
    expect(hidden.code).toBe('NOT_FOUND');
    expect(missing.code).toBe('NOT_FOUND');
    expect(hidden.details).toEqual({});
    expect(missing.details).toEqual({});
    expect(JSON.stringify(missing)).not.toContain('secret-plan');
  });

  it('an explicit content expected_hash does not turn a hidden path into a "deleted" conflict (it stays NOT_FOUND)', async () => {
    // Attack on the issue-21 deletion rule: a hash makes a missing known file OCC_MISMATCH deleted; a hidden file must
    // still answer like a missing one, and a missing file under a hidden directory too.
    const hash = `sha256:${createHash('sha256').update('plan\n').digest('hex')}`;
    for (const rel of ['src/secret-plan.ts', 'private/never-there.md']) {
      const { error: e } = await client.callError('edit_file', {
        path: rel,
        expected_hash: hash,
        edits: [{ old_text: 'plan', new_text: 'x' }],
      });
      expect(e.code).toBe('NOT_FOUND');
      expect(e.path).toBe(path.join(R, rel));
      expect(e.conflict).toBeUndefined();
      expect(e.details).toEqual({});
    }
    expect(readFileSync(path.join(R, 'src/secret-plan.ts'), 'utf8')).toBe('plan\n');
    expect(existsSync(path.join(R, 'private/never-there.md'))).toBe(false);
  });
});

describe('a file deleted after this session read it', () => {
  it('write_file without a hash does not silently re-create it: OCC_MISMATCH deleted, not retryable; "absent" re-creates it', async () => {
    const f = path.join(R, 'gone.txt');
    writeFileSync(f, 'soon gone\n');
    const read = await client.callOk('read_file', { path: f });
    rmSync(f);
    // --auto-occ=off in this server: no session check, so a second server under the default (block) is used.
    const state = makeTree({}, 'fs-tools-state-');
    const blocking = await connect('modern', { args: ['--state-dir', state.dir, R] });
    try {
      writeFileSync(f, 'back\n');
      const again = await blocking.callOk('read_file', { path: f });
      rmSync(f);
      const { error: e } = await blocking.callError('write_file', { path: f, content: 'x\n' });
      expect(e.code).toBe('OCC_MISMATCH');
      expect(e.path).toBe(f);
      expect(e.details).toEqual({});
      expect(e.expected_hash).toBe(again.content_hash);
      expect(e.current_hash).toBeNull();
      expect(e.conflict).toEqual({ reason: 'deleted' });
      expect(e.retryable).toBe(false);
      expect(e.recovery).toBe('fix_arguments');
      expect(existsSync(f)).toBe(false);
      const ok = await blocking.callOk('write_file', { path: f, content: 'x\n', expected_hash: 'absent' });
      expect(ok.created).toBe(true);
      expect(readFileSync(f, 'utf8')).toBe('x\n');
    } finally {
      await blocking.close();
      state.cleanup();
      rmSync(f, { force: true });
    }
    expect(read.content_hash).toMatch(/^sha256:/);
  });
});

describe('NOT_ALLOWED carries the roots in force', () => {
  it('outside path', async () => {
    const { error: e } = await client.callError('read_file', { path: '/etc/hostname' });
    expect(e.code).toBe('NOT_ALLOWED');
    expect(e.details).toEqual({ reason: 'outside_roots', roots: [R] });
    expect(e.retryable).toBe(false);
    expect(e.recovery).toBe('fix_arguments');
  });
});

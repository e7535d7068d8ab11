/**
 * edit_file's matching through the real server (docs/errors.md "already_applied only on evidence", "nearest",
 * "Indentation-tolerant edits"), every field asserted one by one and the bytes checked on every refusal:
 *  - a deletion edit whose old_text has a typo (`debuglog` for `debugLog`) is no_match with nearest and
 *    first_difference, never already_applied (regression: "do not apply this edit again", the edit lost); the same
 *    deletion really made is no_match too (a pure deletion is never evidence); a replacement really made, with its
 *    removed line gone, stays already_applied; the same typo as a unified diff hunk is no_match as before;
 *  - a moved line: nearest is the in-order region (first_difference null, in_order found/of/missing with the line
 *    where the moved line is now);
 *  - indentation: a Python block quoted at another depth, a YAML block, a Makefile recipe with spaces for its tab
 *    apply re-indented (`match: "reindented"`, `indent_shift`), changing only the targeted lines, and so does a hunk
 *    of apply_patch written with spaces for a Makefile's tabs; two such regions are
 *    ambiguous, a non-uniform difference and a new_text indented unlike old_text stay no_match, nothing written.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree, writeTree } from '../helpers/tree.js';

let client: TestClient;
let R = '';
let n = 0;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  const r = makeTree();
  const s = makeTree({}, 'fs-tools-state-');
  cleanups.push(r.cleanup, s.cleanup);
  R = r.dir;
  client = await connect('modern', { args: ['--state-dir', s.dir, R] });
});
afterAll(async () => {
  const stderr = client?.stderr() ?? '';
  await client?.close();
  for (const c of cleanups) c();
  expect(stderr).not.toMatch(/INTERNAL|incident/);
});

/** A fresh directory holding `name` with `text`, read once (the session knows its hash). */
async function fileWith(name: string, text: string): Promise<{ f: string; d: string }> {
  const d = path.join(R, `t${++n}`);
  writeTree(d, { [name]: text });
  const f = path.join(d, name);
  await client.callOk('read_file', { path: f });
  return { f, d };
}

async function refusedEdit(f: string, d: string, edits: unknown[]): Promise<Record<string, any>> {
  const before = snapshotTree(d, { withMtime: true });
  const e = expectCode(await client.call('edit_file', { path: f, edits }), 'PATCH_FAILED');
  expect(snapshotTree(d, { withMtime: true })).toEqual(before);
  expect(e.error.recovery).toBe('read_and_rebase');
  return e.error;
}

describe('already_applied only on evidence', () => {
  const JS = 'const a = 1;\nconst debugLog = true;\nconst b = 2;\n';

  it('a deletion edit with a typo in old_text is no_match with nearest and first_difference', async () => {
    const { f, d } = await fileWith('a.js', JS);
    const e = await refusedEdit(f, d, [
      { old_text: 'const a = 1;\nconst debuglog = true;\n', new_text: 'const a = 1;\n' },
    ]);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.edit_index).toBe(0);
    expect(e.details.current_hash).toBe(contentHash(JS));
    expect(e.details.nearest.line).toBe(1);
    expect(e.details.nearest.first_difference.line).toBe(2);
    expect(e.details.nearest.first_difference.expected).toBe('const debuglog = true;');
    expect(e.details.nearest.first_difference.actual).toBe('const debugLog = true;');
    expect(e.details.nearest.first_difference.whitespace_only).toBe(false);
    expect(e.details.nearest.in_order).toBeUndefined();
  });

  it('the deletion already made is no_match too: finding the kept anchor proves nothing', async () => {
    const { f, d } = await fileWith('b.js', 'const a = 1;\nconst b = 2;\n');
    const e = await refusedEdit(f, d, [
      { old_text: 'const a = 1;\nconst debugLog = true;\n', new_text: 'const a = 1;\n' },
    ]);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.edit_index).toBe(0);
  });

  it('a replacement already made, its old line gone, stays already_applied', async () => {
    const { f, d } = await fileWith('c.js', 'const a = 1;\nconst debugLog = false;\nconst b = 2;\n');
    const e = await refusedEdit(f, d, [
      { old_text: 'const a = 1;\nconst debugLog = true;\n', new_text: 'const a = 1;\nconst debugLog = false;\n' },
    ]);
    expect(e.details.reason).toBe('already_applied');
    expect(e.details.edit_index).toBe(0);
    expect(e.recovery).toBe('read_and_rebase');
  });

  it('the replacement whose old line is still in the file elsewhere is no_match, not already_applied', async () => {
    const text = 'const a = 1;\nconst debugLog = false;\n\nfunction g() {\n  const debugLog = true;\n}\n';
    const { f, d } = await fileWith('d.js', text);
    const e = await refusedEdit(f, d, [
      { old_text: 'const a = 1;\nconst debugLog = true;\n', new_text: 'const a = 1;\nconst debugLog = false;\n' },
    ]);
    expect(e.details.reason).toBe('no_match');
  });

  it('the same typo as a unified diff hunk is no_match with first_difference', async () => {
    const { f, d } = await fileWith('e.js', JS);
    const before = snapshotTree(d, { withMtime: true });
    const e = expectCode(
      await client.call('apply_patch', {
        path: f,
        patch: '@@ -1,3 +1,2 @@\n const a = 1;\n-const debuglog = true;\n const b = 2;\n',
      }),
      'PATCH_FAILED',
    );
    expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    expect(e.error.details.reason).toBe('no_match');
    expect(e.error.details.nearest.first_difference.expected).toBe('const debuglog = true;');
    expect(e.error.details.nearest.first_difference.actual).toBe('const debugLog = true;');
  });
});

describe('nearest for a moved line', () => {
  it('names the in-order region and where the moved line is now', async () => {
    const text =
      'def f():\n    a = 1\n    c = 3\n    d = 4\n    e = 5\n    return a\n\n\ndef g():\n    b = 2\n    return b\n';
    const { f, d } = await fileWith('m.py', text);
    const e = await refusedEdit(f, d, [
      {
        old_text: 'def f():\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n',
        new_text: 'def f():\n    a = 1\n    b = 20\n    c = 3\n    d = 4\n',
      },
    ]);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.nearest.line).toBe(1);
    expect(e.details.nearest.excerpt).toBe('def f():\n    a = 1\n    c = 3\n    d = 4');
    expect(e.details.nearest.first_difference).toBeNull();
    expect(e.details.nearest.in_order.found).toBe(4);
    expect(e.details.nearest.in_order.of).toBe(5);
    expect(e.details.nearest.in_order.missing).toEqual([{ expected: '    b = 2', line: 10 }]);
  });
});

describe('indentation-tolerant edits', () => {
  it('Python: a method quoted without its class indentation applies re-indented, only the targeted line changes', async () => {
    const text =
      'class A:\n    def f(self):\n        x = 1\n        return x\n\n    def g(self):\n        x = 1\n        return 2\n';
    const { f } = await fileWith('a.py', text);
    const r = await client.callOk('edit_file', {
      path: f,
      edits: [{ old_text: 'def f(self):\n    x = 1\n', new_text: 'def f(self):\n    x = 10\n' }],
    });
    const after = text.replace('        x = 1\n        return x', '        x = 10\n        return x');
    expect(readFileSync(f, 'utf8')).toBe(after);
    expect(r.replacements).toBe(1);
    expect(r.edits).toHaveLength(1);
    expect(r.edits[0].index).toBe(0);
    expect(r.edits[0].replacements).toBe(1);
    expect(r.edits[0].match).toBe('reindented');
    expect(r.edits[0].indent_shift).toBe('+4 spaces');
    expect(r.edits[0].lines).toEqual([2]);
    expect(r.content_hash).toBe(contentHash(after));
  });

  it('YAML: a nested block quoted two levels shallower', async () => {
    const text = 'services:\n  web:\n    image: app:1\n    ports:\n      - "80:80"\n  db:\n    image: pg:15\n';
    const { f } = await fileWith('c.yaml', text);
    const r = await client.callOk('edit_file', {
      path: f,
      edits: [{ old_text: 'image: app:1\nports:\n  - "80:80"\n', new_text: 'image: app:2\nports:\n  - "8080:80"\n' }],
    });
    expect(readFileSync(f, 'utf8')).toBe(text.replace('app:1', 'app:2').replace('"80:80"', '"8080:80"'));
    expect(r.edits[0].match).toBe('reindented');
    expect(r.edits[0].indent_shift).toBe('+4 spaces');
    expect(r.edits[0].lines).toEqual([3]);
  });

  it('Makefile: a recipe sent with 4 spaces for its tab keeps its tabs', async () => {
    const text = 'CC = cc\n\nall: x\n\t$(CC) -o x x.c\n\techo done\n';
    const { f } = await fileWith('Makefile', text);
    const r = await client.callOk('edit_file', {
      path: f,
      edits: [{ old_text: 'all: x\n    $(CC) -o x x.c\n', new_text: 'all: x\n    $(CC) -O2 -o x x.c\n' }],
    });
    expect(readFileSync(f, 'utf8')).toBe('CC = cc\n\nall: x\n\t$(CC) -O2 -o x x.c\n\techo done\n');
    expect(r.edits[0].match).toBe('reindented');
    expect(r.edits[0].indent_shift).toBe('4 spaces=tab');
  });

  it('apply_patch: a hunk written with spaces for a Makefile recipe applies re-indented, tabs kept', async () => {
    const text = 'CC = cc\n\nall: x\n\t$(CC) -o x x.c\n\techo done\n';
    const { f } = await fileWith('Makefile', text);
    const r = await client.callOk('apply_patch', {
      path: f,
      patch: '@@ -3,3 +3,3 @@\n all: x\n-    $(CC) -o x x.c\n+    $(CC) -O2 -o x x.c\n     echo done\n',
    });
    expect(readFileSync(f, 'utf8')).toBe('CC = cc\n\nall: x\n\t$(CC) -O2 -o x x.c\n\techo done\n');
    expect(r.files).toHaveLength(1);
    const [h] = r.files[0].hunks;
    expect(h.hunk).toBe(1);
    expect(h.line).toBe(3);
    expect(h.match).toBe('reindented');
    expect(h.indent_shift).toBe('4 spaces=tab');
    expect(h.placed_by).toBe('content');
    expect(h.candidates).toBe(1);
  });

  it('two regions that match once indentation is ignored: ambiguous, nothing written', async () => {
    const text = 'if a:\n    x = 1\n    y = 2\nif b:\n        x = 1\n        y = 2\n';
    const { f, d } = await fileWith('two.py', text);
    const e = await refusedEdit(f, d, [{ old_text: 'x = 1\ny = 2\n', new_text: 'x = 1\ny = 3\n' }]);
    expect(e.details.reason).toBe('ambiguous');
    expect(e.details.match).toBe('reindented');
    expect(e.details.count).toBe(2);
    expect(e.details.candidates).toEqual([2, 5]);
  });

  it('a non-uniform difference stays no_match with a whitespace-only first difference', async () => {
    const text = 'def f():\n    if x:\n        return 1\n';
    const { f, d } = await fileWith('nu.py', text);
    const e = await refusedEdit(f, d, [{ old_text: '  if x:\n    return 1\n', new_text: '  if x:\n    return 2\n' }]);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.nearest.first_difference.whitespace_only).toBe(true);
    expect(e.details.nearest.first_difference.line).toBe(2);
  });

  it('new_text indented unlike old_text is no guess: no_match', async () => {
    const text = 'def f():\n    timeout = 10\n';
    const { f, d } = await fileWith('fr.py', text);
    const e = await refusedEdit(f, d, [{ old_text: '  timeout = 10', new_text: '    timeout = 20' }]);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.nearest.first_difference.whitespace_only).toBe(true);
    expect(e.details.nearest.first_difference.actual).toBe('    timeout = 10');
  });
});

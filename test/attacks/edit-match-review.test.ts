/**
 * Review attacks on edit_file's tolerant matching through the real server (docs/errors.md "How edits and hunks
 * match"), each one that worked kept as a regression:
 *  - already_applied on a frame that does not pin the place: old_text with a typo (`levle` for `level`) whose new_text
 *    is found at ANOTHER place the same frame occurs (another function sets `level = "debug"`) was reported
 *    already_applied, "do not apply this edit again" — the change is not in the file and the edit was lost. Now
 *    no_match with nearest at the line the edit meant, and the file unchanged;
 *  - the same for apply_patch: a hunk whose removed line has a typo, its context (`total = 0` … `return total`) in two
 *    functions, one of which already holds the new side, was already_applied while the function at the header's line
 *    still had the old line. Now every place the context occurs must hold the new side;
 *  - a re-indented edit rewrote lines the agent did not target: a blank line holding the file's indentation (and a
 *    line whose trailing blanks old_text omitted) came out as new_text spelt them. Now the lines old_text and
 *    new_text share at their start and end keep the file's own text; only the changed lines are re-indented.
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

describe('already_applied needs a frame that pins one place', () => {
  const JS = 'function dev() {\n  const level = "debug";\n}\nfunction prod() {\n  const level = "warn";\n}\n';

  it('a typo in old_text, new_text present at another place with the same frame: no_match, not already_applied', async () => {
    const { f, d } = await fileWith('a.js', JS);
    const before = snapshotTree(d, { withMtime: true });
    const e = expectCode(
      await client.call('edit_file', {
        path: f,
        edits: [{ old_text: '  const levle = "warn";', new_text: '  const level = "debug";' }],
      }),
      'PATCH_FAILED',
    ).error;
    expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.edit_index).toBe(0);
    expect(e.details.current_hash).toBe(contentHash(JS));
    expect(e.details.nearest.line).toBe(5);
    expect(e.details.nearest.first_difference.expected).toBe('  const levle = "warn";');
    expect(e.details.nearest.first_difference.actual).toBe('  const level = "warn";');
    expect(e.suggestion).not.toMatch(/do not apply/);
  });

  it('the same change really made (the frame occurs only where new_text is) stays already_applied', async () => {
    const text = 'function dev() {\n  const level = "info";\n}\nfunction prod() {\n  const level = "debug";\n}\n';
    const { f, d } = await fileWith('b.js', text);
    const before = snapshotTree(d, { withMtime: true });
    const e = expectCode(
      await client.call('edit_file', {
        path: f,
        edits: [
          {
            old_text: 'function prod() {\n  const level = "warn";',
            new_text: 'function prod() {\n  const level = "debug";',
          },
        ],
      }),
      'PATCH_FAILED',
    ).error;
    expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    expect(e.details.reason).toBe('already_applied');
    expect(e.details.edit_index).toBe(0);
  });
});

describe('already_applied for a hunk needs context that pins one place', () => {
  const PY =
    'def a():\n    total = 0\n    y = 2\n    return total\n\ndef b():\n    total = 0\n    y = 1\n    return total\n';

  it('a typo in the removed line, the new side at another place with the same context: no_match, not already_applied', async () => {
    const { f, d } = await fileWith('e.py', PY);
    const before = snapshotTree(d, { withMtime: true });
    const e = expectCode(
      await client.call('apply_patch', {
        path: f,
        patch: '@@ -7,3 +7,3 @@\n     total = 0\n-    y = l\n+    y = 2\n     return total\n',
      }),
      'PATCH_FAILED',
    ).error;
    expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    expect(e.details.reason).toBe('no_match');
    expect(e.details.hunk).toBe(1);
    expect(e.details.current_hash).toBe(contentHash(PY));
    expect(e.details.nearest.first_difference.expected).toBe('    y = l');
    expect(e.suggestion).not.toMatch(/do not apply this patch again/);
  });

  it('the same hunk really applied (its context occurs only around the new side) stays already_applied', async () => {
    const text = PY.replace('    y = 1', '    z = 1').replace('total = 0\n    z', 'count = 0\n    z');
    const { f, d } = await fileWith('f.py', text);
    const before = snapshotTree(d, { withMtime: true });
    const e = expectCode(
      await client.call('apply_patch', {
        path: f,
        patch: '@@ -1,4 +1,4 @@\n def a():\n     total = 0\n-    y = l\n+    y = 2\n     return total\n',
      }),
      'PATCH_FAILED',
    ).error;
    expect(snapshotTree(d, { withMtime: true })).toEqual(before);
    expect(e.details.reason).toBe('already_applied');
    expect(e.details.hunk).toBe(1);
  });
});

describe('a re-indented edit changes only the lines it targets', () => {
  it("keeps a blank line's blanks and an unchanged line's trailing blanks as the file has them", async () => {
    const text = 'class C:\n    def g(self):\n        a = 1   \n        \n        b = 2\n        c = 3\n';
    const { f } = await fileWith('c.py', text);
    const r = await client.callOk('edit_file', {
      path: f,
      edits: [
        {
          old_text: 'def g(self):\n    a = 1\n\n    b = 2\n    c = 3\n',
          new_text: 'def g(self):\n    a = 1\n\n    b = 20\n    c = 3\n',
        },
      ],
    });
    expect(r.edits[0].match).toBe('reindented');
    expect(r.edits[0].indent_shift).toBe('+4 spaces');
    expect(r.edits[0].lines).toEqual([2]);
    expect(readFileSync(f, 'utf8')).toBe(
      'class C:\n    def g(self):\n        a = 1   \n        \n        b = 20\n        c = 3\n',
    );
  });

  it('a CRLF file keeps its CRLF and its untouched lines', async () => {
    const text = 'a:\r\n    b: 1 \r\n    \r\n    c: 2\r\n';
    const { f } = await fileWith('d.yml', text);
    const r = await client.callOk('edit_file', {
      path: f,
      edits: [{ old_text: 'b: 1\n\nc: 2', new_text: 'b: 1\n\nc: 3' }],
    });
    expect(r.edits[0].match).toBe('reindented');
    expect(readFileSync(f, 'utf8')).toBe('a:\r\n    b: 1 \r\n    \r\n    c: 3\r\n');
  });
});

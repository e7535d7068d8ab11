/**
 * Patch placement and honest diagnoses end to end (issue 17), through the real server (2026 era):
 *  - the minimal cases: a Go file with TestA at line 7 and TestB at line 12 (4 lines inserted above since the
 *    diff); `@@ -9,3 +9,7 @@` appending TestC lands at the end of the file — the bytes, and the per-hunk report
 *    `{hunk: 1, line: 13, match: "exact", placed_by: "anchored_end", candidates: 2, offset: 4}` (what GNU patch calls
 *    "succeeded at 13 (offset 4 lines)"); the same hunk with `@@ @@` (offset null); deleting the trailing blank line
 *    removes the last line, not the blank line between the tests, with stale numbers and with `@@ @@`;
 *  - a hunk matching twice with nothing to single one out → PATCH_FAILED ambiguous with both candidates, file bytes
 *    and mtime unchanged;
 *  - edit_file `{"old_text": "zzz", "new_text": "y"}` on a file containing `y` → PATCH_FAILED no_match (not
 *    already_applied), no invented nearest region, file unchanged; apply_patch `-zzz` / `+y` likewise.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, test } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const GO = [
  'package x',
  '',
  'import (',
  '\t"testing"',
  ')',
  '',
  'func TestA(t *testing.T) {',
  '\trun(t)',
  '\tcheck(t)',
  '}',
  '',
  'func TestB(t *testing.T) {',
  '\trun(t)',
  '\tcheck(t)',
  '}',
  '',
].join('\n');
const GO_TRAILING_BLANK = `${GO}\n`;
const TEST_C = '\nfunc TestC(t *testing.T) {\n\tcheck(t)\n}\n';
const APPEND =
  '--- a/x_test.go\n+++ b/x_test.go\n@@ -9,3 +9,7 @@\n \trun(t)\n \tcheck(t)\n }\n+\n+func TestC(t *testing.T) {\n+\tcheck(t)\n+}\n';
const DELETE_BLANK = '--- a/x_test.go\n+++ b/x_test.go\n@@ -9,4 +9,3 @@\n \trun(t)\n \tcheck(t)\n }\n-\n';
const noNumbers = (p: string) => p.replace(/^@@ .* @@$/m, '@@ @@');

let client: TestClient;
let root: string;
let n = 0;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  const r = makeTree();
  const s = makeTree({}, 'fs-tools-state-');
  cleanups.push(r.cleanup, s.cleanup);
  root = r.dir;
  client = await connect('modern', { args: ['--state-dir', s.dir, root] });
});
afterAll(async () => {
  await client?.close();
  for (const c of cleanups) c();
});

/** A fresh directory under the server's root holding x_test.go with `content`. */
function area(content: string): { dir: string; file: string } {
  const dir = path.join(root, `t${++n}`);
  const file = path.join(dir, 'x_test.go');
  mkdirSync(dir);
  writeFileSync(file, content);
  return { dir, file };
}

describe("the issue's minimal cases through apply_patch", () => {
  test.each([
    ['append at the end, stale numbers', GO, APPEND, `${GO}${TEST_C}`, 4],
    ['append at the end, @@ @@', GO, noNumbers(APPEND), `${GO}${TEST_C}`, null],
    ['delete the trailing blank line, stale numbers', GO_TRAILING_BLANK, DELETE_BLANK, GO, 4],
    ['delete the trailing blank line, @@ @@', GO_TRAILING_BLANK, noNumbers(DELETE_BLANK), GO, null],
  ])('%s', async (_label, original, patch, want, offset) => {
    const { dir, file } = area(original);
    const r = await client.callOk('apply_patch', {
      patch,
      path: dir,
      expected_hashes: { [file]: contentHash(original) },
    });
    expect(readFileSync(file, 'utf8')).toBe(want);
    expect(r.files).toEqual([
      {
        path: file,
        action: 'modified',
        previous_hash: contentHash(original),
        content_hash: contentHash(want),
        hunks: [{ hunk: 1, line: 13, match: 'exact', placed_by: 'anchored_end', candidates: 2, offset }],
      },
    ]);
  });

  it('two equal matches and nothing stated to tell them apart → ambiguous, nothing written', async () => {
    const { dir, file } = area(GO);
    const before = snapshotTree(dir, { withMtime: true });
    const e = expectCode(
      await client.call('apply_patch', {
        patch: '--- a/x_test.go\n+++ b/x_test.go\n@@ @@\n \trun(t)\n-\tcheck(t)\n+\tverify(t)\n }\n',
        path: dir,
        expected_hashes: { [file]: contentHash(GO) },
      }),
      'PATCH_FAILED',
    );
    expect(e.error.details).toMatchObject({
      reason: 'ambiguous',
      hunk: 1,
      hunks: 1,
      count: 2,
      candidates: [8, 13],
      current_hash: contentHash(GO),
    });
    expect(snapshotTree(dir, { withMtime: true })).toEqual(before);
  });
});

describe('already_applied only on evidence', () => {
  const FILE = 'x = 1\ny\nz = 3\n';
  it('edit_file {"old_text": "zzz", "new_text": "y"} → no_match, not already_applied; file unchanged', async () => {
    const { dir, file } = area(FILE);
    const before = snapshotTree(dir, { withMtime: true });
    const e = expectCode(
      await client.call('edit_file', {
        path: file,
        edits: [{ old_text: 'zzz', new_text: 'y' }],
        expected_hash: contentHash(FILE),
      }),
      'PATCH_FAILED',
    );
    expect(e.error.details).toMatchObject({ reason: 'no_match', edit_index: 0, current_hash: contentHash(FILE) });
    expect(e.error.details.nearest).toBeUndefined();
    expect(e.error.message).not.toMatch(/already applied/i);
    expect(snapshotTree(dir, { withMtime: true })).toEqual(before);
  });

  it('apply_patch -zzz / +y → no_match, not already_applied', async () => {
    const { dir, file } = area(FILE);
    const e = expectCode(
      await client.call('apply_patch', {
        patch: '--- a/x_test.go\n+++ b/x_test.go\n@@ -1 +1 @@\n-zzz\n+y\n',
        path: dir,
        expected_hashes: { [file]: contentHash(FILE) },
      }),
      'PATCH_FAILED',
    );
    expect(e.error.details).toMatchObject({ reason: 'no_match', hunk: 1, expected: ['zzz'] });
    expect(e.error.details.nearest).toBeUndefined();
    expect(readFileSync(file, 'utf8')).toBe(FILE);
  });
});

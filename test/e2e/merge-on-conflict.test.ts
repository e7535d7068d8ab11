/**
 * on_conflict "merge" through the real server (docs/tools.md "Merging instead of refusing"): a change made against the
 * version the agent read is merged when someone else changed only other lines since (a header added, a formatter's
 * whitespace on other lines, lines appended), by git's rule; overlapping and touching changes stay OCC_MISMATCH
 * (`overlapping`) with nothing written; without the parameter the strict rule holds; a multi-file patch with one
 * conflicting file writes nothing anywhere. Every refusal is checked on the bytes on disk, not only on the code.
 */
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { contentHash } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

const root = makeTree({}, 'fs-tools-merge-');
const stateDir = makeTree({}, 'fs-tools-state-');
let client: TestClient;
let merging: TestClient;

/** 40 lines of source: `const vN = N;`. */
const BASE = Array.from({ length: 40 }, (_, i) => `const v${i + 1} = ${i + 1};\n`).join('');

/** The other writer's change far from line 25: a header on top, formatter whitespace on lines 5 and 10, appended lines. */
function outsideFar(text: string): string {
  return (
    '// header added by a hook\n' +
    text.replace('const v5 = 5;\n', 'const v5  =  5;\n').replace('const v10 = 10;\n', '\tconst v10 = 10;\n') +
    'export {};\n'
  );
}

const EDIT = [{ old_text: 'const v25 = 25;', new_text: 'const v25 = 2500;' }];

function file(name: string, content: string): string {
  const p = path.join(root.dir, name);
  writeFileSync(p, content);
  return p;
}

beforeAll(async () => {
  client = await connect('modern', { args: ['--state-dir', stateDir.dir, root.dir] });
  merging = await connect('legacy', { args: ['--state-dir', stateDir.dir, '--on-conflict=merge', root.dir] });
}, 60_000);

afterAll(async () => {
  await client.close();
  await merging.close();
  root.cleanup();
  stateDir.cleanup();
});

describe('edit_file on_conflict', () => {
  it('merges a change made far from the edit: both changes present, the result says so', async () => {
    const p = file('far.ts', BASE);
    const read = await client.callOk('read_file', { path: p });
    const theirs = outsideFar(BASE);
    writeFileSync(p, theirs);
    const r = await client.callOk('edit_file', { path: p, edits: EDIT, on_conflict: 'merge' });
    const expected = theirs.replace('const v25 = 25;', 'const v25 = 2500;');
    expect(readFileSync(p, 'utf8')).toBe(expected);
    expect(r.content_hash).toBe(contentHash(expected));
    expect(r.previous_hash).toBe(contentHash(theirs));
    // Their lines in the new file: the header (1), lines 5 and 10 (now 6 and 11), the appended line (42).
    expect(r.merged).toEqual({
      base_hash: read.content_hash,
      current_hash_before: contentHash(theirs),
      changed_ranges: [
        [1, 1],
        [6, 6],
        [11, 11],
        [42, 42],
      ],
    });
    // The diff is what this write changed on disk: only line 25 (now 26).
    expect(r.diff).toContain('-const v25 = 25;\n+const v25 = 2500;');
    expect(r.diff).not.toContain('header');
    // The session now knows the merged version: a next edit needs no read.
    await client.callOk('edit_file', { path: p, edits: [{ old_text: 'const v1 = 1;', new_text: 'const v1 = 0;' }] });
  });

  it('without the parameter the strict rule holds: OCC_MISMATCH, nothing written', async () => {
    const p = file('strict.ts', BASE);
    await client.callOk('read_file', { path: p });
    const theirs = outsideFar(BASE);
    writeFileSync(p, theirs);
    const e = (await client.callError('edit_file', { path: p, edits: EDIT })).error;
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.conflict.reason).toBe('modified');
    expect(readFileSync(p, 'utf8')).toBe(theirs);
  });

  it.each([
    ['overlapping (the same line)', 'const v25 = 25;\n', 'const v25 = 26;\n'],
    ['adjacent (the line before)', 'const v24 = 24;\n', 'const v24 = 42;\n'],
    ['adjacent (the line after)', 'const v26 = 26;\n', 'const v26 = 62;\n'],
    ['an insertion right after the edited line', 'const v26 = 26;\n', 'const inserted = 0;\nconst v26 = 26;\n'],
  ])('%s: OCC_MISMATCH overlapping with the regions, nothing written', async (_name, from, to) => {
    const p = file('overlap.ts', BASE);
    const read = await client.callOk('read_file', { path: p });
    const theirs = BASE.replace(from, to);
    writeFileSync(p, theirs);
    const e = (await client.callError('edit_file', { path: p, edits: EDIT, on_conflict: 'merge' })).error;
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.expected_hash).toBe(read.content_hash);
    expect(e.current_hash).toBe(contentHash(theirs));
    expect(e.conflict.reason).toBe('overlapping');
    expect(e.conflict.overlapping.length).toBe(1);
    const region = e.conflict.overlapping[0];
    expect(region.base[0]).toBeLessThanOrEqual(26);
    expect(region.base[1]).toBeGreaterThanOrEqual(24);
    expect(region.ours[0]).toBeLessThanOrEqual(25);
    expect(region.ours[1]).toBeGreaterThanOrEqual(25);
    expect(readFileSync(p, 'utf8')).toBe(theirs);
    expect(JSON.stringify(e)).not.toContain('const v'); // no file content in the envelope
  });

  it('a read version whose bytes are not held: OCC_MISMATCH modified with the note, nothing written', async () => {
    // Over 256 KiB: read_file returns its first page and the whole-file hash, and keeps no snapshot.
    const big = BASE + 'x'.repeat(300 * 1024) + '\n';
    const p = file('big.ts', big);
    await client.callOk('read_file', { path: p });
    const theirs = '// header\n' + big;
    writeFileSync(p, theirs);
    const e = (await client.callError('edit_file', { path: p, edits: EDIT, on_conflict: 'merge' })).error;
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.conflict.reason).toBe('modified');
    expect(e.conflict.note).toMatch(/needs the version you read/);
    expect(readFileSync(p, 'utf8')).toBe(theirs);
  });

  it('a change that does not apply to the read version: OCC_MISMATCH modified with the note, nothing written', async () => {
    const p = file('notapplicable.ts', BASE);
    await client.callOk('read_file', { path: p });
    const theirs = `${BASE}const added = 1;\n`;
    writeFileSync(p, theirs);
    const e = (
      await client.callError('edit_file', {
        path: p,
        edits: [{ old_text: 'const added = 1;', new_text: 'const added = 2;' }],
        on_conflict: 'merge',
      })
    ).error;
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.conflict.reason).toBe('modified');
    expect(e.conflict.note).toMatch(/does not apply to the version you read/);
    expect(readFileSync(p, 'utf8')).toBe(theirs);
  });

  it('a deleted file is never merged into existence; "absent" keeps its meaning', async () => {
    const p = file('gone.ts', BASE);
    await client.callOk('read_file', { path: p });
    unlinkSync(p);
    const e = (await client.callError('edit_file', { path: p, edits: EDIT, on_conflict: 'merge' })).error;
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.conflict.reason).toBe('deleted');
    expect(existsSync(p)).toBe(false);
    const q = file('present.ts', BASE);
    const a = (
      await client.callError('edit_file', { path: q, edits: EDIT, expected_hash: 'absent', on_conflict: 'merge' })
    ).error;
    expect(a.conflict.reason).toBe('created');
    expect(readFileSync(q, 'utf8')).toBe(BASE);
  });

  it('--on-conflict=merge makes merging the session default; on_conflict "fail" still refuses', async () => {
    const p = file('flag.ts', BASE);
    await merging.callOk('read_file', { path: p });
    const theirs = outsideFar(BASE);
    writeFileSync(p, theirs);
    const e = (await merging.callError('edit_file', { path: p, edits: EDIT, on_conflict: 'fail' })).error;
    expect(e.conflict.reason).toBe('modified');
    expect(readFileSync(p, 'utf8')).toBe(theirs);
    const r = await merging.callOk('edit_file', { path: p, edits: EDIT });
    expect(r.merged.current_hash_before).toBe(contentHash(theirs));
    expect(readFileSync(p, 'utf8')).toBe(theirs.replace('const v25 = 25;', 'const v25 = 2500;'));
  });
});

describe('apply_patch on_conflict', () => {
  const patchOf = (names: string[]) =>
    names
      .map(
        (n) =>
          `--- a/${n}\n+++ b/${n}\n@@ -24,3 +24,3 @@\n const v24 = 24;\n-const v25 = 25;\n+const v25 = 2500;\n const v26 = 26;\n`,
      )
      .join('');

  it('merges a file changed far from the hunk', async () => {
    const p = file('pa.ts', BASE);
    const read = await client.callOk('read_file', { path: p });
    const theirs = outsideFar(BASE);
    writeFileSync(p, theirs);
    const r = await client.callOk('apply_patch', { patch: patchOf(['pa.ts']), path: root.dir, on_conflict: 'merge' });
    const expected = theirs.replace('const v25 = 25;', 'const v25 = 2500;');
    expect(readFileSync(p, 'utf8')).toBe(expected);
    expect(r.files[0].content_hash).toBe(contentHash(expected));
    expect(r.files[0].merged.base_hash).toBe(read.content_hash);
    expect(r.files[0].merged.current_hash_before).toBe(contentHash(theirs));
  });

  it('one file merged and one conflicting: OCC_MISMATCH overlapping, nothing written anywhere', async () => {
    const a = file('pm-a.ts', BASE);
    const b = file('pm-b.ts', BASE);
    await client.callOk('read_file', { path: a });
    await client.callOk('read_file', { path: b });
    const theirsA = outsideFar(BASE);
    const theirsB = BASE.replace('const v25 = 25;\n', 'const v25 = 0;\n');
    writeFileSync(a, theirsA);
    writeFileSync(b, theirsB);
    const e = (
      await client.callError('apply_patch', {
        patch: patchOf(['pm-a.ts', 'pm-b.ts']),
        path: root.dir,
        on_conflict: 'merge',
      })
    ).error;
    expect(e.code).toBe('OCC_MISMATCH');
    expect(e.conflict.reason).toBe('overlapping');
    expect(e.path).toBe(b);
    expect(readFileSync(a, 'utf8')).toBe(theirsA);
    expect(readFileSync(b, 'utf8')).toBe(theirsB);
  });
});

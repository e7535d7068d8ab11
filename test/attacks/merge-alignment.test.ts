/**
 * Review attack on on_conflict "merge" (docs/tools.md "Merging instead of refusing"): a line diff can align repeated
 * lines in several ways of the same cost, not only by sliding one hunk. On these triples git's diff puts our change
 * next to theirs (a conflict for `git merge-file`) while one Myers tie-break keeps them apart; merge3 must not produce
 * bytes there. Each triple is checked against the real `git merge-file`, so the test pins git's verdict too.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { merge3 } from '../../src/patch/merge3.js';

/** [base, theirs, ours]; found by a random small-alphabet search against git merge-file. */
const TRIPLES: Array<[string, string, string]> = [
  // Both sides drop the last newline; ours also adds a line that git's diff places at the end of the file.
  ['y\nx\nx\ny\nx\ny\nx\nx\n', 'y\nx\nx\ny\nx\ny\nx\nx', 'y\nx\ny\nx\ny\nx\ny\nx\nx'],
];

/** git merge-file's exit status (0: clean) and output for one triple. */
function gitMergeFile(base: string, theirs: string, ours: string): { status: number; out: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-merge-align-'));
  try {
    for (const [name, text] of [
      ['o', base],
      ['t', theirs],
      ['u', ours],
    ])
      writeFileSync(path.join(dir, name), text);
    try {
      const out = execFileSync('git', ['merge-file', '-p', 't', 'o', 'u'], { cwd: dir, encoding: 'utf8' });
      return { status: 0, out };
    } catch (error) {
      const e = error as { status: number; stdout: string };
      return { status: e.status, out: e.stdout };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

it('never merges a triple that git merge-file calls a conflict, whatever alignment the diff picks', () => {
  for (const [base, theirs, ours] of TRIPLES) {
    expect(gitMergeFile(base, theirs, ours).status).toBeGreaterThan(0);
    expect(merge3(base, theirs, ours).kind).toBe('conflict');
    expect(merge3(base, ours, theirs).kind).toBe('conflict');
  }
});

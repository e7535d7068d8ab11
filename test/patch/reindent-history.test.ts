/**
 * Indentation-tolerant edits never change a line the agent did not target (docs/errors.md "Indentation-tolerant
 * edits"), on real changes: every hunk of this repository's own history (the commits up to a fixed one, as
 * test/e2e/patch-bench-sample.test.ts samples them) becomes an edit (old side → new side), and the same edit is sent
 * again with its indentation shifted — every line 2 spaces deeper, every line's common indentation removed, and
 * leading 4-space runs written as tabs. Each shifted edit applied as `reindented` must give exactly the bytes of the
 * unshifted edit; the others are refused (PATCH_FAILED) or match the shifted text verbatim elsewhere (exact). The same
 * shifted hunk as a `@@ @@` patch (apply_patch's engine) likewise gives the unshifted hunk's bytes when re-indented. Skipped without the history (a shallow clone).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { PatchFailedError } from '../../src/errors/tool-error.js';
import { applyEdits, type TextEdit } from '../../src/patch/apply-edits.js';
import { applyHunks } from '../../src/patch/locate-hunks.js';
import { parseUnifiedDiff, type Hunk } from '../../src/patch/parse-unified.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const UNTIL = 'b69ebe098fe79f827fcef365cdce29bcd528dff3';
const COMMITS = 40;

const git = (args: string[]) => execFileSync('git', ['-C', REPO, ...args], { maxBuffer: 64 << 20 }).toString();

function hasHistory(): boolean {
  try {
    execFileSync('git', ['-C', REPO, 'cat-file', '-e', `${UNTIL}^{commit}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function tryEdit(text: string, edit: TextEdit): { text: string; match: string } | 'refused' {
  try {
    const r = applyEdits(text, [edit], '/r/f');
    return { text: r.text, match: r.edits[0]?.match ?? 'exact' };
  } catch (error) {
    if (error instanceof PatchFailedError) return 'refused';
    throw error;
  }
}

/** One hunk alone as a `@@ @@` patch (no line numbers: placed by content only), its lines through `shift`. */
function tryHunk(
  text: string,
  hunk: Hunk,
  shift: (line: string) => string,
): { text: string; match: string } | 'refused' {
  const body = hunk.lines.map((l) => `${l.op}${shift(l.text)}\n`).join('');
  try {
    const r = applyHunks(text, parseUnifiedDiff(`@@ @@\n${body}`)[0], '/r/f');
    return { text: r.text, match: r.hunks[0].match };
  } catch (error) {
    if (error instanceof PatchFailedError) return 'refused';
    throw error;
  }
}

const shifts: Array<[string, (line: string) => string]> = [
  ['two spaces deeper', (l) => (l.trim() ? `  ${l}` : l)],
  ['tabs for 4 spaces', (l) => l.replace(/^((?: {4})+)/, (m) => '\t'.repeat(m.length / 4))],
];

it.skipIf(!hasHistory())(
  'a shifted hunk as an edit: the unshifted bytes or a refusal, never others',
  () => {
    const commits = git(['rev-list', '--no-merges', `--max-count=${COMMITS}`, UNTIL])
      .trim()
      .split('\n');
    const tally = { edits: 0, reindented: 0, refused: 0, hunks_reindented: 0 };
    for (const c of commits) {
      const diff = git(['diff', '-U3', `${c}^`, c, '--', '*.ts', '*.md', '*.mjs', '*.json', '*.yml']);
      for (const file of parseUnifiedDiff(diff)) {
        if (!file.oldPath || !file.newPath) continue;
        const before = git(['show', `${c}^:${file.oldPath}`]);
        for (const hunk of file.hunks) {
          const oldSide = hunk.lines.filter((l) => l.op !== '+').map((l) => l.text);
          const newSide = hunk.lines.filter((l) => l.op !== '-').map((l) => l.text);
          if (oldSide.length === 0 || oldSide.every((l) => !l.trim())) continue;
          const base = tryEdit(before, { old_text: `${oldSide.join('\n')}\n`, new_text: `${newSide.join('\n')}\n` });
          if (base === 'refused') continue;
          // Removed from both sides alike (a uniform shift the agent can express: no line goes below column 0).
          const common = Math.min(
            ...[...oldSide, ...newSide].filter((l) => l.trim()).map((l) => /^ */.exec(l)![0].length),
          );
          const all: Array<[string, (line: string) => string]> = [
            ...shifts,
            ['common indentation removed', (l) => (l.trim() ? l.slice(common) : l)],
          ];
          for (const [label, shift] of all) {
            const edit = {
              old_text: `${oldSide.map(shift).join('\n')}\n`,
              new_text: `${newSide.map(shift).join('\n')}\n`,
            };
            if (edit.old_text === `${oldSide.join('\n')}\n`) continue;
            tally.edits++;
            const r = tryEdit(before, edit);
            if (r === 'refused') {
              tally.refused++;
              continue;
            }
            // The shifted text may exist verbatim elsewhere (a nested `});`): an exact match of what was sent.
            if (r.match !== 'reindented') continue;
            tally.reindented++;
            expect(r.text, `${c} ${file.newPath} @@ ${hunk.oldStart}: ${label}`).toBe(base.text);
            // The same shifted hunk through apply_patch's engine: the unshifted hunk's bytes, or a refusal.
            const plain = tryHunk(before, hunk, (l) => l);
            const h = tryHunk(before, hunk, shift);
            if (plain === 'refused' || h === 'refused' || h.match !== 'reindented') continue;
            tally.hunks_reindented++;
            expect(h.text, `hunk: ${c} ${file.newPath} @@ ${hunk.oldStart}: ${label}`).toBe(plain.text);
          }
        }
      }
    }
    console.log(`reindent over history: ${JSON.stringify(tally)}`);
    expect(tally.reindented).toBeGreaterThan(50);
    expect(tally.hunks_reindented).toBeGreaterThan(50);
  },
  120_000,
);

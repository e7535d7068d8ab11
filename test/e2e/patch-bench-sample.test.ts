/**
 * A small sample of the real-commit patch benchmark (bench/patch.mjs, `npm run bench:patch`, issue 17) as a
 * regression test: about 48 cases spread evenly over every damage variant and over this repository's own history,
 * applied with apply_patch through ONE real MCP session (dist/cli.js) and, side by side, `git apply`; every touched
 * file compared byte for byte with the commit's result. Pins: apply_patch 0 wrong (success with other bytes) and
 * 0 damaged (failure with the file changed), ≥ 99.5 % correct, and no case refused that git apply applied correctly.
 * Needs the history: skipped when this checkout has fewer than two commits (a shallow CI clone); CI clones fresh, so
 * it has them. The sample is taken from the history up to a fixed commit (SAMPLE_UNTIL), not HEAD: spread evenly over
 * a history that every commit lengthens, it moved with each commit, and one commit moved it onto a hunk that is
 * genuinely ambiguous without line numbers (a correct refusal, but 1 of 42 is under 99.5 %): CI failed on a change
 * that touched no patch code. `npm run bench:patch` still measures the whole, growing history.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The sample's history ends here (the fifth session's last commit; its sample passed in CI). */
const SAMPLE_UNTIL = 'b69ebe098fe79f827fcef365cdce29bcd528dff3';

/** SAMPLE_UNTIL when this checkout has it, else HEAD (a rewritten history: the sample then moves with it). */
function sampleUntil(): string {
  try {
    execFileSync('git', ['-C', REPO, 'cat-file', '-e', `${SAMPLE_UNTIL}^{commit}`], { stdio: 'ignore' });
    return SAMPLE_UNTIL;
  } catch {
    return 'HEAD';
  }
}

function commitCount(): number {
  try {
    return Number(
      execFileSync('git', ['-C', REPO, 'rev-list', '--count', '--no-merges', 'HEAD'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim(),
    );
  } catch {
    return 0;
  }
}

interface Cell {
  cases: number;
  correct: number;
  wrong: number;
  refused: number;
  damaged: number;
}
interface Report {
  cases: number;
  commits: number;
  table: Record<string, Record<string, Cell>>;
  acceptance: { wrong: number; damaged: number; correct_pct: number; refused_where_another_tool_was_correct: string[] };
  misses: Array<{ id: string; outcome: string; message: string }>;
}

it.skipIf(commitCount() < 2)(
  'apply_patch on a sample of real commits and their damaged variants: 0 wrong, 0 damaged, ≥ 99.5 % correct',
  () => {
    const out = execFileSync(
      process.execPath,
      [
        path.join(REPO, 'bench', 'patch.mjs'),
        '--sample=48',
        '--tools=apply_patch,git_apply',
        `--until=${sampleUntil()}`,
        '--json',
      ],
      {
        cwd: REPO,
        encoding: 'utf8',
        maxBuffer: 64 << 20,
        // About 30 s on an idle 2-core machine; more than 150 s was seen at a load average of 13 (other suites on
        // the same cores). A bound, not a target: the time of this sample is not what the test checks.
        timeout: 420_000,
      },
    );
    const report = JSON.parse(out) as Report;
    expect(report.cases).toBeGreaterThanOrEqual(12);
    // Every variant is in the sample (the ones needing ≥ 2 hunks only when some commit has such a file).
    for (const v of [
      'clean',
      'no_line_numbers',
      'wrong_counts',
      'stale_top',
      'stripped_ws',
      'no_headers',
      'fenced',
      'reduced_context',
      'crlf_target',
      'blank_no_space',
    ]) {
      expect(report.table[v]?.apply_patch.cases, v).toBeGreaterThan(0);
    }
    expect(report.acceptance.wrong, JSON.stringify(report.misses)).toBe(0);
    expect(report.acceptance.damaged, JSON.stringify(report.misses)).toBe(0);
    expect(report.acceptance.correct_pct, JSON.stringify(report.misses)).toBeGreaterThanOrEqual(99.5);
    expect(report.acceptance.refused_where_another_tool_was_correct).toEqual([]);
    // The comparison can fail: git apply cannot apply the headerless and @@ @@ variants, so its column is not all correct.
    expect(report.table.all.git_apply.correct).toBeLessThan(report.table.all.git_apply.cases);
  },
  450_000,
);

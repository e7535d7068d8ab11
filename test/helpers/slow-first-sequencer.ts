/**
 * vitest's file order with the suite's slowest files first (vitest.config.ts `sequence.sequencer`).
 *
 * vitest's own order (BaseSequencer) runs the files it has timed longest first, which keeps the two workers busy to
 * the end; but on a fresh clone it has timed nothing and keeps the glob's order, so a 10–20 s file could start last
 * and run alone while the other worker sat idle (up to ~20 s of `npm test` on a fresh clone, docs/development.md
 * "Where `npm test`'s time goes"). Here the files of {@link SLOW_FIRST} come first, in that order, within their
 * project; every other file keeps vitest's order. Nothing about a file's run changes, only when it starts.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The suite's slowest files, slowest first (measured 2026-12-04 on a fresh clone, 2 cores, without coverage: each
 * 7–23 s). A file missing here only starts later; a name that no longer exists is ignored.
 */
export const SLOW_FIRST: readonly string[] = [
  'test/attacks/token-dirs.test.ts',
  'test/attacks/git-object-store-stall.test.ts',
  'test/e2e/large-trees.test.ts',
  'test/attacks/own-files.test.ts',
  'test/e2e/git.test.ts',
  'test/attacks/own-files-review.test.ts',
  'test/e2e/undo.test.ts',
  'test/e2e/patch-crash.test.ts',
  'test/e2e/response-budget.test.ts',
  'test/attacks/bounded-work.test.ts',
  'test/e2e/github-issues.test.ts',
  'test/e2e/roots.test.ts',
  'test/e2e/cli-commands.test.ts',
  'test/attacks/planted-execution.test.ts',
  'test/e2e/occ-concurrency.test.ts',
  'test/attacks/containment-fuzz.test.ts',
  'test/e2e/gitlab-issues.test.ts',
];

/** BaseSequencer's order, then (stably) the files of SLOW_FIRST first within each project. */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (file: TestSpecification): number => {
      const at = SLOW_FIRST.findIndex((name) => file.moduleId === `${root}/${name}`);
      return at < 0 ? SLOW_FIRST.length : at;
    };
    const projectOrder = new Map<string, number>();
    for (const file of sorted)
      if (!projectOrder.has(file.project.name)) projectOrder.set(file.project.name, projectOrder.size);
    return sorted
      .map((file, index) => ({ file, index }))
      .sort(
        (a, b) =>
          projectOrder.get(a.file.project.name)! - projectOrder.get(b.file.project.name)! ||
          rank(a.file) - rank(b.file) ||
          a.index - b.index,
      )
      .map(({ file }) => file);
  }
}

/**
 * Every mutation that happened is charged to --mutation-budget, and a call that reports a refusal changed nothing
 * (issue 11 acceptance "Concurrency", the budget part), against real server processes with a budget of 1:
 *   1. five concurrent write_file calls from one session, racing a second (unlimited) session on the same names:
 *      exactly as many files carry the budgeted session's bytes as its budget says it used (≤ 1), and each of its
 *      refused calls wrote nothing;
 *   2. move_path from a git work tree (with its correct expected_status_hash) to a directory outside any work tree,
 *      five times: a move that happened is charged (used = moves done ≤ 1) and a refused move left source and
 *      destination as they were. Before issue 11 the move happened, computing the destination's status hash then
 *      failed with VALIDATION, and the budget read `used: 0` after five moves.
 * Part 2 depends on the single mutation pipeline of issue 11 item 3 ("every check that can fail runs before the
 * first effect; a mutation that happened is always charged"), built in the mutation pipeline (src/mutation/pipeline.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { envelopeOf } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const cleanups: Array<() => unknown> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function session(args: string[]): Promise<TestClient> {
  const c = await connect('modern', { args });
  cleanups.push(() => c.close());
  return c;
}

describe('with --mutation-budget=1 every mutation that happened is charged', () => {
  it('concurrent writes: files written by the budgeted session = budget used ≤ 1; its refusals wrote nothing', async () => {
    const root = makeTree({}, 'fs-tools-budget-');
    cleanups.push(root.cleanup);
    const budgeted = await session(['--mutation-budget=1', root.dir]);
    const other = await session([root.dir]);
    const names = Array.from({ length: 5 }, (_, i) => `f${i}.txt`);
    const results = await Promise.all([
      ...names.map((n) =>
        budgeted.call('write_file', { path: n, content: `budgeted ${n}\n`, expected_hash: 'absent' }),
      ),
      ...names.map((n) => other.call('write_file', { path: n, content: `other ${n}\n`, expected_hash: 'absent' })),
    ]);
    const mine = results.slice(0, names.length);
    const written = names.filter(
      (n) => existsSync(path.join(root.dir, n)) && readFileSync(path.join(root.dir, n), 'utf8') === `budgeted ${n}\n`,
    );
    const used = (await budgeted.callOk('list_allowed_directories', {})).budget.used as number;
    expect(used).toBeLessThanOrEqual(1);
    expect(written.length).toBe(used);
    expect(mine.filter((r) => !r.isError).length).toBe(used);
    for (const [i, r] of mine.entries()) {
      if (r.isError) expect(['BUDGET_EXCEEDED', 'OCC_MISMATCH']).toContain(envelopeOf(r).error.code);
      else expect(written).toContain(names[i]);
    }
  });

  it('move_path from a work tree (correct expected_status_hash) to a plain directory: moves that happened = budget used ≤ 1 (needs the pipeline of item 3)', async () => {
    const root = makeTree({ repo: { 'keep.txt': 'keep\n' }, plain: {} }, 'fs-tools-budget-nogit-');
    cleanups.push(root.cleanup);
    execFileSync('git', ['-c', 'init.defaultBranch=main', 'init', '-q'], { cwd: path.join(root.dir, 'repo') });
    const c = await session(['--mutation-budget=1', root.dir]);
    let moved = 0;
    for (let i = 0; i < 5; i++) {
      writeFileSync(path.join(root.dir, 'repo', `src${i}.txt`), `source ${i}\n`);
      const status = await c.callOk('git_status', { path: 'repo' });
      // The source's work tree is unchanged since that status: the STALE_GIT check passes. The destination lies
      // outside any work tree, so its new status hash cannot be computed — an effect must not precede that failure.
      const r = await c.call('move_path', {
        source: `repo/src${i}.txt`,
        destination: `plain/dst${i}.txt`,
        expected_status_hash: status.status_hash,
      });
      const didMove = existsSync(path.join(root.dir, 'plain', `dst${i}.txt`));
      if (didMove) moved++;
      if (r.isError) {
        // A refusal changed nothing.
        expect(didMove, `call ${i} reported ${envelopeOf(r).error.code} but moved the file`).toBe(false);
        expect(readFileSync(path.join(root.dir, 'repo', `src${i}.txt`), 'utf8')).toBe(`source ${i}\n`);
      }
    }
    const used = (await c.callOk('list_allowed_directories', {})).budget.used as number;
    expect(moved).toBe(used);
    expect(used).toBeLessThanOrEqual(1);
  });
});

/**
 * The walk's time slices against its step codes (src/fs/walk-scan.ts `scanEntries`, review of r17-list): a walk whose
 * filter is slow enough that a yield to the event loop falls due every few entries (SCAN_DUE, then the same entry
 * again without a second yield check) judges, hands over and skips exactly what the same walk with a fast filter
 * does — with and without lstat, with a synchronous sink and one answering by promise, from the start and from
 * resume cursors inside nested directories (one at an entry that no longer exists). The slow walks must really yield
 * (a task waiting on the event loop gets turns while they run), and each entry's `parent` is its directory.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { walkInto, type WalkOptions } from '../../src/fs/walk.js';
import { WALK_SLICE_MS } from '../../src/fs/walk-scan.js';
import type { AllowedPath } from '../../src/policy/resolve-path.js';
import { makeTree } from '../helpers/tree.js';

const t = makeTree({}, 'fs-tools-walk-slices-');
afterAll(() => t.cleanup());
const root = realpathSync(t.dir) as AllowedPath;
for (const d of ['a', 'b/c', 'b/d/e', 'f']) mkdirSync(path.join(root, d), { recursive: true });
for (const d of ['a', 'b', 'b/c', 'b/d', 'b/d/e', 'f']) {
  for (let i = 0; i < 12; i++) writeFileSync(path.join(root, d, `n${String(i).padStart(2, '0')}.txt`), 'x');
}
writeFileSync(path.join(root, 'b/.gitignore'), 'n0*.txt\n!n05.txt\n');

/** One walk's events: filter calls, hand-overs and skips, in order. */
async function events(o: {
  slowMs: number;
  stats: boolean;
  promises: boolean;
  resume: WalkOptions['resume'];
}): Promise<{ events: string[]; ticks: number }> {
  const out: string[] = [];
  let ticks = 0;
  let walking = true;
  const spin = (): void => {
    ticks++;
    if (walking) setImmediate(spin);
  };
  setImmediate(spin);
  try {
    await walkInto(
      {
        base: root,
        rootReal: root,
        maxDepth: 4,
        depthIsLimit: true,
        respectGitignore: true,
        childOf: (d, n) => `${d}/${n}` as AllowedPath,
        stats: o.stats,
        resume: o.resume,
        exclude: ['**/n11.txt'],
        onSkip: (reason, rel) => out.push(`skip ${reason} ${rel}`),
        filter: (abs, rel, name) => {
          const until = performance.now() + o.slowMs;
          while (performance.now() < until) {
            /* a slow policy check */
          }
          out.push(`filter ${rel}`);
          return name === 'n07.txt' ? 'omit' : 'ok';
        },
      },
      (item, name, parent) => {
        out.push(
          `sink ${item.relative} ${item.type} ${item.depth}${parent === path.dirname(item.absolute) ? '' : ' BAD'}`,
        );
        return o.promises ? new Promise((r) => setImmediate(() => r(true))) : true;
      },
    );
  } finally {
    walking = false;
  }
  return { events: out, ticks };
}

describe('walk time slices (SCAN_DUE) change nothing the walk decides', () => {
  const resumes: WalkOptions['resume'][] = [
    null,
    { components: ['b', 'd', 'e', 'n03.txt'], inclusive: false },
    { components: ['b', 'c', 'gone.txt'], inclusive: true },
  ];
  for (const stats of [false, true]) {
    for (const promises of [false, true]) {
      it(`stats ${stats}, sink by promise ${promises}: the same events with slices due every few entries`, async () => {
        for (const resume of resumes) {
          const fast = await events({ slowMs: 0, stats, promises, resume });
          const slow = await events({ slowMs: (WALK_SLICE_MS / 8) * 1.5, stats, promises, resume });
          expect(slow.events).toEqual(fast.events);
          expect(fast.events.some((e) => e.endsWith(' BAD'))).toBe(false);
          expect(fast.events.filter((e) => e.startsWith('sink')).length).toBeGreaterThan(10);
          // The slow walk held the loop for many slices in all: other work must have had turns in between.
          const held = slow.events.filter((e) => e.startsWith('filter')).length * ((WALK_SLICE_MS / 8) * 1.5);
          expect(slow.ticks).toBeGreaterThanOrEqual(Math.floor(held / (4 * WALK_SLICE_MS)));
        }
      });
    }
  }
});

/**
 * Review of r17-literal (src/tools/search-pager.ts): the pager now reads the clock for the first wanted entry and then
 * only every 64th (CLOCK_EVERY), where main's build reads it before each one. An entry whose content is worked out
 * on the main thread one at a time (a candidate over the reader threads' 32 KiB, read here and matched by a regex job
 * that may run up to the 1 s per-file limit) can take up to ~1 s, so the call's 20 s budget can be overrun by 63 such
 * entries (~1 min) instead of one, and a search main's build cuts at its budget (truncated, a cursor) may instead
 * answer later with a different page. Here the pager is driven directly with a 200 ms budget and entries of 40 ms
 * each: main's build stops after ~6 entries, ~0.25 s; r17-literal pages 64 of them, ~2.6 s.
 */
import { describe, expect, it } from 'vitest';
import { ReadTicket } from '../../src/fs/search-reader.js';
import type { ReadOutcome } from '../../src/fs/search-reader-protocol.js';
import type { WalkItem } from '../../src/fs/walk.js';
import type { AllowedPath } from '../../src/policy/resolve-path.js';
import type { ContentMatch, Loaded } from '../../src/tools/search-match.js';
import { SearchPage } from '../../src/tools/search-page.js';
import { pageEntries } from '../../src/tools/search-pager.js';
import { NO_SKIPS, type SearchWalk } from '../../src/tools/search-walk.js';

const FILES = 100;
const ENTRY_MS = 40;
const BUDGET_MS = 200;

/** A walk of FILES files in one directory, honouring the sink's stop and pause. */
const walk: SearchWalk = {
  run: async (sink) => {
    for (let i = 0; i < FILES; i++) {
      const name = `f${String(i).padStart(3, '0')}.txt`;
      const item: WalkItem = {
        relative: name,
        absolute: `/r/${name}` as AllowedPath,
        rootRelative: name,
        type: 'file',
        depth: 1,
      };
      const go = sink(item, name, '/r');
      if (go === false || (go !== true && !(await go))) return;
    }
  },
  takeSkips: () => NO_SKIPS,
  ignoreRules: () => 0,
};

/** Every file is a deferred candidate (answered at once by its "batch"), worked out on this thread in ENTRY_MS. */
const DEFERRED: ReadOutcome = { kind: 'deferred' };
const content: ContentMatch = {
  start: () => Object.create(ReadTicket.prototype, { outcome: { get: () => DEFERRED } }) as ReadTicket,
  finish: () => new Promise<Loaded>((resolve) => setTimeout(() => resolve({ kind: 'no_match' }), ENTRY_MS)),
};

describe('the search time budget with slow entries', () => {
  it('is checked before each entry: a page stops within one entry of its deadline', async () => {
    const page = new SearchPage({
      mode: 'content',
      outputMode: 'matches',
      maxResults: 500,
      contextLines: 0,
      resumeFile: null,
      resumeSkip: 0,
    });
    const t0 = Date.now();
    const pager = pageEntries({ walk, content, globMatch: null, page, deadline: t0 + BUDGET_MS });
    await walk.run(pager.sink);
    await pager.drain();
    const elapsed = Date.now() - t0;
    // Out of time: truncated, with a cursor at the entry where the clock said so.
    expect(page.truncated).toBe(true);
    expect(page.next).not.toBeNull();
    // Within about one entry of the budget (slack for a loaded machine), not 63 entries past it.
    expect(page.filesScanned).toBeLessThan(20);
    expect(elapsed).toBeLessThan(BUDGET_MS + ENTRY_MS + 500);
  });
});

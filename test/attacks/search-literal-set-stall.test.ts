/**
 * The required set of literals of a regular expression (src/fs/required-literal.ts `requiredLiteralSet`) is worked
 * out on the main thread when a query is compiled (src/fs/line-matcher.ts `createLineMatcher`: search_files and
 * replace_in_files), so its cost must stay linear in the pattern (docs/security.md "Bounded work"). A query of one long
 * run of literals followed by many short runs (`x` × 20,000 then `.abc` × 5,000: 40,000 characters, far under the
 * 10 MB a message may hold) made it compare every short run against the long one by counting the long one's code
 * points again, about 20,000 × 5,000 steps: the server answered nothing for seconds (3.4 s for this pattern in
 * process; 130 s for one of 200,000 characters). Run against the real server over stdio while a watchdog pings it
 * (test/helpers/stall-watchdog.ts), with an idle second server for the machine's own stalls: the search still finds
 * the file. Fixed by counting each run once and by working out no literal for a pattern over 8,192 characters (no
 * prefilter, the same results); in process, a pattern of the same shape under that length still gets its long run.
 * Compiling the query itself (`new RegExp`, on the main thread) held the event loop for 160–700 ms at 8 MB: a query over
 * 65,536 characters is refused (VALIDATION query_too_long) before anything is compiled, as fast as any refusal.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_QUERY_CHARS } from '../../src/fs/line-matcher.js';
import { requiredLiteral, requiredLiteralSet } from '../../src/fs/required-literal.js';
import { envelopeOf, StallSession } from '../helpers/stall-watchdog.js';
import { makeTree } from '../helpers/tree.js';

/** The worst stall allowed on the 2-core machines the suite runs on, ms (as test/attacks/bounded-work.test.ts). */
const STALL_BOUND_MS = 250;

/** One long run of literals, then many short ones: every match holds the long run and each `abc`. */
const LONG = 20_000;
const SHORT = 5_000;
const PATTERN = `${'x'.repeat(LONG)}${'.abc'.repeat(SHORT)}`;

const tree = makeTree({}, 'fs-tools-literal-set-stall-');
let session: StallSession;
let idle: StallSession;

beforeAll(async () => {
  // A file the pattern matches, and one holding only the short run (no match: the prefilter may skip it).
  writeFileSync(path.join(tree.dir, 'match.txt'), `${'x'.repeat(LONG)}${'-abc'.repeat(SHORT)}\n`);
  writeFileSync(path.join(tree.dir, 'other.txt'), 'abc abc abc\n');
  session = await StallSession.start(['--state-dir', path.join(tree.dir, '.state'), tree.dir]);
  idle = await StallSession.start(['--state-dir', path.join(tree.dir, '.state-idle'), tree.dir]);
  // The first search starts the reader threads: not the stall measured here.
  await session.call('search_files', { path: tree.dir, query: 'ab+c', regex: true });
}, 60_000);

afterAll(async () => {
  await session?.close();
  await idle?.close();
  tree.cleanup();
});

describe('the required set of a long pattern', () => {
  it('is the long run under the length cap, and none over it (no prefilter rather than a stall)', () => {
    // Under the cap (8,192 characters) the same shape still gives its long run; over it, nothing is worked out.
    const short = `${'x'.repeat(4000)}${'.abc'.repeat(1000)}`;
    expect(requiredLiteralSet(short, 'u')).toEqual(['x'.repeat(4000)]);
    expect(requiredLiteral(short, 'u')).toBe('x'.repeat(4000));
    expect(requiredLiteralSet(PATTERN, 'u')).toBeNull();
    expect(requiredLiteral(PATTERN, 'u')).toBeNull();
  });

  it.each(['search_files', 'replace_in_files'])(
    '%s with the pattern keeps the server answering',
    async (tool) => {
      const args =
        tool === 'search_files'
          ? { path: tree.dir, query: PATTERN, regex: true, output_mode: 'files_with_matches' }
          : { path: tree.dir, query: PATTERN, regex: true, replacement: 'y', dry_run: true };
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const [busy, calm] = await Promise.all([
        session.watch(() => session.call(tool, args).finally(finish)),
        idle.watch(() => finished),
      ]);
      const bound = Math.max(STALL_BOUND_MS, calm.worstStallMs + STALL_BOUND_MS);
      console.log(
        `stall ${tool} long pattern: ${busy.worstStallMs} ms (${busy.elapsedMs} ms; idle ${calm.worstStallMs} ms)`,
      );
      expect(envelopeOf(busy.value)).toBeNull();
      const result = busy.value.result.structuredContent;
      if (tool === 'search_files') expect(result.files).toEqual(['match.txt']);
      else expect(result.replacements).toBe(1);
      expect(busy.worstStallMs).toBeLessThanOrEqual(bound);
    },
    120_000,
  );
});

describe('a query longer than the cap', () => {
  it.each([
    ['search_files', true],
    ['search_files', false],
    ['replace_in_files', true],
  ] as const)(
    '%s (regex %s) of 8 MB is refused before it is compiled',
    async (tool, regex) => {
      const query = `${'(a|b)'.repeat(1_600_000)}c`;
      const args =
        tool === 'search_files'
          ? { path: tree.dir, query, regex, output_mode: 'files_with_matches' }
          : { path: tree.dir, query, regex, replacement: 'y', dry_run: true };
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const [busy, calm] = await Promise.all([
        session.watch(() => session.call(tool, args).finally(finish)),
        idle.watch(() => finished),
      ]);
      const bound = Math.max(STALL_BOUND_MS, calm.worstStallMs + STALL_BOUND_MS);
      console.log(`stall ${tool} 8 MB query: ${busy.worstStallMs} ms (idle ${calm.worstStallMs} ms)`);
      const envelope = envelopeOf(busy.value);
      expect(envelope?.code).toBe('VALIDATION');
      expect(envelope?.details).toMatchObject({ reason: 'query_too_long', field: 'query', limit: MAX_QUERY_CHARS });
      expect(busy.worstStallMs).toBeLessThanOrEqual(bound);
    },
    120_000,
  );

  it('a query of exactly the cap still runs', async () => {
    const query = 'z'.repeat(MAX_QUERY_CHARS);
    const r = await session.call('search_files', { path: tree.dir, query, output_mode: 'files_with_matches' });
    expect(envelopeOf(r)).toBeNull();
    expect(r.result.structuredContent.files).toEqual([]);
  }, 60_000);
});

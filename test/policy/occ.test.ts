/**
 * Optimistic concurrency (src/policy/occ.ts; SPEC §5, §3.3 step 7), in-process. Pins:
 *  - an explicit expected_hash: equal passes, different is OCC_MISMATCH modified (with changed line ranges when
 *    this session kept a snapshot), "absent" passes only for a missing file (else OCC_MISMATCH created);
 *  - no expected_hash: auto-OCC off passes; block refuses an unread existing file (HASH_REQUIRED) and a changed or
 *    deleted remembered one (OCC_MISMATCH, deleted not retryable); warn lets them through with a warning;
 *  - HashMemory: forget, forgetUnder (a directory and what is below it, not a sibling prefix), snapshot by hash,
 *    and the snapshot size caps (a large file keeps its hash but no snapshot);
 *  - on_conflict "merge": only a modification from a read version whose bytes are held is merged (the note says
 *    why not), and the overlapping conflict's envelope fields.
 */
import { describe, expect, it } from 'vitest';
import { OccMismatchError } from '../../src/errors/tool-error.js';
import {
  ABSENT,
  changedRanges,
  checkExpectedHash,
  HashMemory,
  MERGE_NOTES,
  mergeBaseFor,
  overlappingConflict,
  withMergeNote,
  type OccCheck,
} from '../../src/policy/occ.js';

const H1 = `sha256:${'1'.repeat(64)}`;
const H2 = `sha256:${'2'.repeat(64)}`;

function check(over: Partial<OccCheck>): OccCheck {
  return {
    absolute: '/r/a.txt',
    real: '/r/a.txt',
    current: { hash: H1 },
    expected: undefined,
    autoOcc: 'block',
    memory: new HashMemory(),
    ...over,
  };
}

const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('did not throw');
};

describe('checkExpectedHash with expected_hash', () => {
  it('equal passes and names the hash it checked against', () => {
    expect(checkExpectedHash(check({ expected: H1 }))).toEqual({ checkedAgainst: H1, externalChange: false });
  });

  it('different is OCC_MISMATCH modified, with the changed lines when a snapshot of the expected version exists', () => {
    const memory = new HashMemory();
    memory.remember('/r/a.txt', H2, Buffer.from('a\nb\nc\n'));
    const e = thrown(() =>
      checkExpectedHash(check({ expected: H2, memory, current: { hash: H1, bytes: Buffer.from('a\nB\nc\nd\n') } })),
    ) as OccMismatchError;
    expect(e).toBeInstanceOf(OccMismatchError);
    expect(e.code).toBe('OCC_MISMATCH');
    expect([e.expectedHash, e.currentHash]).toEqual([H2, H1]);
    expect(e.conflict).toEqual({
      reason: 'modified',
      bytes_delta: 2,
      changed_ranges: [
        [2, 2],
        [4, 4],
      ],
    });
  });

  it('"absent" passes for a missing file and is OCC_MISMATCH created for an existing one', () => {
    expect(checkExpectedHash(check({ expected: ABSENT, current: { hash: null } }))).toEqual({
      checkedAgainst: null,
      externalChange: false,
    });
    const e = thrown(() =>
      checkExpectedHash(
        check({ expected: ABSENT, field: 'expected_hash', current: { hash: H1, bytes: Buffer.from('xy') } }),
      ),
    ) as OccMismatchError;
    expect(e.conflict).toEqual({ reason: 'created', bytes_delta: 2 });
    expect(e.message).toContain('"absent"');
  });
});

describe('checkExpectedHash without expected_hash (auto-OCC)', () => {
  it('off passes without looking', () => {
    expect(checkExpectedHash(check({ autoOcc: 'off' }))).toEqual({ checkedAgainst: null, externalChange: false });
  });

  it('a missing file never read passes; an unread existing file is HASH_REQUIRED (block) or a warning (warn)', () => {
    expect(checkExpectedHash(check({ current: { hash: null } }))).toEqual({
      checkedAgainst: null,
      externalChange: false,
    });
    expect(thrown(() => checkExpectedHash(check({})))).toMatchObject({
      code: 'HASH_REQUIRED',
      details: { current_hash: H1 },
    });
    const v = checkExpectedHash(check({ autoOcc: 'warn' }));
    expect(v).toMatchObject({ checkedAgainst: null, externalChange: true });
    expect(v.warning).toContain('was not read in this session');
  });

  it('HASH_REQUIRED names the parameter the tool takes: expected_hash, or the map expected_hashes (issue 30)', () => {
    const single = thrown(() => checkExpectedHash(check({}))) as Error & { details: unknown; suggestion: string };
    expect(single.details).toEqual({ current_hash: H1, field: 'expected_hash' });
    expect(single.message).toContain('pass expected_hash.');
    expect(single.suggestion).toBe(`Read the file first, or pass expected_hash "${H1}" if you know its content.`);
    const map = thrown(() => checkExpectedHash(check({ field: 'expected_hashes["a.txt"]' }))) as Error & {
      details: unknown;
      suggestion: string;
    };
    expect(map.details).toEqual({ current_hash: H1, field: 'expected_hashes' });
    expect(map.message).toContain('pass expected_hashes.');
    expect(map.suggestion).toContain(`expected_hashes["a.txt"]: "${H1}"`);
  });

  it('a remembered file: unchanged passes; changed is OCC_MISMATCH (block) or a warning (warn); deleted is OCC_MISMATCH', () => {
    const memory = new HashMemory();
    memory.remember('/r/a.txt', H1);
    expect(checkExpectedHash(check({ memory }))).toEqual({ checkedAgainst: H1, externalChange: false });
    const changed = thrown(() => checkExpectedHash(check({ memory, current: { hash: H2 } }))) as OccMismatchError;
    expect([changed.code, changed.conflict.reason]).toEqual(['OCC_MISMATCH', 'modified']);
    const warned = checkExpectedHash(check({ memory, autoOcc: 'warn', current: { hash: H2 } }));
    expect(warned).toMatchObject({ checkedAgainst: H1, externalChange: true });
    const deleted = thrown(() => checkExpectedHash(check({ memory, current: { hash: null } }))) as OccMismatchError;
    expect([deleted.code, deleted.conflict.reason, deleted.currentHash]).toEqual(['OCC_MISMATCH', 'deleted', null]);
    expect(deleted.retryable).toBe(false);
  });
});

describe('HashMemory', () => {
  it('forgets one path, or a directory and everything below it but not a sibling sharing its prefix', () => {
    const m = new HashMemory();
    for (const p of ['/r/d', '/r/d/a', '/r/d/e/b', '/r/dd/c', '/r/x']) m.remember(p, H1, Buffer.from(p));
    m.forget('/r/x');
    expect(m.recall('/r/x')).toBeUndefined();
    expect(m.snapshot('/r/x', H1)).toBeUndefined();
    m.forgetUnder('/r/d');
    expect(['/r/d', '/r/d/a', '/r/d/e/b', '/r/dd/c'].map((p) => m.recall(p))).toEqual([
      undefined,
      undefined,
      undefined,
      H1,
    ]);
    expect(m.size).toBe(1);
  });

  it('gives a snapshot only for the hash it was taken with, and none for a file over 256 KiB', () => {
    const m = new HashMemory();
    m.remember('/r/a', H1, Buffer.from('one'));
    expect(m.snapshot('/r/a', H1)?.toString()).toBe('one');
    expect(m.snapshot('/r/a', H2)).toBeUndefined();
    m.remember('/r/a', H2, Buffer.alloc(256 * 1024 + 1));
    expect(m.recall('/r/a')).toBe(H2);
    expect(m.snapshot('/r/a', H2)).toBeUndefined();
    expect(m.snapshot('/r/a', H1)).toBeUndefined();
  });

  it('keeps the snapshot it has when the same content is read again, as the most recently used (issue #19)', () => {
    const m = new HashMemory();
    const first = Buffer.from('one');
    m.remember('/r/a', H1, first);
    const kept = m.snapshot('/r/a', H1);
    m.remember('/r/b', H1, Buffer.from('bee'));
    m.remember('/r/a', H1, Buffer.from('one'));
    expect(m.snapshot('/r/a', H1)).toBe(kept); // no new copy
    expect(kept).not.toBe(first); // the snapshot never aliases the caller's bytes
    first.fill(0);
    expect(m.snapshot('/r/a', H1)?.toString()).toBe('one');
    // Most recently used: over the 32 MiB bound, /r/b (older now) is dropped before /r/a.
    const big = Buffer.alloc(256 * 1024);
    for (let i = 0; i < 127; i++) m.remember(`/r/big${i}`, H2, big);
    m.remember('/r/last', H2, Buffer.alloc(256 * 1024 - 4)); // 2 bytes over: one 3-byte snapshot must go
    expect(m.snapshot('/r/b', H1)).toBeUndefined();
    expect(m.snapshot('/r/a', H1)?.toString()).toBe('one');
    // Other content under the same path replaces it.
    m.remember('/r/a', H2, Buffer.from('two'));
    expect(m.snapshot('/r/a', H2)?.toString()).toBe('two');
    expect(m.snapshot('/r/a', H1)).toBeUndefined();
  });

  it('keeps at most 32 MiB of snapshots, dropping the oldest', () => {
    const m = new HashMemory();
    const big = Buffer.alloc(256 * 1024);
    for (let i = 0; i < 129; i++) m.remember(`/r/f${i}`, H1, big);
    expect(m.snapshot('/r/f0', H1)).toBeUndefined();
    expect(m.snapshot('/r/f128', H1)).toBeDefined();
    expect(m.recall('/r/f0')).toBe(H1);
  });
});

describe('changedRanges', () => {
  it('names added and changed lines, a deletion as the line after it, merging adjacent ranges', () => {
    expect(changedRanges('a\nb\nc\n', 'a\nb\nc\n')).toEqual([]);
    expect(changedRanges('a\nb\nc\n', 'a\nc\n')).toEqual([[2, 2]]);
    expect(changedRanges('a\nb\nc\nd\n', 'a\nX\nY\nd\n')).toEqual([[2, 3]]);
  });
});

describe('on_conflict "merge": what may be merged', () => {
  const mismatchOf = (memory: HashMemory, current: { hash: string | null; bytes?: Uint8Array }, expected = H1) =>
    thrown(() => checkExpectedHash(check({ memory, current, expected }))) as OccMismatchError;

  it('a modification from a held read version: its bytes', () => {
    const memory = new HashMemory();
    memory.remember('/r/a.txt', H1, Buffer.from('a\nb\n'));
    const m = mismatchOf(memory, { hash: H2, bytes: Buffer.from('a\nB\n') });
    expect(mergeBaseFor(m, '/r/a.txt', memory).toString()).toBe('a\nb\n');
  });

  it('bytes not held: the mismatch itself, with the note; deleted and created: unchanged, never merged', () => {
    const memory = new HashMemory();
    memory.remember('/r/a.txt', H1); // a hash only (stat, a range read)
    const m = mismatchOf(memory, { hash: H2 });
    const e = thrown(() => mergeBaseFor(m, '/r/a.txt', memory)) as OccMismatchError;
    expect(e).toBe(m);
    expect(e.conflict).toEqual({ reason: 'modified', note: MERGE_NOTES.notHeld });
    const deleted = mismatchOf(memory, { hash: null });
    expect(thrown(() => mergeBaseFor(deleted, '/r/a.txt', memory))).toBe(deleted);
    expect(deleted.conflict).toEqual({ reason: 'deleted' });
    const created = mismatchOf(memory, { hash: H2 }, ABSENT);
    expect(thrown(() => mergeBaseFor(created, '/r/a.txt', memory))).toBe(created);
    expect(created.conflict.reason).toBe('created');
    expect(withMergeNote(created, MERGE_NOTES.tooLarge).conflict.note).toBe(MERGE_NOTES.tooLarge);
  });

  it('an overlapping conflict keeps the hashes, changed_ranges and bytes_delta, and lists the regions', () => {
    const memory = new HashMemory();
    memory.remember('/r/a.txt', H1, Buffer.from('a\nb\n'));
    const m = mismatchOf(memory, { hash: H2, bytes: Buffer.from('a\nBB\n') });
    const region = {
      base: [2, 2] as [number, number],
      theirs: [2, 2] as [number, number],
      ours: [2, 3] as [number, number],
    };
    const o = overlappingConflict(m, [region]);
    expect(o.code).toBe('OCC_MISMATCH');
    expect(o.envelopeExtras()).toEqual({
      expected_hash: H1,
      current_hash: H2,
      conflict: { reason: 'overlapping', changed_ranges: [[2, 2]], bytes_delta: 1, overlapping: [region] },
    });
    expect(o.path).toBe('/r/a.txt');
    // Without a snapshot the modified conflict had no ranges: none are invented.
    const bare = overlappingConflict(mismatchOf(new HashMemory(), { hash: H2 }), [region]);
    expect(bare.conflict).toEqual({ reason: 'overlapping', overlapping: [region] });
  });
});

describe('on_conflict "merge": the overlapping conflict of a mismatch that names no path', () => {
  it('says "The file" and keeps an empty path', () => {
    const m = new OccMismatchError('x', {
      path: '',
      expectedHash: H1,
      currentHash: H2,
      conflict: { reason: 'modified' },
    });
    const o = overlappingConflict(m, []);
    expect(o.message).toMatch(/^The file changed since the version you read/);
    expect([o.expectedHash, o.currentHash, o.conflict.reason]).toEqual([H1, H2, 'overlapping']);
  });
});

describe('changedRanges', () => {
  it('merges ranges that touch: a deleted line marks the line after it, next to a changed one', () => {
    expect(changedRanges('a\nb\nc\nd\n', 'a\nc\nD\n')).toEqual([[2, 3]]);
  });

  it('past the bound: one range from the first to the last differing line, the common head and tail left out', () => {
    const before = Array.from({ length: 1200 }, (_, i) => `line ${i}\n`).join('');
    const after = before.replace(/^line (\d+)$/gm, (l, n: string) =>
      Number(n) % 3 === 1 && Number(n) < 1100 ? `L ${n}` : l,
    );
    const exact = { value: true };
    expect(changedRanges(before, after, exact)).toEqual([[2, 1100]]); // 1-based: lines 2 (index 1) to 1100 (index 1099)
    expect(exact.value).toBe(false);
  });
});

describe('HashMemory.forget and forgetUnder drop the snapshots they held', () => {
  it('a forgotten path has neither hash nor snapshot; a Windows-style directory prefix is honoured', () => {
    const m = new HashMemory();
    m.remember('/r/a', H1, Buffer.from('one'));
    m.forget('/r/a');
    expect([m.recall('/r/a'), m.snapshot('/r/a', H1)]).toEqual([undefined, undefined]);
    m.forget('/r/never-held'); // nothing to drop: no throw
    m.remember('C:\\r\\d\\x', H1, Buffer.from('x'));
    m.remember('C:\\r\\dx', H2, Buffer.from('y'));
    m.forgetUnder('C:\\r\\d');
    expect([m.recall('C:\\r\\d\\x'), m.recall('C:\\r\\dx')]).toEqual([undefined, H2]);
  });
});

describe('on_conflict "merge": past the line diff bound', () => {
  it('the OCC check found the other change too large: a coarse range, and mergeBaseFor refuses with the note', () => {
    const memory = new HashMemory();
    const before = Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join('');
    const after = before.replace(/^line (\d*[05])$/gm, 'LINE $1'); // every fifth line: 400 edits
    memory.remember('/r/a.txt', H1, Buffer.from(before));
    const m = thrown(() =>
      checkExpectedHash(check({ memory, current: { hash: H2, bytes: Buffer.from(after) }, expected: H1 })),
    ) as OccMismatchError;
    expect(m.conflict.changed_ranges).toEqual([[1, 996]]);
    const e = thrown(() => mergeBaseFor(m, '/r/a.txt', memory)) as OccMismatchError;
    expect(e.conflict.note).toBe(MERGE_NOTES.tooLarge);
  });
});

/**
 * ListPage (src/tools/list-page.ts) takes a plain-named file or directory without building its shape, and keeps one
 * array of lines only once a line differs from its entry. Pinned here against a reference model of the general path
 * (every entry shaped by quoteName, compactEntry, entryLine and its JSON bytes): for any sequence of entries (plain
 * names, names that must be quoted or escaped, secrets, links, special files), the page holds the same entries, the
 * same text, cuts at the same entry (max_entries and the response budget) and resumes after the same path.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AllowedPath } from '../../src/policy/resolve-path.js';
import type { WalkItem } from '../../src/fs/walk.js';
import { afterCursorBytesBound } from '../../src/tools/cursor.js';
import { ListPage } from '../../src/tools/list-page.js';
import { compactEntry, entryLine, type EntryObject } from '../../src/tools/list-schema.js';
import { jsonBytes, TOOL_BUDGET_BYTES } from '../../src/tools/response-budget.js';
import { quoteName } from '../../src/tools/text-safe.js';

interface Added {
  item: WalkItem;
  secret: boolean;
  link: EntryObject['link_target_type'];
}

const item = (relative: string, type: WalkItem['type']): WalkItem => ({
  relative,
  absolute: `/r/${relative}` as AllowedPath,
  rootRelative: relative,
  type,
  depth: 1,
});

/** The page as the general path builds it: every entry shaped, its cost from its serialized JSON. */
function reference(added: readonly Added[], max: number, cursor: string) {
  let used = 2048;
  const entries: unknown[] = [];
  const lines: string[] = [];
  let truncated = false;
  let lastPath: string | undefined;
  for (const { item: e, secret, link } of added) {
    if (entries.length >= max) {
      truncated = true;
      break;
    }
    let shaped: string | EntryObject;
    let line: string;
    if (!secret && (e.type === 'file' || e.type === 'directory')) {
      shaped = e.type === 'directory' ? `${e.relative}/` : e.relative;
      const quoted = quoteName(e.relative);
      line = quoted === e.relative ? shaped : e.type === 'directory' ? `${quoted}/` : quoted;
    } else {
      const o: EntryObject = {
        path: e.relative,
        type: e.type,
        ...(secret ? { secret: true } : {}),
        ...(e.type === 'symlink' ? { link_target_type: link } : {}),
      };
      shaped = compactEntry(o);
      line = entryLine(o);
    }
    // A string's JSON bytes without its quotes, an object's with everything, the line's without quotes, and 2.
    const cost = (typeof shaped === 'string' ? jsonBytes(shaped) - 2 : jsonBytes(shaped)) + jsonBytes(line) - 2 + 2;
    if (cost + 2 * afterCursorBytesBound(e.relative.length) + 96 > TOOL_BUDGET_BYTES - used && entries.length > 0) {
      truncated = true;
      break;
    }
    used += cost;
    entries.push(shaped);
    lines.push(line);
    lastPath = e.relative;
  }
  if (truncated)
    lines.push(`[fs-tools: listing truncated at ${entries.length} entries; continue with cursor: ${cursor}]`);
  if (entries.length === 0) lines.push('(empty)');
  return { entries, text: lines.join('\n'), truncated, lastPath };
}

function build(added: readonly Added[], max: number, cursor: string) {
  const page = new ListPage(max);
  for (const a of added) {
    const more = a.item.type === 'symlink' ? page.add(a.item, a.secret, a.link) : page.add(a.item, a.secret);
    if (!more) break;
  }
  return { entries: page.entries, text: page.text(cursor), truncated: page.truncated, lastPath: page.lastPath };
}

const plain = fc.stringMatching(/^[a-zA-Z0-9._ -]{1,12}$/);
const hostile = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.constantFrom('a"b', 'a\\b', 'line\nbreak', 'tab\there', 'é€😀', '\u202eevil', '\ud800lone', 'x\u0085y'),
);
const added: fc.Arbitrary<Added> = fc.record({
  item: fc
    .tuple(
      fc.oneof({ weight: 4, arbitrary: plain }, { weight: 1, arbitrary: hostile }),
      fc.constantFrom<WalkItem['type']>('file', 'file', 'directory', 'symlink', 'other'),
    )
    .map(([name, type]) => item(name, type)),
  secret: fc.boolean().map((b) => b && Math.random() < 0.2),
  link: fc.constantFrom<EntryObject['link_target_type']>('file', 'directory', null),
});

describe('ListPage', () => {
  it('builds the same page as the general path for any entries (plain, quoted, secret, links, special)', () => {
    fc.assert(
      fc.property(fc.array(added, { maxLength: 40 }), fc.integer({ min: 1, max: 45 }), (list, max) => {
        expect(build(list, max, 'CURSOR')).toEqual(reference(list, max, 'CURSOR'));
      }),
      { numRuns: 1500 },
    );
  });

  it('cuts at the same entry when the response budget fills, plain and quoted names alike', () => {
    for (const name of ['p'.repeat(3000), `q"${'u'.repeat(3000)}`]) {
      const list: Added[] = Array.from({ length: 1200 }, (_, i) => ({
        item: item(`${name}${i}`, i % 3 === 0 ? 'directory' : 'file'),
        secret: false,
        link: null,
      }));
      const got = build(list, 10_000, 'C');
      expect(got.truncated).toBe(true);
      expect(got).toEqual(reference(list, 10_000, 'C'));
    }
  });

  it('fits exactly the last entry the general path fits (the budget charged to the byte)', () => {
    for (const [fill, lastType] of [
      ['p', 'file'],
      ['q"', 'directory'],
    ] as const) {
      const head: Added[] = Array.from({ length: 150 }, (_, i) => ({
        item: item(`${fill}${'n'.repeat(3000)}${i}`, i % 2 ? 'directory' : 'file'),
        secret: false,
        link: null,
      }));
      const withLast = (n: number): Added[] => [
        ...head,
        { item: item('z'.repeat(n), lastType), secret: false, link: null },
      ];
      // The longest last name the reference still fits.
      let lo = 1;
      let hi = 200_000;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (reference(withLast(mid), 10_000, 'C').truncated) hi = mid - 1;
        else lo = mid;
      }
      expect(reference(withLast(lo), 10_000, 'C').truncated).toBe(false);
      expect(build(withLast(lo), 10_000, 'C')).toEqual(reference(withLast(lo), 10_000, 'C'));
      expect(build(withLast(lo + 1), 10_000, 'C')).toEqual(reference(withLast(lo + 1), 10_000, 'C'));
      expect(build(withLast(lo + 1), 10_000, 'C').truncated).toBe(true);
    }
  });

  it('an empty page reads (empty); a page cut by max_entries ends with its cursor line', () => {
    expect(build([], 5, 'C').text).toBe('(empty)');
    const list = ['a', 'b', 'c'].map((n) => ({ item: item(n, 'file'), secret: false, link: null }));
    expect(build(list, 2, 'C').text).toBe('a\nb\n[fs-tools: listing truncated at 2 entries; continue with cursor: C]');
  });
});

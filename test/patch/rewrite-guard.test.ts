/**
 * Pins the REWRITE_BLOCKED threshold (SPEC §6.2, src/patch/rewrite-guard.ts) on both sides: a file of ≥10 lines
 * with ≥90% of its lines gone is refused; 9 lines, or 80% changed, is allowed; allow_rewrite lifts the block; moved
 * lines do not count as changed.
 */
import { describe, expect, it, test } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { assertNotRewrite, changedRatio, REWRITE_MIN_LINES, REWRITE_RATIO } from '../../src/patch/rewrite-guard.js';

/** `n` lines `prefix1`… each ending with LF. */
function lines(n: number, prefix = 'line'): string {
  return Array.from({ length: n }, (_, i) => `${prefix}${i + 1}\n`).join('');
}

/** `before` with its first `changed` lines replaced. */
function changeFirst(n: number, changed: number): { before: string; after: string } {
  const before = lines(n);
  const after = Array.from({ length: n }, (_, i) => (i < changed ? `new${i + 1}\n` : `line${i + 1}\n`)).join('');
  return { before, after };
}

it('documents the threshold it enforces', () => {
  expect(REWRITE_MIN_LINES).toBe(10);
  expect(REWRITE_RATIO).toBe(0.9);
});

describe('assertNotRewrite', () => {
  test.each<[string, number, number, boolean]>([
    // label, lines, changed lines, blocked
    ['10 lines, 9 changed (90%)', 10, 9, true],
    ['10 lines, all changed', 10, 10, true],
    ['20 lines, 18 changed (90%)', 20, 18, true],
    ['10 lines, 8 changed (80%)', 10, 8, false],
    ['20 lines, 17 changed (85%)', 20, 17, false],
    ['9 lines, all changed', 9, 9, false],
    ['1 line, changed', 1, 1, false],
  ])('%s → blocked %s', (_label, n, changed, blocked) => {
    const { before, after } = changeFirst(n, changed);
    const run = () => assertNotRewrite(before, after, false, '/r/f.txt');
    if (!blocked) {
      expect(run).not.toThrow();
      return;
    }
    let caught: unknown;
    try {
      run();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ToolError);
    const e = caught as ToolError;
    expect(e.code).toBe('REWRITE_BLOCKED');
    expect(e.path).toBe('/r/f.txt');
    expect(e.details).toMatchObject({ threshold: 0.9, lines: n, min_lines: 10, changed_ratio: changed / n });
    // allow_rewrite lifts it
    expect(() => assertNotRewrite(before, after, true, '/r/f.txt')).not.toThrow();
  });

  it('counts moved lines as kept', () => {
    const before = lines(12);
    const after = before
      .split('\n')
      .filter(Boolean)
      .reverse()
      .map((l) => `${l}\n`)
      .join('');
    expect(changedRatio(before, after).ratio).toBe(0);
    expect(() => assertNotRewrite(before, after, false, '/f')).not.toThrow();
  });

  it('deleting nearly everything is a rewrite too', () => {
    expect(() => assertNotRewrite(lines(10), 'line1\n', false, '/f')).toThrow(ToolError);
    expect(() => assertNotRewrite(lines(10), 'line1\nline2\n', false, '/f')).not.toThrow();
  });
});

describe('changedRatio', () => {
  test.each<[string, string, number, number]>([
    ['', 'x\n', 0, 0],
    ['a\n', 'a\n', 0, 1],
    ['a\nb\n', 'a\nc\n', 0.5, 2],
    ['a\na\n', 'a\n', 0.5, 2],
    ['a\nb', 'a\nb\n', 0, 2],
  ])('%j → %j', (before, after, ratio, n) => {
    expect(changedRatio(before, after)).toEqual({ ratio, lines: n });
  });
});

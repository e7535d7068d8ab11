/**
 * The common whole-line prefix and suffix of two texts: what an edit of a large file leaves untouched. Used to confine
 * line-by-line work (the rewrite guard's multiset, the unified diff) to the lines that changed.
 */

/** Characters compared at once when looking for the common prefix and suffix (native string equality). */
const FRAME_BLOCK = 4096;

/**
 * Offsets (UTF-16 code units) framing what differs between `before` and `after`: `[0, start)` is the same complete
 * lines in both (empty, or ending with `\n`), and so are `[endBefore, before.length)` and `[endAfter, after.length)`
 * (empty, or starting at a line start in both texts); the prefix and the suffixes never overlap.
 */
export function commonLineFrame(before: string, after: string): { start: number; endBefore: number; endAfter: number } {
  const shorter = Math.min(before.length, after.length);
  let p = 0;
  while (p + FRAME_BLOCK <= shorter && before.slice(p, p + FRAME_BLOCK) === after.slice(p, p + FRAME_BLOCK))
    p += FRAME_BLOCK;
  while (p < shorter && before.charCodeAt(p) === after.charCodeAt(p)) p++;
  const start = p === 0 ? 0 : before.lastIndexOf('\n', p - 1) + 1;
  const room = shorter - start;
  let s = 0;
  while (
    s + FRAME_BLOCK <= room &&
    before.slice(before.length - s - FRAME_BLOCK, before.length - s) ===
      after.slice(after.length - s - FRAME_BLOCK, after.length - s)
  ) {
    s += FRAME_BLOCK;
  }
  while (s < room && before.charCodeAt(before.length - s - 1) === after.charCodeAt(after.length - s - 1)) s++;
  // Move the suffix's start forward to a line start in both texts (a newline inside the common suffix is in both).
  const lineStart = (t: string, i: number) => i === 0 || t.charCodeAt(i - 1) === 0x0a;
  while (s > 0 && !(lineStart(before, before.length - s) && lineStart(after, after.length - s))) {
    const j = before.indexOf('\n', before.length - s);
    s = j === -1 ? 0 : before.length - (j + 1);
  }
  return { start, endBefore: before.length - s, endAfter: after.length - s };
}

/** Number of `\n` in `text` within `[from, to)`. */
export function countNewlines(text: string, from = 0, to = text.length): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

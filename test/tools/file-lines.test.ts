/**
 * FileLines (src/tools/search-line.ts): the lines of a file with matches, decoded line by line from its bytes, are
 * exactly `text.split('\n')` of the whole decoded text (valid UTF-8: the binary test lets nothing else through), in any
 * order of access; `count` and `slice` as the array's `length` and `slice`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FileLines } from '../../src/tools/search-line.js';

const piece = fc.constantFrom('a', 'needle', '\n', '\r\n', '', 'é', '😀', '\u2028', ' ', '\n\n', 'ü\n');

describe('FileLines', () => {
  it('from bytes: each line, the count and slices equal text.split("\\n"), whatever the order asked', () => {
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 40 }).map((p) => p.join('')),
        fc.array(fc.integer({ min: -1, max: 45 }), { maxLength: 20 }),
        (text, asked) => {
          const lines = text.split('\n');
          for (const source of [Buffer.from(text, 'utf8'), text]) {
            const f = new FileLines(source);
            for (const i of asked) expect(f.line(i)).toBe(lines[i]);
            expect(f.count).toBe(lines.length);
            for (const i of asked) expect(f.slice(i - 2, i + 3)).toEqual(lines.slice(Math.max(0, i - 2), i + 3));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

/**
 * Issue #19: list_directory charges each entry to the response budget with `entryBytes` instead of serializing it.
 * Pinned here: for any entry the tool can build (any name, every kind, with and without size/mtime, secret and
 * link_target_type, in the tool's key order), entryBytes equals jsonBytes, so pages end exactly where they did.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryBytes, EntryObjectSchema } from '../../src/tools/list-schema.js';
import { jsonBytes } from '../../src/tools/response-budget.js';
import type { z } from 'zod';

const kinds = ['file', 'directory', 'symlink', 'fifo', 'socket', 'block_device', 'char_device', 'other'] as const;
const name = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('a"b', 'a\\b', '\n', 'é€😀'));

describe('entryBytes', () => {
  it('equals jsonBytes for every entry shape the tool builds', () => {
    fc.assert(
      fc.property(
        name,
        fc.constantFrom(...kinds),
        fc.option(fc.tuple(fc.nat(), fc.date({ noInvalidDate: true }))),
        fc.boolean(),
        fc.option(fc.constantFrom(...kinds), { nil: null }),
        (path, type, long, secret, target) => {
          const e: z.infer<typeof EntryObjectSchema> = {
            path,
            type,
            ...(long ? { size: long[0], mtime: long[1].toISOString() } : {}),
            ...(secret ? { secret: true } : {}),
            ...(type === 'symlink' ? { link_target_type: target } : {}),
          };
          expect(EntryObjectSchema.safeParse(e).success).toBe(true);
          expect(entryBytes(e)).toBe(jsonBytes(e));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

/**
 * A faster `toEqual` / `toStrictEqual` for large byte arrays (vitest.config.ts `setupFiles`, every test file).
 *
 * vitest compares two `Uint8Array`s (and `Buffer`s) as generic iterables: element by element through its recursive
 * `equals`, then once more as `Object.entries` — about 7 s of CPU for two 1 MiB buffers on these machines, which made
 * byte-for-byte checks of large files the slowest part of several suites (test/e2e/response-budget.test.ts spent
 * ~20 s of its ~55 s there). This tester gives the same verdict without the per-element walk:
 * - both operands must be `Uint8Array`s of the same constructor (else vitest decides, as before: a `Buffer` never
 *   equals a plain `Uint8Array`);
 * - below 64 KiB vitest decides (its walk is cheap there);
 * - different lengths or bytes: not equal;
 * - same bytes: equal when neither has an own enumerable property besides its indices (what vitest's
 *   `Object.entries` comparison checks); otherwise vitest decides.
 * A failing assertion prints vitest's usual diff.
 */
import { expect } from 'vitest';

const SMALL = 64 * 1024;

function bytesOf(a: Uint8Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/** The equality tester: true or false for two large byte arrays of one constructor, undefined otherwise. */
export function byteArrayEquality(a: unknown, b: unknown): boolean | undefined {
  if (!(a instanceof Uint8Array) || !(b instanceof Uint8Array) || a.constructor !== b.constructor) return undefined;
  if (a.length < SMALL && b.length < SMALL) return undefined;
  if (a.length !== b.length || !bytesOf(a).equals(bytesOf(b))) return false;
  return Object.keys(a).length === a.length && Object.keys(b).length === b.length ? true : undefined;
}

expect.addEqualityTesters([byteArrayEquality]);

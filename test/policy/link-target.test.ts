/**
 * Where a link the server places would point (src/policy/link-target.ts), on real directories. Pins:
 *  - a target inside the roots from the link's directory is inside; `../..` that climbs out of the root is not;
 *  - `..` after a name is refused whatever it would resolve to (`dot -> .`, `up -> dot/../..`);
 *  - a target through an existing link to outside is not inside (walked as the kernel would);
 *  - a loop that stays inside is harmless (inside);
 *  - movedLinkAllowed: an absolute target is carried as it is by a move, a relative one must point inside at its new
 *    place (a copy creates a new link: linkTargetInside, absolute targets included).
 */
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { movedLinkAllowed, linkTargetInside } from '../../src/policy/link-target.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { makeTree } from '../helpers/tree.js';

const root = makeTree({ 'a.txt': 'a\n', deep: { a: {} }, loop: {} });
const outside = makeTree({ 'o.txt': 'o\n' });
afterAll(() => {
  root.cleanup();
  outside.cleanup();
});
const R = realpathSync(root.dir);
const ROOTS: EffectiveRoot[] = [{ given: R, real: R, source: 'cli' }];
symlinkSync(realpathSync(outside.dir), path.join(R, 'ext'));
symlinkSync('l2', path.join(R, 'loop', 'l1'));
symlinkSync('l1', path.join(R, 'loop', 'l2'));
mkdirSync(path.join(R, 'deep', 'a', 'b'));
writeFileSync(path.join(R, 'deep', 'a', 'b', 'f'), 'f\n');

describe('linkTargetInside', () => {
  it('inside from the link directory; out when it climbs past the root', async () => {
    expect(await linkTargetInside(ROOTS, `${R}/deep/a/l`, '../../a.txt')).toBe(true);
    expect(await linkTargetInside(ROOTS, `${R}/l`, '../../a.txt')).toBe(false);
    expect(await linkTargetInside(ROOTS, `${R}/l`, `${R}/a.txt`)).toBe(true);
    expect(await linkTargetInside(ROOTS, `${R}/l`, '/etc/hostname')).toBe(false);
  });

  it('refuses `..` after a name, and a target through an existing link to outside', async () => {
    expect(await linkTargetInside(ROOTS, `${R}/deep/a/l`, 'b/../../../a.txt')).toBe(false);
    expect(await linkTargetInside(ROOTS, `${R}/l`, 'ext/o.txt')).toBe(false);
  });

  it('a loop that stays inside is harmless', async () => {
    expect(await linkTargetInside(ROOTS, `${R}/loop/l3`, 'l1')).toBe(true);
  });
});

describe('movedLinkAllowed', () => {
  it('carries an absolute target as it is; a relative one must point inside at its new place', async () => {
    expect(await movedLinkAllowed(ROOTS, `${R}/l`, '/etc/hostname')).toBe(true);
    expect(await movedLinkAllowed(ROOTS, `${R}/l`, '../../a.txt')).toBe(false);
    expect(await movedLinkAllowed(ROOTS, `${R}/deep/a/l`, '../../a.txt')).toBe(true);
  });
});

/**
 * Moves and deletes through verified descriptors (src/fs/tree-ops.ts; SPEC §6.2), in-process on real trees. Pins:
 *  - moveEntry moves a file, a link (the link, not its target) and a directory; refuses an existing destination
 *    (VALIDATION destination_exists, nothing moved) unless it is the expected file, which it replaces; a source or
 *    destination changed since inspection is NOT_ALLOWED changed_during_call with both left as they were;
 *  - inspectTree visits every entry sorted, links unfollowed, and refuses past its limit (too_many_entries) or when
 *    cancelled; removeTree removes exactly the inspected tree and stops at an entry added since (nothing of it
 *    removed, what was removed counted in details);
 *  - removeEntry / removeEmptyDir check identity and kind; a non-empty directory is directory_not_empty.
 */
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import {
  afterEffect,
  directoryNotEmpty,
  holdsOnlyInspected,
  inspectTree,
  moveEntry,
  removeEmptyDir,
  removeEntry,
  removeTree,
  type InspectedEntry,
} from '../../src/fs/tree-ops.js';
import { identityOf, VerifiedDir, withVerifiedDir } from '../../src/fs/verified-dir.js';
import { authorizeTreeEntries } from '../../src/policy/tree-authorize.js';
import { makeTree, type TreeSpec } from '../helpers/tree.js';

const trees: Array<{ cleanup: () => void }> = [];
afterEach(() => trees.splice(0).forEach((t) => t.cleanup()));
function tree(spec: Parameters<typeof makeTree>[0]): { dir: string; inside: (p: string) => boolean } {
  const t = makeTree(spec, 'fs-tools-tree-ops-');
  trees.push(t);
  return { dir: t.dir, inside: (p) => p === t.dir || p.startsWith(`${t.dir}/`) };
}
const node = (p: string) => {
  const s = lstatSync(p);
  return { dev: s.dev, ino: s.ino };
};

describe('moveEntry', () => {
  it('moves a file, a link (not its target) and a directory', async () => {
    const { dir, inside } = tree({ a: 'A', d: { x: 'X' }, to: {} });
    symlinkSync('a', path.join(dir, 'l'));
    await withVerifiedDir(dir, inside, async (src) => {
      const dst = VerifiedDir.open(path.join(dir, 'to'), inside);
      try {
        for (const name of ['a', 'l', 'd']) {
          await moveEntry(src, name, dst, `${name}2`, { source: node(path.join(dir, name)), destination: null });
        }
      } finally {
        dst.close();
      }
    });
    expect(readdirSync(dir).sort()).toEqual(['to']);
    expect(readFileSync(path.join(dir, 'to/a2'), 'utf8')).toBe('A');
    expect(readlinkSync(path.join(dir, 'to/l2'))).toBe('a');
    expect(readFileSync(path.join(dir, 'to/d2/x'), 'utf8')).toBe('X');
  });

  it('refuses an existing destination, and replaces it only when it is the expected file', async () => {
    const { dir, inside } = tree({ a: 'A', b: 'B' });
    await withVerifiedDir(dir, inside, async (d) => {
      await expect(
        moveEntry(d, 'a', d, 'b', { source: node(path.join(dir, 'a')), destination: null }),
      ).rejects.toMatchObject({ code: 'VALIDATION', details: { reason: 'destination_exists' } });
      expect([readFileSync(path.join(dir, 'a'), 'utf8'), readFileSync(path.join(dir, 'b'), 'utf8')]).toEqual([
        'A',
        'B',
      ]);
      const b = identityOf(lstatSync(path.join(dir, 'b')));
      await moveEntry(d, 'a', d, 'b', { source: node(path.join(dir, 'a')), destination: b });
    });
    expect(readdirSync(dir)).toEqual(['b']);
    expect(readFileSync(path.join(dir, 'b'), 'utf8')).toBe('A');
  });

  it('a source or destination changed since inspection is NOT_ALLOWED changed_during_call, nothing moved', async () => {
    const { dir, inside } = tree({ a: 'A', b: 'B', c: 'C' });
    const staleB = identityOf(lstatSync(path.join(dir, 'b')));
    writeFileSync(path.join(dir, 'b'), 'B, longer now');
    await withVerifiedDir(dir, inside, async (d) => {
      await expect(
        moveEntry(d, 'a', d, 'x', { source: node(path.join(dir, 'c')), destination: null }),
      ).rejects.toMatchObject({ code: 'NOT_ALLOWED', details: { reason: 'changed_during_call' } });
      await expect(
        moveEntry(d, 'a', d, 'b', { source: node(path.join(dir, 'a')), destination: staleB }),
      ).rejects.toMatchObject({ code: 'NOT_ALLOWED' });
    });
    expect(readdirSync(dir).sort()).toEqual(['a', 'b', 'c']);
    expect(readFileSync(path.join(dir, 'b'), 'utf8')).toBe('B, longer now');
  });
});

describe('inspectTree and removeTree', () => {
  it('visits every entry sorted, links not followed, and removes exactly that tree', async () => {
    const { dir, inside } = tree({ t: { b: 'b', a: { y: 'y', x: 'x' } }, keep: 'k' });
    symlinkSync(path.join(dir, 'keep'), path.join(dir, 't', 'link'));
    const seen: string[] = [];
    await withVerifiedDir(dir, inside, async (parent) => {
      const top = parent.openDir('t');
      const inspected = await inspectTree(top, (e: InspectedEntry) => void seen.push(e.relative), 100).finally(() =>
        top.close(),
      );
      expect(seen).toEqual(['a', 'a/x', 'a/y', 'b', 'link']);
      expect(inspected.entries).toBe(5);
      expect(await removeTree(parent, 't', inspected)).toBe(5);
    });
    expect(readdirSync(dir)).toEqual(['keep']);
    expect(readFileSync(path.join(dir, 'keep'), 'utf8')).toBe('k');
  });

  it('refuses past the limit and when cancelled, removing nothing', async () => {
    const { dir, inside } = tree({ t: { a: '1', b: '2', c: '3' } });
    await withVerifiedDir(dir, inside, async (parent) => {
      const top = parent.openDir('t');
      try {
        await expect(inspectTree(top, () => undefined, 2)).rejects.toMatchObject({
          code: 'VALIDATION',
          details: { reason: 'too_many_entries', limit: 2 },
        });
        const controller = new AbortController();
        controller.abort();
        await expect(inspectTree(top, () => undefined, 10, controller.signal)).rejects.toMatchObject({
          details: { reason: 'cancelled' },
        });
      } finally {
        top.close();
      }
    });
    expect(readdirSync(path.join(dir, 't')).sort()).toEqual(['a', 'b', 'c']);
  });

  it('stops at an entry added after inspection: NOT_ALLOWED changed_during_call, the new entry kept', async () => {
    const { dir, inside } = tree({ t: { a: '1', sub: { z: 'z' } } });
    await withVerifiedDir(dir, inside, async (parent) => {
      const top = parent.openDir('t');
      const inspected = await inspectTree(top, () => undefined, 100).finally(() => top.close());
      writeFileSync(path.join(dir, 't', 'sub', 'new'), 'n');
      const error = await removeTree(parent, 't', inspected).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect(error).toMatchObject({ code: 'NOT_ALLOWED', details: { reason: 'changed_during_call' } });
    });
    expect(readFileSync(path.join(dir, 't', 'sub', 'new'), 'utf8')).toBe('n');
  });
});

describe('removeEntry, removeEmptyDir and the error helpers', () => {
  it('removes the expected file or empty directory only', async () => {
    const { dir, inside } = tree({ f: 'f', e: {}, full: { x: 'x' } });
    await withVerifiedDir(dir, inside, async (d) => {
      await expect(removeEntry(d, 'e', node(path.join(dir, 'e')))).rejects.toMatchObject({ code: 'NOT_ALLOWED' });
      await expect(removeEmptyDir(d, 'f', node(path.join(dir, 'f')))).rejects.toMatchObject({ code: 'NOT_ALLOWED' });
      await expect(removeEmptyDir(d, 'full', node(path.join(dir, 'full')))).rejects.toMatchObject({
        code: 'VALIDATION',
        details: { reason: 'directory_not_empty' },
      });
      await removeEntry(d, 'f', node(path.join(dir, 'f')));
      await removeEmptyDir(d, 'e', node(path.join(dir, 'e')));
    });
    expect(readdirSync(dir)).toEqual(['full']);
    expect(existsSync(path.join(dir, 'full', 'x'))).toBe(true);
  });

  it('afterEffect keeps a ToolError code and marks the mutation; other causes become IO_ERROR', () => {
    const kept = afterEffect(new ToolError('NOT_ALLOWED', 'x'), 'moved a', { removed: 2 });
    expect(kept).toMatchObject({ code: 'NOT_ALLOWED', details: { mutation_applied: true, done: 'moved a' } });
    const wrapped = afterEffect(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }), 'moved b');
    expect(wrapped).toMatchObject({
      code: 'IO_ERROR',
      details: { errno: 'EIO', mutation_applied: true, done: 'moved b' },
    });
    expect(directoryNotEmpty('/r/d')).toMatchObject({ code: 'VALIDATION', path: '/r/d' });
  });
});

describe('holdsOnlyInspected', () => {
  it('is true for the same tree or one with entries gone, false for an entry added or replaced anywhere', async () => {
    const { dir, inside } = tree({ t: { a: 'A', d: { x: 'X' } } });
    const t = path.join(dir, 't');
    const inspect = () =>
      withVerifiedDir(dir, inside, async (parent) => {
        const top = parent.openDir('t');
        try {
          return await inspectTree(top, () => undefined, 100);
        } finally {
          top.close();
        }
      });
    const before = await inspect();
    expect(holdsOnlyInspected(before, await inspect())).toBe(true);
    writeFileSync(path.join(t, 'd', 'new'), 'N');
    expect(holdsOnlyInspected(before, await inspect())).toBe(false);
    unlinkSync(path.join(t, 'd', 'new'));
    unlinkSync(path.join(t, 'a'));
    expect(holdsOnlyInspected(before, await inspect())).toBe(true); // less is never more than inspected
    writeFileSync(path.join(t, 'd', 'x2'), 'X');
    renameSync(path.join(t, 'd', 'x2'), path.join(t, 'd', 'x')); // same name, another node
    expect(holdsOnlyInspected(before, await inspect())).toBe(false);
  });
});

describe('the caps of a judged walk fail closed without telling the order', () => {
  /** inspectTree of `t` judged as a delete under a policy hiding `*.secret-note`: the refusal's details. */
  async function refusalOf(spec: TreeSpec, limit: number, maxDepth?: number) {
    const { dir, inside } = tree({ t: spec });
    const root = { given: dir, real: dir, source: 'cli' as const };
    const ctx = {
      roots: [root],
      allowSecrets: false,
      policy: { rules: [{ pattern: '*.secret-note', access: 'hidden' as const }] },
    };
    const place = {
      requested: `${dir}/t`,
      absolute: `${dir}/t`,
      real: `${dir}/t`,
      root,
      stats: null,
      viaSymlink: false,
    };
    const judge = authorizeTreeEntries(ctx, 'delete', place as never, null);
    return withVerifiedDir(dir, inside, async (parent) => {
      const top = parent.openDir('t');
      try {
        await inspectTree(
          top,
          (e) => judge.entry({ relative: e.relative, isDirectory: e.stats.isDirectory() }),
          limit,
          undefined,
          maxDepth,
        );
        judge.assertAllowed();
        return null;
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        return error.details;
      }
    });
  }
  const files = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, 'x']));

  it('past the entry cap: too_many_entries whether the hidden name sorts before or after the cap entry', async () => {
    for (const hidden of ['a.secret-note', 'z.secret-note']) {
      expect(await refusalOf({ ...files(5), [hidden]: 's' }, 4)).toEqual({ reason: 'too_many_entries', limit: 4 });
    }
    // Under the cap, the hidden entry alone decides: the generic refusal.
    expect(await refusalOf({ ...files(2), 'a.secret-note': 's' }, 4)).toMatchObject({ reason: 'tree_entries' });
  });

  it('past the depth cap: too_deep whether the hidden name sorts before or after the deep branch', async () => {
    for (const hidden of ['a.secret-note', 'z.secret-note']) {
      expect(await refusalOf({ m: { n: { o: 'deep' } }, [hidden]: 's' }, 100, 2)).toEqual({
        reason: 'too_deep',
        limit: 2,
      });
    }
    // A hidden directory is not looked into: what it holds is neither counted nor walked.
    expect(await refusalOf({ 'h.secret-note': { ...files(10) } }, 4)).toMatchObject({ reason: 'tree_entries' });
  });
});

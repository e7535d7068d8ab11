/**
 * The walk's cancellation (src/fs/walk.ts): it keeps WalkOptions.signal's `aborted` in a flag set by its abort
 * listener and reads that flag where it read the signal (before each directory and before each entry). Pinned: a
 * signal aborted before the walk yields nothing; one aborted by the sink while it takes an entry stops the walk at
 * the next entry, in the same directory or a deeper one, with sink and yield alike; and no walk leaves its listener on
 * the signal, whether it ran to the end, was stopped by its sink, or was cancelled.
 */
import { getEventListeners } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { walkInto, walkTree, type WalkOptions } from '../../src/fs/walk.js';
import { childOf, type AllowedPath } from '../../src/policy/resolve-path.js';
import { makeTree } from '../helpers/tree.js';

const t = makeTree({ a: '', b: { c: '', d: { e: '' } }, f: '', g: { h: '' } }, 'fs-tools-walk-abort-');
afterAll(() => t.cleanup());

const options = (signal: AbortSignal): Omit<WalkOptions, 'sink'> => ({
  base: t.dir as AllowedPath,
  rootReal: t.dir,
  childOf,
  maxDepth: 20,
  respectGitignore: true,
  filter: () => 'ok',
  signal,
  stats: false,
});

const ALL = ['a', 'b', 'b/c', 'b/d', 'b/d/e', 'f', 'g', 'g/h'];

describe('walk cancellation', () => {
  it('walks everything when not aborted, and leaves no listener', async () => {
    const c = new AbortController();
    const seen: string[] = [];
    await walkInto(options(c.signal), (e) => (seen.push(e.relative), true));
    expect(seen).toEqual(ALL);
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
  });

  it('a signal aborted before the walk: nothing is handed over', async () => {
    const c = new AbortController();
    c.abort();
    const seen: string[] = [];
    await walkInto(options(c.signal), (e) => (seen.push(e.relative), true));
    const yielded: string[] = [];
    for await (const e of walkTree(options(c.signal))) yielded.push(e.relative);
    expect(seen).toEqual([]);
    expect(yielded).toEqual([]);
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
  });

  it.each(ALL.slice(0, -1))('aborted while the sink takes %s: nothing after it', async (at) => {
    const c = new AbortController();
    const seen: string[] = [];
    await walkInto(options(c.signal), (e) => {
      seen.push(e.relative);
      if (e.relative === at) c.abort();
      return true;
    });
    expect(seen).toEqual(ALL.slice(0, ALL.indexOf(at) + 1));
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
  });

  it('aborted while a yielded entry is consumed: the walk yields nothing after it', async () => {
    const c = new AbortController();
    const yielded: string[] = [];
    for await (const e of walkTree(options(c.signal))) {
      yielded.push(e.relative);
      if (e.relative === 'b/c') c.abort();
    }
    expect(yielded).toEqual(['a', 'b', 'b/c']);
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
  });

  it('a walk its sink stopped, or one its consumer left, removes its listener', async () => {
    const c = new AbortController();
    const seen: string[] = [];
    await walkInto(options(c.signal), (e) => (seen.push(e.relative), e.relative !== 'b/c'));
    expect(seen).toEqual(['a', 'b', 'b/c']);
    for await (const e of walkTree(options(c.signal))) if (e.relative === 'b') break;
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
  });
});

/**
 * Review of issue #19's policy shortcut (src/policy/resolve-path.ts `heldParentLookup` in 60fb6df: a normalized path
 * whose directory fs-tools holds open resolved through that descriptor, without realpath), attacked against the real
 * server over stdio. No attack succeeded; the author then reverted the shortcut (8342b62: it saved nothing measurable).
 * These stay as the guard for any resolution that trusts a held directory (read_file still holds directories between
 * calls, src/fs/verified-dir.ts `withHeldDirSync`): every answer must be the one the full realpath walk gives. Pins,
 * after a read has left the target's directory held:
 *  - the held directory, or an ancestor, swapped for a link to an outside directory between calls: reads, stats and
 *    writes are NOT_ALLOWED, no outside content comes back and nothing is created outside;
 *  - the held directory swapped for a link to another directory inside the roots: the link is followed and the file
 *    reported at its real path (discriminating: a shortcut that skipped the proof passes every other case here,
 *    because the primitives re-verify, but answers this one for the wrong path);
 *  - the held directory renamed out of the roots: the path is NOT_FOUND, a write lands inside (or fails), and the
 *    moved-out directory is untouched;
 *  - the held directory replaced by a new directory of the same name: the new directory's file is read and written,
 *    the old one is untouched;
 *  - a final component that is a link: to inside (answered for the target's real path), to outside (NOT_ALLOWED), to
 *    a secret file (SECRET_DENIED, as the secret read directly); `..`, `.`, doubled and trailing separators; a root
 *    given through a symlink; a hard link (the file inside the roots is read, as before the shortcut);
 *  - 2025 era: roots narrowed by the client (roots/list_changed) while the directory is held: NOT_ALLOWED at once;
 *  - 8 calls in flight (reads, writes, stats; 2025 era) while a worker thread flips the held directory between itself and a link
 *    to outside for a bounded time: no outside content, nothing written outside, only NOT_ALLOWED / NOT_FOUND.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, connect, type CallResult, type TestClient } from '../helpers/server.js';
import { makeTree, symlink } from '../helpers/tree.js';

const LINUX_PROC = process.platform === 'linux';
const MARK = 'OUTSIDE-MARKER';

function spec() {
  return {
    root: {
      a: { d: { 'f.txt': 'inside\n', 'in-link': symlink('f.txt'), 'secret-link': symlink('../../.env') } },
      '.env': 'SECRET=1\n',
      b: { 'g.txt': 'b\n' },
    },
    out: { d: { 'f.txt': `${MARK}\n` }, 'hard.txt': 'HARD-LINKED\n' },
  };
}

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

/** The envelope's code (and reason) of a failed call; null for a success. */
function failure(r: CallResult): string | null {
  const text = r.content.map((c) => c.text ?? '').join('');
  expect(text).not.toContain(MARK);
  expect(text).not.toContain('SECRET=1');
  if (!r.isError) return null;
  return (JSON.parse(r.content[0].text!) as { error: { code: string } }).error.code;
}

// One era: resolution does not depend on it (the race and the roots change below use the other one).
describe.runIf(LINUX_PROC).each(['modern'] as const)(
  'resolution through a held directory, attacked between calls (%s)',
  (era) => {
    const tree = makeTree(spec(), `fs-tools-held-parent-${era}-`);
    const root = path.join(tree.dir, 'root');
    const d = path.join(root, 'a', 'd');
    const outD = path.join(tree.dir, 'out', 'd');
    let client: TestClient;
    beforeAll(async () => {
      client = await connect(era, { args: [root] });
    });
    afterAll(async () => {
      await client.close();
      tree.cleanup();
    });
    const hold = async () => expect((await client.callOk('read_file', { path: 'a/d/f.txt' })).content).toBe('inside\n');

    it('the held directory or an ancestor swapped for a link to outside: refused, nothing written outside', async () => {
      for (const swapped of [d, path.join(root, 'a')]) {
        await hold();
        const target = swapped === d ? outD : path.join(tree.dir, 'out');
        renameSync(swapped, `${swapped}.real`);
        symlinkSync(target, swapped);
        try {
          expect(failure(await client.call('read_file', { path: 'a/d/f.txt' }))).toBe('NOT_ALLOWED');
          expect(failure(await client.call('read_file', { path: path.join(d, 'f.txt') }))).toBe('NOT_ALLOWED');
          expect(failure(await client.call('stat', { path: 'a/d/f.txt' }))).toBe('NOT_ALLOWED');
          expect(failure(await client.call('write_file', { path: 'a/d/new.txt', content: 'x' }))).toBe('NOT_ALLOWED');
          expect(
            failure(
              await client.call('write_file', { path: 'a/d/f.txt', content: 'x', expected_hash: sha(`${MARK}\n`) }),
            ),
          ).toBe('NOT_ALLOWED');
          expect(readdirSync(outD).sort()).toEqual(['f.txt']);
          expect(readFileSync(path.join(outD, 'f.txt'), 'utf8')).toBe(`${MARK}\n`);
        } finally {
          unlinkSync(swapped);
          renameSync(`${swapped}.real`, swapped);
        }
      }
      await hold();
    });

    it('the held directory swapped for a link to another directory inside: followed, reported at its real path', async () => {
      await hold();
      writeFileSync(path.join(root, 'b', 'f.txt'), 'in b\n');
      renameSync(d, `${d}.real`);
      symlinkSync(path.join(root, 'b'), d);
      try {
        // The realpath walk's answer: the file in b, read and reported at its real path (a shortcut that trusted the
        // held directory's path without its proof would answer for a/d/f.txt, or refuse the link as a swap).
        const r = await client.callOk('read_file', { path: 'a/d/f.txt' });
        expect([r.content, r.path]).toEqual(['in b\n', path.join(root, 'b', 'f.txt')]);
        const s = await client.callOk('stat', { path: 'a/d/f.txt' });
        expect(s.content_hash ?? sha('in b\n')).toBe(sha('in b\n'));
        await client.callOk('write_file', { path: 'a/d/f.txt', content: 'b2\n', expected_hash: sha('in b\n') });
        expect(readFileSync(path.join(root, 'b', 'f.txt'), 'utf8')).toBe('b2\n');
        expect(readFileSync(path.join(`${d}.real`, 'f.txt'), 'utf8')).toBe('inside\n');
      } finally {
        unlinkSync(d);
        renameSync(`${d}.real`, d);
        unlinkSync(path.join(root, 'b', 'f.txt'));
      }
      await hold();
    });

    it('the held directory renamed out of the roots: NOT_FOUND, the moved directory untouched', async () => {
      await hold();
      const moved = path.join(tree.dir, 'moved');
      renameSync(path.join(root, 'a'), moved);
      try {
        expect(failure(await client.call('read_file', { path: 'a/d/f.txt' }))).toBe('NOT_FOUND');
        expect(failure(await client.call('read_file', { path: path.join(moved, 'd', 'f.txt') }))).toBe('NOT_ALLOWED');
        const w = await client.call('write_file', { path: 'a/d/f.txt', content: 'written\n' });
        failure(w);
        expect(readdirSync(path.join(moved, 'd')).sort()).toEqual(['f.txt', 'in-link', 'secret-link']);
        expect(readFileSync(path.join(moved, 'd', 'f.txt'), 'utf8')).toBe('inside\n');
        if (!w.isError) expect(readFileSync(path.join(d, 'f.txt'), 'utf8')).toBe('written\n');
      } finally {
        rmSync(path.join(root, 'a'), { recursive: true, force: true });
        renameSync(moved, path.join(root, 'a'));
      }
      await hold();
    });

    it('the held directory replaced by another of the same name: the new one is read and written', async () => {
      await hold();
      renameSync(d, `${d}.old`);
      mkdirSync(d);
      writeFileSync(path.join(d, 'f.txt'), 'new\n');
      try {
        const r = await client.callOk('read_file', { path: 'a/d/f.txt' });
        expect(r.content).toBe('new\n');
        expect(r.content_hash).toBe(sha('new\n'));
        await client.callOk('write_file', { path: 'a/d/f.txt', content: 'newer\n', expected_hash: sha('new\n') });
        expect(readFileSync(path.join(d, 'f.txt'), 'utf8')).toBe('newer\n');
        expect(readFileSync(path.join(`${d}.old`, 'f.txt'), 'utf8')).toBe('inside\n');
      } finally {
        rmSync(d, { recursive: true, force: true });
        renameSync(`${d}.old`, d);
      }
      await hold();
    });

    it('links, hard links and spellings resolve as the realpath walk resolves them', async () => {
      await hold();
      const viaLink = await client.callOk('read_file', { path: 'a/d/in-link' });
      expect(viaLink.content).toBe('inside\n');
      expect(viaLink.path).toBe(path.join(d, 'f.txt')); // present only when a link was followed
      symlinkSync(path.join(outD, 'f.txt'), path.join(d, 'out-link'));
      linkSync(path.join(tree.dir, 'out', 'hard.txt'), path.join(d, 'hard'));
      try {
        expect(failure(await client.call('read_file', { path: 'a/d/out-link' }))).toBe('NOT_ALLOWED');
        const direct = failure(await client.call('read_file', { path: '.env' }));
        expect(direct).toBe('SECRET_DENIED');
        expect(failure(await client.call('read_file', { path: 'a/d/secret-link' }))).toBe(direct);
        // A hard link is a file inside the roots (SPEC: containment is by path); the shortcut changes nothing here.
        const hard = await client.callOk('read_file', { path: 'a/d/hard' });
        expect([hard.content, hard.path]).toEqual(['HARD-LINKED\n', undefined]);
      } finally {
        unlinkSync(path.join(d, 'out-link'));
        unlinkSync(path.join(d, 'hard'));
      }
      for (const p of ['a/d/../d/f.txt', 'a/./d/f.txt', 'a//d/f.txt', `${d}/f.txt`, `${root}/b/../a/d/f.txt`]) {
        const r = await client.callOk('read_file', { path: p });
        expect([p, r.path, r.content]).toEqual([p, undefined, 'inside\n']);
      }
      // A trailing separator after a file: answered as before the shortcut (which never takes such a spelling) — the
      // component walk drops empty components, so the file is read (main does the same; the kernel would say ENOTDIR).
      expect((await client.callOk('read_file', { path: 'a/d/f.txt/' })).content).toBe('inside\n');
      expect(failure(await client.call('read_file', { path: `${d}/../../../out/d/f.txt` }))).toBe('NOT_ALLOWED');
    });

    it('a root given through a symlink', async () => {
      const given = path.join(tree.dir, 'root-link');
      symlinkSync(root, given);
      const c = await connect(era, { args: [given] });
      try {
        for (const p of ['a/d/f.txt', path.join(given, 'a', 'd', 'f.txt'), path.join(d, 'f.txt')]) {
          for (let i = 0; i < 2; i++) {
            const r = await c.callOk('read_file', { path: p });
            // `path` (the real path read) is reported when the spelling differs: here, through the root's link.
            const real = p.startsWith(given) ? path.join(d, 'f.txt') : undefined;
            expect([p, r.path, r.content]).toEqual([p, real, 'inside\n']);
          }
        }
      } finally {
        await c.close();
        unlinkSync(given);
      }
    });
  },
);

describe.runIf(LINUX_PROC)('roots narrowed by the client while a directory is held (2025 era)', () => {
  const tree = makeTree(spec(), 'fs-tools-held-parent-roots-');
  const root = path.join(tree.dir, 'root');
  afterAll(() => tree.cleanup());

  it('refuses the held directory at once', async () => {
    let roots = [pathToFileURL(root).href];
    const transport = new LegacyTransport({ command: process.execPath, args: [CLI, root], stderr: 'pipe' });
    const client = new LegacyClient(
      { name: 'narrow', version: '1.0.0' },
      { capabilities: { roots: { listChanged: true } } },
    );
    client.setRequestHandler(ListRootsRequestSchema, () => Promise.resolve({ roots: roots.map((uri) => ({ uri })) }));
    await client.connect(transport);
    const call = async (a: Record<string, unknown>) =>
      (await client.callTool({ name: 'read_file', arguments: a })) as CallResult;
    try {
      const file = path.join(root, 'a', 'd', 'f.txt');
      expect(failure(await call({ path: file }))).toBeNull();
      roots = [pathToFileURL(path.join(root, 'b')).href];
      await client.sendRootsListChanged();
      expect(failure(await call({ path: file }))).toBe('NOT_ALLOWED');
      expect(failure(await call({ path: path.join(root, 'b', 'g.txt') }))).toBeNull();
      roots = [pathToFileURL(root).href];
      await client.sendRootsListChanged();
      expect(failure(await call({ path: file }))).toBeNull();
    } finally {
      await client.close();
    }
  });
});

/** Flips `d` between itself and a link to `outside` until ctl[1] is set; counts the swaps in ctl[0]. */
const SWAPPER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { ctl, d, outside } = workerData;
const aside = d + '.real';
while (Atomics.load(ctl, 1) === 0) {
  try {
    fs.renameSync(d, aside);
    fs.symlinkSync(outside, d);
    Atomics.add(ctl, 0, 1);
    fs.unlinkSync(d);
    fs.renameSync(aside, d);
  } catch {
    try { fs.unlinkSync(d); } catch {}
    try { fs.renameSync(aside, d); } catch {}
  }
}
`;

describe.runIf(LINUX_PROC)('8 calls in flight while the held directory flips to a link to outside', () => {
  const tree = makeTree(spec(), 'fs-tools-held-parent-race-');
  const root = path.join(tree.dir, 'root');
  const d = path.join(root, 'a', 'd');
  const outD = path.join(tree.dir, 'out', 'd');
  let client: TestClient;
  beforeAll(async () => {
    client = await connect('legacy', { args: [root] });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('never reads or writes outside', async () => {
    await client.callOk('read_file', { path: 'a/d/f.txt' });
    const ctl = new Int32Array(new SharedArrayBuffer(8));
    const worker = new Worker(SWAPPER, { eval: true, workerData: { ctl, d, outside: outD } });
    const codes = new Map<string, number>();
    let ok = 0;
    try {
      const end = Date.now() + 1500;
      const lane = async (k: number): Promise<void> => {
        for (let i = 0; Date.now() < end; i++) {
          const r =
            k % 4 === 3
              ? await client.call('write_file', { path: `a/d/w${k}-${i}.txt`, content: `w${i}\n` })
              : k % 4 === 2
                ? await client.call('stat', { path: 'a/d/f.txt' })
                : await client.call('read_file', { path: k % 2 ? 'a/d/f.txt' : path.join(d, 'f.txt') });
          const code = failure(r);
          if (code === null) {
            if (k % 4 < 2) expect(r.structuredContent?.content).toBe('inside\n');
            ok++;
          } else codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, k) => lane(k)));
    } finally {
      Atomics.store(ctl, 1, 1);
      await new Promise((r) => worker.once('exit', r));
    }
    expect(Atomics.load(ctl, 0)).toBeGreaterThan(0);
    expect(ok).toBeGreaterThan(0);
    expect([...codes.keys()].filter((c) => c !== 'NOT_ALLOWED' && c !== 'NOT_FOUND')).toEqual([]);
    expect(readdirSync(outD)).toEqual(['f.txt']);
    expect(readFileSync(path.join(outD, 'f.txt'), 'utf8')).toBe(`${MARK}\n`);
    expect(existsSync(`${d}.real`)).toBe(false);
    expect((await client.callOk('read_file', { path: 'a/d/f.txt' })).content).toBe('inside\n');
  });
});

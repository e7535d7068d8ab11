/**
 * Attack (review of the own-file class, docs/security.md "Locks, temporaries and shutdown"), against real server
 * processes (dist/cli.js):
 *
 * 1. A tree holding a temporary of `.env` (what a server killed mid-write leaves where no sweep reaches it: another
 *    --state-dir, a register that could not be kept) is copied, moved or deleted: the refusal must not name the
 *    temporary — the own class is never listed, so no envelope names one (as for lock files), with or without
 *    --allow-secrets.
 * 2. Case and look-alike spellings of own names (`.FS-TOOLS-LOCK-<HEX>`, a Kelvin sign for the `k`, a long s): on a
 *    case-insensitive file system (macOS, Windows, a vfat or casefold ext4 mount on Linux) they ARE the lock's name,
 *    so a lock-named directory or a forged record could be planted; no tool creates any of them.
 * 3. A holder stopped (SIGSTOP) for longer than the lock's stale time while it copies a tree: a second session takes
 *    the destination meanwhile; when the first resumes, nothing the second wrote is lost (the copy refuses to place
 *    over it) and nothing of ours is left. The second session is the seams build with a stale time of STALE_MS
 *    instead of LOCK_STALE_MS (10 s; `--test-seams=lock-stale:MS`, src/cli/seam-flags.ts): the same judgement of the
 *    stopped holder's lock, without waiting 10 s. It starts before the holder is stopped, so its first write meets
 *    the lock well within the stale time.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isOwnFileName } from '../../src/fs/own-files.js';
import { connect, type TestClient } from '../helpers/server.js';
import { startRaw } from '../helpers/raw-server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

/** The second session's stale time (ms): above its first write's ~0.7 s wait (LOCK_STUCK_MS) after the stop. */
const STALE_MS = 3_000;
const cleanups: Array<() => void> = [];
const clients: TestClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const c of cleanups) c();
});

function tree(spec = {}): string {
  const t = makeTree(spec, 'fs-tools-own-review-');
  cleanups.push(t.cleanup);
  return t.dir;
}

async function server(args: string[]): Promise<TestClient> {
  const c = await connect('legacy', { args });
  clients.push(c);
  return c;
}

describe('tree refusals never name an own file', () => {
  it('copy_path, move_path and delete_path of a tree holding a temporary of .env: refused, the temporary unnamed, nothing changed', async () => {
    const secret = 'SECRET-VALUE-51d0';
    const temp = '..env.fs-tools-0123456789ab.tmp';
    const root = tree({ d: { [temp]: `TOKEN=${secret}\n`, 'ok.txt': 'ok\n' } });
    for (const flags of [[], ['--allow-secrets']]) {
      const c = await server([...flags, '--state-dir', tree(), root]);
      const before = snapshotTree(root);
      const attempts: Array<[string, Record<string, unknown>]> = [
        ['copy_path', { source: path.join(root, 'd'), destination: path.join(root, 'd2'), recursive: true }],
        ['move_path', { source: path.join(root, 'd'), destination: path.join(root, 'd3') }],
        ['delete_path', { path: path.join(root, 'd'), recursive: true }],
      ];
      for (const [tool, args] of attempts) {
        const r = await c.call(tool, args);
        expect(r.isError, tool).toBe(true);
        const text = r.content[0].text!;
        expect(JSON.parse(text).error, tool).toMatchObject({
          code: 'FILE_POLICY_DENIED',
          details: { reason: 'tree_entries' },
        });
        expect(text, `${tool} ${flags.join(' ')}`).not.toContain('fs-tools-0123456789ab');
        expect(text).not.toContain(secret);
      }
      expect(snapshotTree(root)).toEqual(before);
    }
  });
});

/** Own-class entries under `dir`, at any depth. */
function ownEntries(dir: string): string[] {
  const out: string[] = [];
  const visit = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (isOwnFileName(e.name)) out.push(r);
      else if (e.isDirectory()) visit(path.join(d, e.name), r);
    }
  };
  visit(dir, '');
  return out;
}

describe('own names in every spelling', () => {
  it('no tool creates a case or look-alike variant of a lock, temporary or copy-tree name; nothing is created', async () => {
    const root = tree({ src: { 'f.txt': 'f\n' }, 'm.txt': 'm\n' });
    const c = await server(['--auto-occ=off', '--state-dir', tree(), root]);
    const before = snapshotTree(root);
    const hex = createHash('sha256').update('a.txt').digest('hex').slice(0, 32);
    const names = [
      `.FS-TOOLS-LOCK-${hex.toUpperCase()}`,
      `.fs-tools-loc\u212a-${hex}`, // KELVIN SIGN folds to k
      `.f\u017f-tools-lock-${hex}`, // LATIN SMALL LETTER LONG S folds to s
      '..ENV.FS-TOOLS-0123456789AB.TMP',
      '.D.FS-TOOLS-COPY-0123456789AB',
    ];
    for (const n of names) {
      const attempts: Array<[string, Record<string, unknown>]> = [
        ['create_directory', { path: path.join(root, n, 'x') }],
        ['write_file', { path: path.join(root, n), content: '{}' }],
        ['write_file', { path: path.join(root, 'd', n, 'y.txt'), content: 'y', create_dirs: true }],
        ['apply_patch', { patch: `--- /dev/null\n+++ b/${n}/z.txt\n@@ -0,0 +1 @@\n+z\n`, path: root }],
        ['copy_path', { source: path.join(root, 'src'), destination: path.join(root, n), recursive: true }],
        ['move_path', { source: path.join(root, 'm.txt'), destination: path.join(root, n) }],
      ];
      for (const [tool, args] of attempts) {
        const r = await c.call(tool, args);
        expect(r.isError, `${tool} ${n}`).toBe(true);
        expect(JSON.parse(r.content[0].text!).error, `${tool} ${n}`).toMatchObject({
          code: 'FILE_POLICY_DENIED',
          details: { source: 'builtin' },
        });
      }
    }
    expect(snapshotTree(root)).toEqual(before);
  });
});

describe('a stopped holder', () => {
  it('SIGSTOP past the stale time mid copy_path: a second session writes the destination, the resumed copy loses none of it', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`f${String(i).padStart(3, '0')}.txt`] = `file ${i}\n`;
    const root = tree({ src: files });
    const a = startRaw(['--state-dir', tree(), root], { seam: '--test-seams=copy-delay:50' });
    const [b] = await Promise.all([
      server([`--test-seams=lock-stale:${STALE_MS}`, '--state-dir', tree(), root]),
      a.ready,
    ]);
    const copied = a.call('copy_path', {
      source: path.join(root, 'src'),
      destination: path.join(root, 'dst'),
      recursive: true,
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(ownEntries(root).some((e) => e.startsWith('.fs-tools-lock-'))).toBe(true);
    a.child.kill('SIGSTOP');
    try {
      const dst = path.join(root, 'dst');
      // While A's lock is fresh-but-unrefreshed, B is told to retry later (never a second writer at once).
      const first = await b.call('write_file', { path: dst, content: 'B wrote this\n' });
      expect(first.isError).toBe(true);
      expect(JSON.parse(first.content[0].text!).error).toMatchObject({
        code: 'IO_ERROR',
        details: { reason: 'locked', held_by: 'not_refreshed' },
        retryable: true,
      });
      expect(existsSync(dst)).toBe(false);
      await new Promise((r) => setTimeout(r, STALE_MS + 300));
      await b.callOk('write_file', { path: dst, content: 'B wrote this\n' });
    } finally {
      a.child.kill('SIGCONT');
    }
    const result = await copied;
    expect(result?.isError).toBe(true);
    expect(result?.envelope?.error).toMatchObject({ details: { reason: 'destination_exists' } });
    expect(readFileSync(path.join(root, 'dst'), 'utf8')).toBe('B wrote this\n');
    expect(ownEntries(root)).toEqual([]);
    a.child.stdin.end();
    expect((await a.exited).code).toBe(0);
  }, 40_000);
});

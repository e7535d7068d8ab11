/**
 * Attack (review of the own-file class, docs/security.md "Locks, temporaries and shutdown"), against real server
 * processes (dist/cli.js):
 *
 * 1. A tree holding a temporary of `.env` (what a server killed mid-write leaves where no sweep reaches it: another
 *    --state-dir, a register that could not be kept) is copied, moved or deleted: the refusal must not name the
 *    temporary — the own class is never listed, so no envelope names one (as for lock files), with or without
 *    --allow-secrets.
 * 2. A holder stopped (SIGSTOP) for longer than the lock's stale time while it copies a tree: a second session takes
 *    the destination meanwhile; when the first resumes, nothing the second wrote is lost (the copy refuses to place
 *    over it) and nothing of ours is left.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

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

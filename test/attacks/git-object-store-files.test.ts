/**
 * Attack (docs/security.md "What git may read"): files inside a verified object store that name other files. The
 * view's mirrors link each store's `pack` directory, and git reads more there than packs: `multi-pack-index` names
 * its packs by a relative path (`<objects>/pack/<name>`) that git does not check for `..`. A hostile repository whose
 * `objects/pack/multi-pack-index` names `../../../../../outside/o/.git/objects/pack/pack-X.idx`, with an index entry
 * whose blob lives only in that outside pack, made `git_diff staged` print the outside repository's file. Real
 * server over stdio (the policy layer alone, `--sandbox=off`, and with the kernel wall in force), real git.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

const scratch = makeTree({ home: {} }, 'fs-tools-midx-attack-');
const HOME = path.join(scratch.dir, 'home');
const ROOT = path.join(scratch.dir, 'root');
const OUTSIDE = path.join(scratch.dir, 'outside');
const MARK = 'OUTSIDE_MIDX_MARKER';
afterAll(() => scratch.cleanup());

function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  return {
    ...env,
    HOME,
    XDG_CONFIG_HOME: HOME,
    GIT_CONFIG_NOSYSTEM: '1',
    LC_ALL: 'C',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@e.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@e.invalid',
  };
}
const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, { cwd, env: gitEnv(), encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

/** A multi-pack-index like `source` but whose one pack is named `name` (chunks re-laid, checksum recomputed). */
function renamePacks(source: Buffer, name: string): Buffer {
  const chunkCount = source[6];
  const table: [string, number][] = [];
  for (let i = 0; i <= chunkCount; i++) {
    const at = 12 + 12 * i;
    table.push([source.toString('latin1', at, at + 4), Number(source.readBigUInt64BE(at + 4))]);
  }
  const chunks = new Map<string, Buffer>();
  for (let i = 0; i < chunkCount; i++) chunks.set(table[i][0], source.subarray(table[i][1], table[i + 1][1]));
  const names = Buffer.from(`${name}\0`);
  chunks.set('PNAM', Buffer.concat([names, Buffer.alloc((4 - (names.length % 4)) % 4)]));
  const order = table.slice(0, chunkCount).map(([id]) => id);
  let offset = 12 + 12 * (chunkCount + 1);
  const entries: Buffer[] = [];
  for (const id of [...order, '\0\0\0\0']) {
    const e = Buffer.alloc(12);
    e.write(id, 0, 'latin1');
    e.writeBigUInt64BE(BigInt(offset), 4);
    entries.push(e);
    offset += chunks.get(id)?.length ?? 0;
  }
  const body = Buffer.concat([source.subarray(0, 12), ...entries, ...order.map((id) => chunks.get(id)!)]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** The hostile repository: its multi-pack-index names the outside repository's pack; returns its work tree. */
function hostile(): string {
  const o = path.join(OUTSIDE, 'o');
  mkdirSync(o, { recursive: true });
  git(o, 'init', '-q');
  writeFileSync(path.join(o, 's.txt'), `${MARK}\n`);
  git(o, 'add', 's.txt');
  git(o, 'commit', '-qm', 'outside');
  git(o, 'repack', '-adq');
  git(o, 'multi-pack-index', 'write');
  const oid = git(o, 'rev-parse', 'HEAD:s.txt').trim();
  const packDir = path.join(o, '.git', 'objects', 'pack');
  const idx = readdirSync(packDir).find((n) => n.endsWith('.idx'))!;

  const r = path.join(ROOT, 'r');
  mkdirSync(r, { recursive: true });
  git(r, 'init', '-q');
  writeFileSync(path.join(r, 'a.txt'), 'inside\n');
  git(r, 'add', 'a.txt');
  git(r, 'commit', '-qm', 'init');
  git(r, 'repack', '-adq');
  writeFileSync(path.join(r, 'a.txt'), 'inside, changed\n');
  git(r, 'update-index', '--add', '--info-only', '--cacheinfo', `100644,${oid},leak.txt`);
  // From root/r/.git/objects/pack: five `..` reach the scratch dir.
  const name = `../../../../../outside/o/.git/objects/pack/${idx}`;
  writeFileSync(
    path.join(r, '.git', 'objects', 'pack', 'multi-pack-index'),
    renamePacks(readFileSync(path.join(packDir, 'multi-pack-index')), name),
  );
  return r;
}

describe('a multi-pack-index never makes git read a pack outside the roots', () => {
  mkdirSync(ROOT);
  const top = hostile();

  it('is armed: plain git prints the outside file', () => {
    expect(git(top, 'diff', '--cached')).toContain(MARK);
  });

  for (const sandbox of ['off', 'auto'] as const) {
    it(`git_status and git_diff carry no outside byte (--sandbox=${sandbox})`, async () => {
      let client: TestClient | undefined;
      try {
        client = await connect('modern', {
          args: [
            `--sandbox=${sandbox}`,
            '--auto-occ=off',
            '--state-dir',
            path.join(scratch.dir, `state-${sandbox}`),
            ROOT,
          ],
          env: { HOME, XDG_CONFIG_HOME: HOME },
        });
        const results = [
          await client.call('git_diff', { path: top, staged: true }),
          await client.call('git_diff', { path: top, staged: true, paths: [path.join(top, 'leak.txt')] }),
          await client.call('git_diff', { path: top, paths: [path.join(top, 'a.txt')] }),
          await client.call('git_status', { path: top }),
        ];
        for (const r of results) {
          const text = JSON.stringify(r);
          expect(text).not.toContain(MARK);
          expect(text).not.toContain(OUTSIDE);
        }
        // The repository's own packs are still read (the work-tree diff needs a.txt's packed blob).
        expect(JSON.stringify(results[2])).toContain('+inside, changed');
        // The blob exists only in the outside pack: git cannot read it, so the staged diff fails (clearly coded).
        expect(results[0].isError, JSON.stringify(results[0]).slice(0, 400)).toBe(true);
        expect(results[1].isError, JSON.stringify(results[1]).slice(0, 400)).toBe(true);
      } finally {
        await client?.close();
      }
    }, 60_000);
  }
});

/**
 * Whole-tree operations carry every entry's rules (docs/security.md, "Whole-tree operations"), against a real server
 * over stdio. The attack that worked: with `infra/prod/** deny`, `config/prod.yml read_only` and `ops/keys/** hidden`,
 * `move_path infra → infra-old` and then `read_file infra-old/prod/db.yml` returned the password (likewise the hidden
 * notes, a write to the read-only file after moving `config`, and a secret moved with its directory).
 *
 * Pinned here:
 *  - a deny / hidden / read_only rule or a secret name deep inside a directory refuses move_path of every ancestor
 *    and of the protected directory itself, to every kind of destination (sibling, deeper, other root, an existing
 *    empty directory), dry run or not — both roots byte-for-byte and mode-for-mode unchanged; copy_path and
 *    recursive delete_path of the same trees likewise (a read_only source may be copied: a copy is a read there);
 *  - the new place: a harmless tree whose entries would land on a hidden, denied, read_only or secret path
 *    (`.aws/credentials`) is refused by move and copy;
 *  - a hidden or denied entry is never named, nor its rule: the envelope is the same whatever it is called;
 *  - a built-in guard (a `.git` directory) deep inside refuses too, and is named;
 *  - a relative link that would point outside the roots from the tree's new place refuses the move and the copy.
 */
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeOf, expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

/** Each protected kind sits at KIND/a/b/<protected>; the ancestors and the directory holding it are moved. */
const KINDS = {
  deny: { protectedDir: 'deny/a/b/sealed', file: 'deny/a/b/sealed/db.yml', names: ['sealed', 'db.yml'] },
  hidden: { protectedDir: 'hidden/a/b/vault', file: 'hidden/a/b/vault/notes.txt', names: ['vault', 'notes.txt'] },
  read_only: { protectedDir: 'read_only/a/b/conf', file: 'read_only/a/b/conf/prod.yml', names: [] },
  secret: { protectedDir: 'secret/a/b/conf', file: 'secret/a/b/conf/master.key', names: [] },
  git: { protectedDir: 'git/a/b/repo', file: 'git/a/b/repo/.git/HEAD', names: [] },
} as const;

const POLICY = {
  rules: [
    { pattern: 'deny/a/b/sealed/**', access: 'deny' },
    { pattern: 'hidden/a/b/vault/**', access: 'hidden' },
    { pattern: 'read_only/a/b/conf/prod.yml', access: 'read_only' },
    // The issue's own layout.
    { pattern: 'infra/prod/**', access: 'deny' },
    { pattern: 'config/prod.yml', access: 'read_only' },
    { pattern: 'ops/keys/**', access: 'hidden' },
    // Rules that only the new place of a harmless tree matches.
    { pattern: 'drop/*.txt', access: 'hidden' },
    { pattern: 'sealed2/*.txt', access: 'deny' },
    { pattern: 'archive/*.txt', access: 'read_only' },
  ],
};

describe('whole-tree operations carry every entry’s rules (attack)', () => {
  const tree = makeTree({}, 'fs-tools-tree-auth-');
  const other = makeTree({ 'keep.txt': 'other root\n' }, 'fs-tools-tree-auth-2-');
  const aux = makeTree({}, 'fs-tools-tree-auth-aux-');
  const R = tree.dir;
  const R2 = other.dir;
  const p = (...parts: string[]) => path.join(R, ...parts);
  let client: TestClient;
  const both = () => ({ R: snapshotTree(R), R2: snapshotTree(R2) });

  beforeAll(async () => {
    for (const [kind, k] of Object.entries(KINDS)) {
      mkdirSync(path.dirname(p(k.file)), { recursive: true });
      writeFileSync(p(k.file), `${kind} protected: db_password = "hunter2-prod"\n`);
      writeFileSync(p(kind, 'a', 'b', 'plain.txt'), 'plain\n');
      writeFileSync(p(kind, 'top.txt'), 'top\n');
    }
    mkdirSync(p('git', 'a', 'b', 'repo', '.git', 'objects'), { recursive: true });
    mkdirSync(p('infra', 'prod'), { recursive: true });
    writeFileSync(p('infra', 'prod', 'db.yml'), 'db_password = "hunter2-prod"\n');
    writeFileSync(p('infra', 'readme.md'), 'infra\n');
    mkdirSync(p('config'));
    writeFileSync(p('config', 'prod.yml'), 'mode: prod\n');
    writeFileSync(p('config', 'master.key'), 'MASTER KEY\n');
    mkdirSync(p('ops', 'keys'), { recursive: true });
    writeFileSync(p('ops', 'keys', 'notes.txt'), 'hidden notes\n');
    mkdirSync(p('notes'));
    writeFileSync(p('notes', 'todo.txt'), 'todo\n');
    mkdirSync(p('creds'));
    writeFileSync(p('creds', 'credentials'), '[default]\naws_secret_access_key = x\n');
    mkdirSync(p('empty'));
    mkdirSync(p('elsewhere', 'x', 'y'), { recursive: true });
    writeFileSync(p('x.txt'), 'link target\n');
    mkdirSync(p('links', 'a', 'b'), { recursive: true });
    symlinkSync('../../x.txt', p('links', 'a', 'b', 'l'));
    const policy = path.join(aux.dir, 'policy.json');
    writeFileSync(policy, JSON.stringify(POLICY));
    client = await connect('modern', {
      args: ['--state-dir', path.join(aux.dir, 'state'), '--policy', policy, '--auto-occ=off', R, R2],
    });
  });
  afterAll(async () => {
    await client?.close();
    tree.cleanup();
    other.cleanup();
    aux.cleanup();
  });

  /** The directories of a kind that carry its protected entry: every ancestor and the directory itself. */
  const carriers = (kind: keyof typeof KINDS) => {
    const parts = KINDS[kind].protectedDir.split('/');
    return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  };

  it('move_path of every ancestor (and the directory itself) to every kind of destination: refused, nothing moved', async () => {
    const before = both();
    for (const kind of Object.keys(KINDS) as Array<keyof typeof KINDS>) {
      for (const source of carriers(kind)) {
        const destinations = [
          `${path.dirname(source)}/renamed`, // sibling
          'elsewhere/x/y/moved', // deeper
          path.join(R2, 'moved'), // another root
          'empty', // an existing empty directory
        ];
        for (const destination of destinations) {
          for (const dry_run of [false, true]) {
            const result = await client.call('move_path', { source, destination, dry_run });
            const what = `${kind}: ${source} -> ${destination}${dry_run ? ' (dry run)' : ''}`;
            expect(result.isError, what).toBe(true);
            const text = JSON.stringify(envelopeOf(result));
            // A hidden or denied entry is never named (only what the agent itself passed is echoed).
            for (const name of KINDS[kind].names) {
              if (!source.split('/').includes(name)) expect(text, what).not.toContain(name);
            }
          }
        }
      }
    }
    expect(both()).toEqual(before);
  });

  it('the issue’s layout: infra/, config/ and ops/ are not moved, and their rules still hold', async () => {
    const before = both();
    for (const [source, code] of [
      ['infra', 'FILE_POLICY_DENIED'],
      ['config', 'FILE_POLICY_DENIED'], // prod.yml read_only and master.key secret: not all secrets
      ['ops', 'FILE_POLICY_DENIED'],
    ] as const) {
      expectCode(await client.call('move_path', { source, destination: `${source}-old` }), code);
    }
    expect(both()).toEqual(before);
    expectCode(await client.call('read_file', { path: 'infra-old/prod/db.yml' }), 'NOT_FOUND');
    expectCode(await client.call('read_file', { path: 'infra/prod/db.yml' }), 'FILE_POLICY_DENIED');
    expectCode(await client.call('read_file', { path: 'ops/keys/notes.txt' }), 'NOT_FOUND');
    const ro = expectCode(
      await client.call('write_file', { path: 'config/prod.yml', content: 'mode: dev\n' }),
      'FILE_POLICY_DENIED',
    );
    expect(ro.error.details.rule).toBe('read_only');
  });

  it('names visible offenders by kind and side; a hidden or denied one gives one generic envelope', async () => {
    const config = expectCode(
      await client.call('move_path', { source: 'config', destination: 'cfg' }),
      'FILE_POLICY_DENIED',
    );
    // The first offender that is not a secret gives the rule (one secret alone would be SECRET_DENIED).
    expect(config.error.details).toMatchObject({
      reason: 'tree_entries',
      operation: 'move',
      source: 'policy',
      rule: 'read_only',
    });
    expect(config.error.details.entries).toEqual([
      { path: p('config', 'master.key'), side: 'source', kind: 'secret' },
      { path: p('cfg', 'master.key'), side: 'destination', kind: 'secret' },
      { path: p('config', 'prod.yml'), side: 'source', kind: 'read_only' },
    ]);
    const git = expectCode(await client.call('move_path', { source: 'git', destination: 'g2' }), 'FILE_POLICY_DENIED');
    expect(git.error.details).toMatchObject({ source: 'builtin', rule: 'git_dir', reason: 'tree_entries' });
    expect(git.error.path).toBe(p('git', 'a', 'b', 'repo', '.git'));
    const secret = expectCode(await client.call('move_path', { source: 'secret', destination: 's2' }), 'SECRET_DENIED');
    expect(secret.error.details).toMatchObject({ reason: 'secret_inside', operation: 'move' });
    // Hidden and denied: the same envelope whatever the entry is called, and no rule.
    const generic = { source: 'policy', reason: 'tree_entries', operation: 'move' };
    for (const source of ['hidden', 'deny', 'ops', 'infra']) {
      const e = expectCode(await client.call('move_path', { source, destination: 'zz' }), 'FILE_POLICY_DENIED');
      expect(e.error.details, source).toEqual(generic);
      expect(e.error.path).toBe(p(source));
      expect(e.error.message).toBe(`${p(source)} holds entries this move may not carry; nothing was moved.`);
    }
  });

  it('copy_path and recursive delete_path of the same trees: refused, nothing created or removed', async () => {
    const before = both();
    for (const kind of Object.keys(KINDS) as Array<keyof typeof KINDS>) {
      for (const source of carriers(kind)) {
        if (kind !== 'read_only') {
          for (const destination of [`${path.dirname(source)}/copied`, path.join(R2, 'copied')]) {
            const result = await client.call('copy_path', { source, destination, recursive: true });
            expect(result.isError, `copy ${source} -> ${destination}`).toBe(true);
          }
        }
        for (const dry_run of [false, true]) {
          const result = await client.call('delete_path', { path: source, recursive: true, dry_run });
          expect(result.isError, `delete ${source}`).toBe(true);
        }
      }
    }
    expect(both()).toEqual(before);
    // A read_only source is copied (a copy reads there); the copy is not read_only, the original unchanged.
    await client.callOk('copy_path', { source: 'read_only', destination: path.join(R2, 'ro-copy'), recursive: true });
    expect(readFileSync(path.join(R2, 'ro-copy', 'a', 'b', 'conf', 'prod.yml'), 'utf8')).toContain('read_only');
    expect(snapshotTree(R)).toEqual(before.R);
  });

  it('the new place: a harmless tree whose entries would be hidden, denied, read_only or secret there is refused', async () => {
    const before = both();
    for (const tool of ['move_path', 'copy_path'] as const) {
      const call = (source: string, destination: string) =>
        client.call(tool, { source, destination, ...(tool === 'copy_path' ? { recursive: true } : {}) });
      const op = tool === 'move_path' ? 'move' : 'copy';
      for (const destination of ['drop', 'sealed2']) {
        const e = expectCode(await call('notes', destination), 'FILE_POLICY_DENIED');
        expect(e.error.details, destination).toEqual({ source: 'policy', reason: 'tree_entries', operation: op });
        expect(JSON.stringify(e)).not.toContain('todo.txt');
      }
      const ro = expectCode(await call('notes', 'archive'), 'FILE_POLICY_DENIED');
      expect(ro.error.details.entries).toEqual([
        { path: p('archive', 'todo.txt'), side: 'destination', kind: 'read_only' },
      ]);
      // `credentials` is a secret only under `.aws/`.
      const secret = expectCode(await call('creds', '.aws'), 'SECRET_DENIED');
      expect(secret.error.details.entries).toEqual([
        { path: p('.aws', 'credentials'), side: 'destination', kind: 'secret' },
      ]);
      // Into a hidden directory: the destination itself is refused as absent.
      expectCode(await call('notes', 'ops/keys/notes'), 'NOT_FOUND');
    }
    expect(both()).toEqual(before);
  });

  it('a relative link that would point outside the roots from the new place refuses the move and the copy', async () => {
    const before = both();
    // links/a/b/l -> ../../x.txt; moved to lb/, it would point two levels above lb: outside R.
    for (const tool of ['move_path', 'copy_path'] as const) {
      const e = expectCode(
        await client.call(tool, {
          source: 'links/a/b',
          destination: 'lb',
          ...(tool === 'copy_path' ? { recursive: true } : {}),
        }),
        'NOT_ALLOWED',
      );
      expect(e.error.details.reason).toBe('link_target_outside');
      // Neither the target as written nor where it would lead is echoed.
      expect(JSON.stringify(e)).not.toContain('../../x.txt');
      expect(JSON.stringify(e)).not.toContain(path.join(path.dirname(R), 'x.txt'));
    }
    expect(both()).toEqual(before);
    // Where it still points inside, the move is allowed: links2/b/l -> ../../x.txt is R/x.txt.
    await client.callOk('move_path', { source: 'links/a', destination: 'links2' });
    expect(readFileSync(p('links2', 'b', 'l'), 'utf8')).toBe('link target\n');
  });
});

/**
 * Review of whole-tree authorization (docs/security.md, "Whole-tree operations"), attacked over stdio. Each attack
 * below worked on the change under review:
 *  - nested roots: with roots R and R/x/proj and `secret/**` deny (relative to each root, so R/x/proj/secret is
 *    denied), move_path R/x → R/y judged the entries relative to R only and moved the denied file to
 *    R/y/proj/secret/db.yml, which R's rules do not cover — read_file then returned it; copy_path copied it out the
 *    same way, and a recursive delete of R/x deleted the root R/x/proj (which delete_path refuses on its own);
 *  - the order of the walk: with more than 10 named offenders (files the agent wrote, read_only at the destination)
 *    before a hidden entry the refusal named them, and after it was the generic one — so by choosing the names of
 *    what it wrote, the agent could binary-search the name of a hidden entry;
 *  - the same through copy_path's own refusals: a special file (which the agent can rename with move_path) or the file
 *    that passes the byte cap ended the walk with an envelope naming it before a hidden entry sorting after it was
 *    judged, and with the generic one when the hidden entry sorted first;
 *  - copy_path of a link whose absolute target is outside the roots (alone or in a tree) created a second such link
 *    (SPEC 4.3: no tool creates a link whose target resolves outside the roots, absolute or relative);
 *  - move_path of a single link: `a/b/l -> ../../x.txt` moved to `l2` climbs out of the root (only a tree's links
 *    were checked at their new place).
 * And, holding (kept for the spellings they pin): a directory rule written `./infra/prod/` or `infra/prod` (no glob),
 * and a destination named through a link into a denied directory.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envelopeOf, expectCode } from '../helpers/protocol-asserts.js';
import { connect, type TestClient } from '../helpers/server.js';
import { snapshotTree } from '../helpers/snapshot.js';
import { makeTree } from '../helpers/tree.js';

describe('whole-tree authorization, reviewed (attack)', () => {
  const tree = makeTree({}, 'fs-tools-tree-review-');
  const aux = makeTree({}, 'fs-tools-tree-review-aux-');
  const R = tree.dir;
  const B = path.join(R, 'x', 'proj'); // a second root, nested in R
  const p = (...parts: string[]) => path.join(R, ...parts);
  let client: TestClient;

  beforeAll(async () => {
    mkdirSync(path.join(B, 'secret'), { recursive: true });
    writeFileSync(path.join(B, 'secret', 'db.yml'), 'db_password = "hunter2-prod"\n');
    writeFileSync(path.join(B, 'readme.md'), 'proj\n');
    mkdirSync(p('a', 'b'), { recursive: true });
    writeFileSync(p('x.txt'), 'x\n');
    symlinkSync('../../x.txt', p('a', 'b', 'l'));
    mkdirSync(p('probe'));
    writeFileSync(p('probe', 'mid'), 'hidden\n');
    mkdirSync(p('fprobe'));
    writeFileSync(p('fprobe', 'mid'), 'hidden\n');
    execFileSync('mkfifo', [p('fprobe', 'a-fifo')]);
    writeFileSync(path.join(aux.dir, 'outside.txt'), 'outside\n');
    symlinkSync(path.join(aux.dir, 'outside.txt'), p('abs'));
    mkdirSync(p('absdir'));
    symlinkSync(path.join(aux.dir, 'outside.txt'), p('absdir', 'l'));
    mkdirSync(p('infra', 'prod'), { recursive: true });
    writeFileSync(p('infra', 'prod', 'db.yml'), 'pw\n');
    mkdirSync(p('infra2', 'prod'), { recursive: true });
    writeFileSync(p('infra2', 'prod', 'db.yml'), 'pw\n');
    mkdirSync(p('notes'));
    writeFileSync(p('notes', 'todo.txt'), 'todo\n');
    symlinkSync(p('infra2', 'prod'), p('into'));
    const policy = path.join(aux.dir, 'policy.json');
    writeFileSync(
      policy,
      JSON.stringify({
        rules: [
          { pattern: 'secret/**', access: 'deny' },
          { pattern: 'probe/m*', access: 'hidden' },
          { pattern: 'fprobe/m*', access: 'hidden' },
          { pattern: 'shelf/*.txt', access: 'read_only' },
          { pattern: './infra/prod/', access: 'deny' },
          { pattern: 'infra2/prod', access: 'deny' },
        ],
      }),
    );
    client = await connect('modern', {
      args: ['--state-dir', path.join(aux.dir, 'state'), '--policy', policy, '--auto-occ=off', R, B],
    });
  });
  afterAll(async () => {
    await client?.close();
    tree.cleanup();
    aux.cleanup();
  });

  it('nested roots: a tree holding another root is judged by that root’s rules, and the root is not carried', async () => {
    // The denied file, by its own path: denied (relative to the nested root).
    expectCode(await client.call('read_file', { path: path.join(B, 'secret', 'db.yml') }), 'FILE_POLICY_DENIED');
    const before = snapshotTree(R);
    for (const dry_run of [true, false]) {
      const move = envelopeOf(await client.call('move_path', { source: p('x'), destination: p('y'), dry_run }));
      expect(['FILE_POLICY_DENIED', 'VALIDATION']).toContain(move.error.code);
      const copy = envelopeOf(
        await client.call('copy_path', { source: p('x'), destination: p('c'), recursive: true, dry_run }),
      );
      expect(copy.error.code).toBe('FILE_POLICY_DENIED');
      expect(JSON.stringify(copy)).not.toContain('db.yml');
      const del = envelopeOf(await client.call('delete_path', { path: p('x'), recursive: true, dry_run }));
      expect(['FILE_POLICY_DENIED', 'VALIDATION']).toContain(del.error.code);
    }
    expect(snapshotTree(R)).toEqual(before);
    expectCode(await client.call('read_file', { path: p('y', 'proj', 'secret', 'db.yml') }), 'NOT_FOUND');
    expectCode(await client.call('read_file', { path: p('c', 'proj', 'secret', 'db.yml') }), 'NOT_FOUND');
  });

  it('the refusal does not depend on where a hidden entry sorts among the named offenders', async () => {
    const seen: string[] = [];
    for (const prefix of ['a', 'z']) {
      const names = Array.from({ length: 11 }, (_, i) => `${prefix}${String(i).padStart(2, '0')}.txt`);
      for (const name of names) writeFileSync(p('probe', name), 'x\n');
      const before = snapshotTree(R);
      const e = expectCode(
        await client.call('move_path', { source: 'probe', destination: 'shelf' }),
        'FILE_POLICY_DENIED',
      );
      expect(snapshotTree(R)).toEqual(before);
      expect(e.error.details, prefix).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'move' });
      seen.push(JSON.stringify(e).replaceAll(p('probe'), 'PROBE'));
      for (const name of names) rmSync(p('probe', name));
    }
    expect(seen[0]).toBe(seen[1]);
  });

  it('copy_path: a special file the agent renames around a hidden entry does not tell where that entry sorts', async () => {
    const seen: string[] = [];
    for (const name of ['a-fifo', 'z-fifo']) {
      if (name !== 'a-fifo')
        await client.callOk('move_path', { source: 'fprobe/a-fifo', destination: `fprobe/${name}` });
      const before = snapshotTree(R);
      const e = expectCode(
        await client.call('copy_path', { source: 'fprobe', destination: 'fcopy', recursive: true }),
        'FILE_POLICY_DENIED',
      );
      expect(snapshotTree(R)).toEqual(before);
      expect(e.error.details, name).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'copy' });
      seen.push(JSON.stringify(e));
    }
    expect(seen[0]).toBe(seen[1]);
  });

  it('move_path of a single link: a relative target that would climb out of the roots is refused', async () => {
    const before = snapshotTree(R);
    for (const dry_run of [true, false]) {
      const e = expectCode(
        await client.call('move_path', { source: 'a/b/l', destination: 'l2', dry_run }),
        'NOT_ALLOWED',
      );
      expect(e.error.details.reason).toBe('link_target_outside');
      expect(JSON.stringify(e)).not.toContain('../../x.txt');
    }
    expect(snapshotTree(R)).toEqual(before);
    // Where the same text still points inside, the link moves.
    mkdirSync(p('c2', 'd'), { recursive: true });
    await client.callOk('move_path', { source: 'a/b/l', destination: 'c2/d/l' });
    expect(lstatSync(p('c2', 'd', 'l')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(p('c2', 'd', 'l'))).toBe('../../x.txt');
  });

  it('copy_path creates no link pointing outside the roots, absolute targets included', async () => {
    const before = snapshotTree(R);
    for (const [source, recursive] of [
      ['abs', false],
      ['absdir', true],
    ] as const) {
      const e = expectCode(
        await client.call('copy_path', { source, destination: `${source}-copy`, recursive }),
        'NOT_ALLOWED',
      );
      expect(e.error.details.reason).toBe('link_target_outside');
      expect(JSON.stringify(e)).not.toContain(aux.dir);
    }
    expect(snapshotTree(R)).toEqual(before);
  });

  it('holds: directory rules in other spellings, and a destination through a link into a denied directory', async () => {
    const before = snapshotTree(R);
    for (const source of ['infra', 'infra2']) {
      const e = expectCode(
        await client.call('move_path', { source, destination: `${source}-old` }),
        'FILE_POLICY_DENIED',
      );
      expect(e.error.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'move' });
    }
    expectCode(await client.call('move_path', { source: 'notes', destination: 'into/notes' }), 'FILE_POLICY_DENIED');
    expectCode(
      await client.call('copy_path', { source: 'notes', destination: 'into/notes', recursive: true }),
      'FILE_POLICY_DENIED',
    );
    expect(snapshotTree(R)).toEqual(before);
  });
});

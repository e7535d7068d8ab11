/**
 * copy_path (issue #18) through real clients of both eras: a file (bytes, mode, hash), a symlink copied as a link,
 * a directory tree (modes, nested links), never overwriting unless overwrite with the destination's hash (OCC), dry
 * runs, the order of checks (SPEC §3.3) across source and destination, secrets / file policy / .git guard on every
 * path the copy touches (the whole copy refused, nothing created), --readonly, the mutation budget (one unit per
 * call), and a tree copy that fails part-way leaving nothing at the destination and no temporary directory.
 *
 * Under both eras except the cases that run once: the entry cap (10,001 entries made and refused: modern), the
 * guarded paths (modern), the part-way failure and the mutation budget (legacy) — what they prove is the server's
 * work on the filesystem and its count of units, whichever client asks (the results' shapes are checked under both
 * eras by the cases above). --readonly runs under both: it changes tools/list, which each era's client reads.
 *
 * The part-way failure uses the test seam --test-seams=copy-fault:<entry> (src/mutation/copy-write.ts: an EACCES when
 * the copy reaches that entry): the suite runs as root in CI, where chmod 000 does not make a file unreadable.
 */
import {
  readFileSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  statSync,
  writeFileSync,
  chmodSync,
  existsSync,
  linkSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode } from '../helpers/protocol-asserts.js';
import { connect, ERAS, inEra, type TestClient } from '../helpers/server.js';
import { contentHash, snapshotTree } from '../helpers/snapshot.js';
import { fifo, makeTree, symlink, type TreeSpec } from '../helpers/tree.js';

const modeOf = (p: string): number => statSync(p).mode & 0o7777;

const SPEC: TreeSpec = {
  'a.txt': 'alpha\n',
  'exec.sh': '#!/bin/sh\n',
  'link-to-a': symlink('a.txt'),
  'link-out': symlink('/etc/hostname'),
  deep: { a: { l: symlink('../../a.txt') } },
  tree: { 'one.txt': 'one\n', b: { 'c.txt': 'c\n', 'd.txt': 'd\n', ln: symlink('../one.txt') }, empty: {} },
  'with-git': { 'x.txt': 'x\n', '.git': { HEAD: 'ref: refs/heads/main\n' } },
  'with-secret': { 'x.txt': 'x\n', '.env': 'TOKEN=1\n' },
  'with-hidden': { 'x.txt': 'x\n', 'h.txt': 'h\n' },
  'with-fifo': { 'x.txt': 'x\n', pipe: fifo() },
  'to-protected': { 'keep.txt': 'new\n' },
  protected: { 'p.txt': 'p\n' },
  out: {},
  repo: { '.git': { HEAD: 'ref: refs/heads/main\n' } },
  '.env': 'SECRET=1\n',
};

function setup(era: string, flags: string[] = [], seams: string[] = []) {
  const s = {
    tree: makeTree(SPEC),
    outside: makeTree({ 'policy.json': '' }),
    client: undefined as unknown as TestClient,
    root: '',
  };
  beforeAll(async () => {
    s.root = s.tree.dir;
    chmodSync(path.join(s.root, 'exec.sh'), 0o751);
    chmodSync(path.join(s.root, 'tree', 'b'), 0o750);
    chmodSync(path.join(s.root, 'tree', 'b', 'd.txt'), 0o600);
    writeFileSync(
      path.join(s.outside.dir, 'policy.json'),
      JSON.stringify({
        rules: [
          { pattern: 'protected/**', access: 'read_only' },
          { pattern: 'with-hidden/h.txt', access: 'hidden' },
          { pattern: '**/keep.txt', access: 'read_only' },
        ],
      }),
    );
    mkdirSync(path.join(s.outside.dir, 'state'));
    s.client = await connect(era as 'modern', {
      args: [
        ...seams,
        '--state-dir',
        path.join(s.outside.dir, 'state'),
        '--policy',
        path.join(s.outside.dir, 'policy.json'),
        ...flags,
        s.root,
      ],
    });
  });
  afterAll(async () => {
    await s.client.close();
    s.tree.cleanup();
    s.outside.cleanup();
  });
  return s;
}

describe.each(ERAS)('copy_path (%s era)', (era) => {
  const s = setup(era);
  const p = (...parts: string[]) => path.join(s.root, ...parts);

  it('copies a file with its bytes and mode, and reports its hash', async () => {
    const r = await s.client.callOk('copy_path', { source: 'exec.sh', destination: 'out/exec-copy.sh' });
    expect(r).toMatchObject({
      type: 'file',
      overwritten: false,
      content_hash: contentHash('#!/bin/sh\n'),
      dry_run: false,
    });
    expect(modeOf(p('out', 'exec-copy.sh'))).toBe(0o751);
    expect(snapshotTree(p('out'))['exec-copy.sh']).toEqual(snapshotTree(s.root)['exec.sh']);
  });

  it('never overwrites unless overwrite: true with the destination hash', async () => {
    writeFileSync(p('out', 'dst.txt'), 'old\n');
    const before = snapshotTree(s.root, { withMtime: true });
    expect(
      expectCode(await s.client.call('copy_path', { source: 'a.txt', destination: 'out/dst.txt' }), 'VALIDATION').error
        .details.reason,
    ).toBe('destination_exists');
    expectCode(
      await s.client.call('copy_path', { source: 'a.txt', destination: 'out/dst.txt', overwrite: true }),
      'HASH_REQUIRED',
    );
    expectCode(
      await s.client.call('copy_path', {
        source: 'a.txt',
        destination: 'out/dst.txt',
        overwrite: true,
        expected_hash: contentHash('other\n'),
      }),
      'OCC_MISMATCH',
    );
    expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
    const r = await s.client.callOk('copy_path', {
      source: 'a.txt',
      destination: 'out/dst.txt',
      overwrite: true,
      expected_hash: contentHash('old\n'),
    });
    expect(r).toMatchObject({ overwritten: true, previous_destination_hash: contentHash('old\n') });
    expect(readFileSync(p('out', 'dst.txt'), 'utf8')).toBe('alpha\n');
    // A directory is never overwritten.
    expect(
      expectCode(
        await s.client.call('copy_path', { source: 'a.txt', destination: 'tree', overwrite: true }),
        'VALIDATION',
      ).error.details.reason,
    ).toBe('destination_is_directory');
  });

  it('copies a symlink as a link, never its target; never one pointing outside the roots (SPEC 4.3)', async () => {
    const r = await s.client.callOk('copy_path', { source: 'link-to-a', destination: 'out/link-copy' });
    expect(r).toMatchObject({ type: 'symlink', content_hash: null });
    expect(lstatSync(p('out', 'link-copy')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(p('out', 'link-copy'))).toBe('a.txt');
    const e = expectCode(
      await s.client.call('copy_path', { source: 'link-out', destination: 'out/link-out-copy' }),
      'NOT_ALLOWED',
    );
    expect(e.error.details.reason).toBe('link_target_outside');
    expect(() => lstatSync(p('out', 'link-out-copy'))).toThrow();
  });

  it('never turns a link into an escape: a relative target inside at the source but outside at the destination is NOT_ALLOWED, nothing created', async () => {
    // deep/a/l -> ../../a.txt is the root's a.txt; at the root (or one level down) the same text climbs out of it.
    const before = snapshotTree(s.root, { withMtime: true });
    for (const [source, destination] of [
      ['deep/a/l', 'l-top'],
      ['deep/a', 'a-top'],
    ]) {
      for (const dryRun of [true, false]) {
        const r = await s.client.call('copy_path', { source, destination, recursive: true, dry_run: dryRun });
        // A tree's links are decided as they are copied, so its dry run (which copies nothing) cannot see them.
        if (dryRun && source === 'deep/a') continue;
        const e = expectCode(r, 'NOT_ALLOWED');
        expect(e.error.details.reason).toBe('link_target_outside');
        expect(JSON.stringify(e)).not.toContain('../../a.txt');
      }
    }
    expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
    // Where the same text stays inside, the link is copied as it is.
    await s.client.callOk('copy_path', { source: 'deep/a/l', destination: 'deep/a/l2' });
    expect(readlinkSync(p('deep', 'a', 'l2'))).toBe('../../a.txt');
  });

  it('copies a tree with modes and nested links; a directory needs recursive; dry_run creates nothing', async () => {
    expect(
      expectCode(await s.client.call('copy_path', { source: 'tree', destination: 'out/tree-x' }), 'VALIDATION').error
        .details.reason,
    ).toBe('recursive_required');
    const before = snapshotTree(s.root, { withMtime: true });
    const dry = await s.client.callOk('copy_path', {
      source: 'tree',
      destination: 'out/tree-dry',
      recursive: true,
      dry_run: true,
    });
    expect(dry).toMatchObject({ dry_run: true, type: 'directory', entries: 6, bytes: 8 });
    expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
    const r = await s.client.callOk('copy_path', { source: 'tree', destination: 'out/tree-copy', recursive: true });
    expect(r).toMatchObject({ type: 'directory', entries: 6, bytes: 8 });
    expect(snapshotTree(p('out', 'tree-copy'))).toEqual(snapshotTree(p('tree')));
    expect(modeOf(p('out', 'tree-copy', 'b'))).toBe(0o750);
    expect(modeOf(p('out', 'tree-copy', 'b', 'd.txt'))).toBe(0o600);
    expect(readlinkSync(p('out', 'tree-copy', 'b', 'ln'))).toBe('../one.txt');
    expect(readdirSync(p('out')).filter((n) => n.includes('fs-tools'))).toEqual([]);
    expect(
      expectCode(
        await s.client.call('copy_path', { source: 'tree', destination: 'tree/b/inner', recursive: true }),
        'VALIDATION',
      ).error.details.reason,
    ).toBe('destination_inside_source');
  });

  it('refuses the whole copy when any entry is .git, a secret or protected, on either side; nothing is created', async () => {
    const before = snapshotTree(s.root, { withMtime: true });
    const cases: Array<[Record<string, unknown>, string, string | undefined]> = [
      [{ source: 'with-git', destination: 'out/g', recursive: true }, 'FILE_POLICY_DENIED', 'git_dir'],
      [{ source: 'with-secret', destination: 'out/s', recursive: true }, 'SECRET_DENIED', undefined],
      // A hidden entry is never named, nor its rule (docs/security.md, "Whole-tree operations").
      [{ source: 'with-hidden', destination: 'out/h', recursive: true }, 'FILE_POLICY_DENIED', undefined],
      [{ source: 'with-fifo', destination: 'out/f', recursive: true }, 'FILE_POLICY_DENIED', 'special_file'],
      [{ source: 'with-fifo/pipe', destination: 'out/pipe' }, 'FILE_POLICY_DENIED', 'special_file'],
      [{ source: 'a.txt', destination: 'protected/a.txt' }, 'FILE_POLICY_DENIED', undefined],
      [{ source: 'a.txt', destination: 'repo/.git/config' }, 'FILE_POLICY_DENIED', undefined],
      [{ source: 'repo/.git/HEAD', destination: 'out/HEAD' }, 'FILE_POLICY_DENIED', undefined],
      [{ source: '.env', destination: 'out/env' }, 'SECRET_DENIED', undefined],
      [{ source: 'a.txt', destination: 'out/.env' }, 'SECRET_DENIED', undefined],
    ];
    for (const [args, code, rule] of cases) {
      const e = expectCode(await s.client.call('copy_path', args), code);
      if (rule) expect(e.error.details.rule, JSON.stringify(args)).toBe(rule);
    }
    const hidden = expectCode(
      await s.client.call('copy_path', { source: 'with-hidden', destination: 'out/h', recursive: true }),
      'FILE_POLICY_DENIED',
    ).error;
    expect(hidden.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'copy' });
    expect(hidden.path).toBe(p('with-hidden'));
    expect(JSON.stringify(hidden)).not.toContain('h.txt');
    expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
  });

  it('refuses a tree whose entry would land on a protected destination path (a readable source entry)', async () => {
    const before = snapshotTree(s.root, { withMtime: true });
    // to-protected/keep.txt may be read (read_only), but out/tp/keep.txt may not be written.
    const e = expectCode(
      await s.client.call('copy_path', { source: 'to-protected', destination: 'out/tp', recursive: true }),
      'FILE_POLICY_DENIED',
    );
    expect(e.error.details.rule).toBe('read_only');
    expect(e.error.path).toBe(p('out', 'tp', 'keep.txt'));
    expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
    // A read_only source tree is copied.
    await s.client.callOk('copy_path', { source: 'protected', destination: 'out/protected-copy', recursive: true });
    expect(snapshotTree(p('out', 'protected-copy'))).toEqual(snapshotTree(p('protected')));
  });

  it('orders the checks across both paths (containment, then secrets/policy, then existence)', async () => {
    const before = snapshotTree(s.root, { withMtime: true });
    expectCode(
      await s.client.call('copy_path', { source: 'missing.txt', destination: '/etc/fs-tools-copy' }),
      'NOT_ALLOWED',
    );
    expectCode(await s.client.call('copy_path', { source: '.env', destination: '/etc/fs-tools-copy' }), 'NOT_ALLOWED');
    expectCode(await s.client.call('copy_path', { source: 'missing.txt', destination: 'out/.env' }), 'SECRET_DENIED');
    expectCode(
      await s.client.call('copy_path', { source: 'missing.txt', destination: 'protected/x' }),
      'FILE_POLICY_DENIED',
    );
    expectCode(await s.client.call('copy_path', { source: 'missing.txt', destination: 'out/x' }), 'NOT_FOUND');
    expectCode(await s.client.call('copy_path', { source: 'a.txt', destination: 'no-dir/x' }), 'NOT_FOUND');
    expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
  });
});

describe.each(ERAS)('copy_path gates (%s era)', (era) => {
  const modernOnly = inEra(era, 'modern', describe);
  const legacyOnly = inEra(era, 'legacy', describe);
  describe('--readonly', () => {
    const s = setup(era, ['--readonly']);
    it('is not listed and is refused with READONLY', async () => {
      expect((await s.client.listTools()).map((t) => t.name)).not.toContain('copy_path');
      const before = snapshotTree(s.root, { withMtime: true });
      expectCode(await s.client.call('copy_path', { source: 'a.txt', destination: 'out/a' }), 'READONLY');
      expectCode(
        await s.client.call('copy_path', { source: 'tree', destination: 'out/t', recursive: true, dry_run: true }),
        'READONLY',
      );
      expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
    });
  });

  legacyOnly('--mutation-budget=1', () => {
    const s = setup(era, ['--mutation-budget=1']);
    it('charges one unit per copy (a whole tree included); dry runs and refusals are free', async () => {
      await s.client.callOk('copy_path', { source: 'tree', destination: 'out/dry', recursive: true, dry_run: true });
      expectCode(
        await s.client.call('copy_path', { source: 'with-git', destination: 'out/g', recursive: true }),
        'FILE_POLICY_DENIED',
      );
      await s.client.callOk('copy_path', { source: 'tree', destination: 'out/t', recursive: true });
      expect((await s.client.callOk('list_allowed_directories', {})).budget).toEqual({ used: 1, limit: 1 });
      expectCode(await s.client.call('copy_path', { source: 'a.txt', destination: 'out/a' }), 'BUDGET_EXCEEDED');
      expect(existsSync(path.join(s.root, 'out', 'a'))).toBe(false);
    });
  });

  modernOnly('the entry cap', () => {
    const s = setup(era);
    it('refuses a tree over 10 000 entries with VALIDATION too_many_entries, copying nothing', async () => {
      const big = path.join(s.root, 'big');
      mkdirSync(big);
      // 10,001 names of one empty file: the cap counts directory entries, and a hard link is one more entry, but it
      // makes no inode (10,001 new files cost ~3 s of system CPU here, the links ~0.3 s).
      writeFileSync(path.join(big, 'f0'), '');
      for (let i = 1; i <= 10_000; i++) linkSync(path.join(big, 'f0'), path.join(big, `f${i}`));
      const e = expectCode(
        await s.client.call('copy_path', { source: 'big', destination: 'out/big', recursive: true }),
        'VALIDATION',
      );
      expect(e.error.details).toMatchObject({ reason: 'too_many_entries', limit: 10_000 });
      expect(readdirSync(path.join(s.root, 'out'))).toEqual([]);
    }, 60_000);
  });

  legacyOnly('a tree copy that fails part-way', () => {
    const s = setup(era, [], ['--test-seams=copy-fault:b/d.txt']);
    it('leaves nothing at the destination and no temporary directory', async () => {
      const before = snapshotTree(s.root, { withMtime: true });
      const e = await s.client.call('copy_path', { source: 'tree', destination: 'out/tree-copy', recursive: true });
      expect(e.isError).toBe(true);
      expect(JSON.parse(e.content[0].text!).error.code).toMatch(/IO_ERROR|FILE_POLICY_DENIED/);
      expect(existsSync(path.join(s.root, 'out', 'tree-copy'))).toBe(false);
      expect(readdirSync(path.join(s.root, 'out'))).toEqual([]);
      expect(snapshotTree(s.root, { withMtime: true })).toEqual(before);
      // The same copy of a tree the fault does not reach succeeds.
      await s.client.callOk('copy_path', { source: 'with-hidden/x.txt', destination: 'out/x.txt' });
      expect(readdirSync(path.join(s.root, 'out'))).toEqual(['x.txt']);
    });
  });
});

describe('copy_path and the guarded paths (modern era)', () => {
  const era = 'modern';
  // The state directory and the audit log inside the root: a copy may neither read them out nor write into them, as
  // a whole path or as an entry of a tree.
  const tree = makeTree({
    'a.txt': 'a\n',
    logs: {},
    evil: { 'audit.log': 'forged\n' },
    holder: { 'x.txt': 'x\n' },
    box: {},
  });
  let client: TestClient;
  beforeAll(async () => {
    client = await connect(era, {
      args: [
        '--state-dir',
        path.join(tree.dir, 'box', 'state'),
        `--audit-log=${path.join(tree.dir, 'logs', 'audit.log')}`,
        tree.dir,
      ],
    });
    await client.callOk('read_file', { path: 'a.txt' }); // the audit log and the state dir exist now
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('refuses every copy from or into them, creating nothing', async () => {
    expect(existsSync(path.join(tree.dir, 'logs', 'audit.log'))).toBe(true);
    const before = snapshotTree(path.join(tree.dir, 'holder'), { withMtime: true });
    const attempts: Array<Record<string, unknown>> = [
      { source: 'logs/audit.log', destination: 'copied.log' },
      { source: 'logs', destination: 'logs-copy', recursive: true },
      { source: 'box', destination: 'box-copy', recursive: true }, // a tree holding the state directory
      { source: 'box/state', destination: 'state-copy', recursive: true },
      { source: 'a.txt', destination: 'box/state/a.txt' },
      { source: 'evil/audit.log', destination: 'logs/audit.log', overwrite: true },
    ];
    for (const args of attempts) {
      const r = await client.call('copy_path', args);
      expect(r.isError, JSON.stringify(args)).toBe(true);
      const e = JSON.parse(r.content[0].text!).error;
      expect(e.code, JSON.stringify(args)).toBe('FILE_POLICY_DENIED');
    }
    for (const name of ['copied.log', 'logs-copy', 'state-copy', 'box-copy'])
      expect(existsSync(path.join(tree.dir, name))).toBe(false);
    expect(readdirSync(path.join(tree.dir, 'logs'))).toEqual(['audit.log']);
    expect(snapshotTree(path.join(tree.dir, 'holder'), { withMtime: true })).toEqual(before);
  });
});

/**
 * SPEC §3.3, the order of checks, one test per adjacent pair that the read tools can reach: each call fails two
 * checks at once and the earlier one must decide the code. The trees are snapshotted before and compared after, so
 * the rejections are also shown to have no side effect.
 *
 *   1 lookup (unknown: -32602; disabled: TOOL_UNAVAILABLE) → 2 VALIDATION → 3 READONLY, BUDGET_EXCEEDED →
 *   4 ROOTS_EMPTY → 5 NOT_ALLOWED → 6 SECRET_DENIED, FILE_POLICY_DENIED → 7 NOT_FOUND, VALIDATION (kind) → 8 STALE_GIT
 *   → 9 HASH_REQUIRED, OCC_MISMATCH → 10 the operation
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectCode, protocolError, type Envelope } from '../helpers/protocol-asserts.js';
import { connect, ERAS, type TestClient } from '../helpers/server.js';
import { makeTree, symlink } from '../helpers/tree.js';

const OUTSIDE_SECRET = 'ORDER-OUTSIDE-SECRET-4e1d';
const INSIDE_SECRET = 'ORDER-INSIDE-SECRET-a07c';
const PRIVATE_TEXT = 'ORDER-PRIVATE-TEXT-19bb';

/** Every entry under `dir`: type, mode and content (or link text). */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      const st = lstatSync(p);
      const rel = path.relative(dir, p);
      if (st.isSymbolicLink()) out[rel] = `link ${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[rel] = `dir ${st.mode.toString(8)}`;
        walk(p);
      } else out[rel] = `file ${st.mode.toString(8)} ${readFileSync(p).toString('base64')}`;
    }
  };
  walk(dir);
  return out;
}

/** Makes `dir` a git work tree with one commit and one uncommitted change. */
function makeRepo(dir: string): void {
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      stdio: 'ignore',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@example.com',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@example.com',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_CONFIG_NOSYSTEM: '1',
      },
    });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'init');
  writeFileSync(path.join(dir, 'tracked.txt'), 'one\ntwo\n');
}

const STALE = `sha256:${'0'.repeat(64)}`;

/** The envelope with its path taken out of every string, to compare two refusals for different paths. */
function withoutPath(e: Envelope, p: string): unknown {
  return JSON.parse(JSON.stringify(e).split(JSON.stringify(p).slice(1, -1)).join('<PATH>'));
}

describe.each(ERAS)('order of checks, SPEC §3.3 (%s era)', (era) => {
  // O: outside every root, with a real secret in it.
  const O = makeTree({ '.env': `TOKEN=${OUTSIDE_SECRET}\n`, 'plain.txt': 'outside\n' }, 'fs-tools-order-out-');
  // R: the root. The policy denies `.env` (a secret name too) and `private`, and hides `vault`.
  const R = makeTree(
    {
      'a.txt': 'alpha\n',
      '.env': `TOKEN=${INSIDE_SECRET}\n`,
      src: { 'b.ts': 'export {};\n' },
      private: { 'notes.txt': `${PRIVATE_TEXT}\n` },
      vault: { 'hidden.txt': 'hidden\n' },
      config: { '.env': symlink(path.join(O.dir, 'plain.txt')) }, // secret name, target outside
      'out-link': symlink(path.join(O.dir, '.env')), // plain name, secret target outside
      repo: { 'tracked.txt': 'one\n' },
    },
    'fs-tools-order-root-',
  );
  makeRepo(path.join(R.dir, 'repo'));
  const policyDir = makeTree({}, 'fs-tools-order-policy-');
  const policyFile = path.join(policyDir.dir, 'policy.json');
  writeFileSync(
    policyFile,
    JSON.stringify({
      rules: [
        { pattern: '.env', access: 'deny' },
        { pattern: 'private', access: 'deny' },
        { pattern: 'vault', access: 'hidden' },
      ],
    }),
  );

  let main: TestClient; // root R with the policy
  let filtered: TestClient; // --tools=read_file
  let noRoots: TestClient; // cwd / and no ROOT
  const before = { R: {} as Record<string, string>, O: {} as Record<string, string> };
  beforeAll(async () => {
    before.R = snapshot(R.dir);
    before.O = snapshot(O.dir);
    [main, filtered, noRoots] = await Promise.all([
      connect(era, { args: [`--policy=${policyFile}`, R.dir] }),
      connect(era, { args: ['--tools=read_file', R.dir] }),
      connect(era, { args: [], cwd: '/' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([main.close(), filtered.close(), noRoots.close()]);
    R.cleanup();
    O.cleanup();
    policyDir.cleanup();
  });

  it('1 unknown tool (protocol error) before 2 VALIDATION', async () => {
    for (const client of [main, filtered, noRoots]) {
      const e = await protocolError(client.call('no_such_tool', { file_path: 5 }));
      expect(e.code).toBe(-32602);
    }
  });

  it('1 TOOL_UNAVAILABLE before 2 VALIDATION (bad arguments to a disabled tool)', async () => {
    expectCode(await filtered.call('stat', { file_path: 5 }), 'TOOL_UNAVAILABLE');
    expectCode(await filtered.call('stat', {}), 'TOOL_UNAVAILABLE');
    expectCode(await filtered.call('search_files', {}), 'TOOL_UNAVAILABLE');
    // the enabled tool still validates
    expectCode(await filtered.call('read_file', { file_path: 'a.txt' }), 'VALIDATION');
  });

  it('2 VALIDATION before 4 ROOTS_EMPTY', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['read_file', { path: 5 }, 'wrong_type'],
      ['read_file', { file_path: 'a.txt' }, 'unknown_parameter'],
      ['read_file', {}, 'missing_field'],
      ['read_file', { path: 'a\u0000b' }, 'nul_byte'],
      ['read_file', { path: 'a.txt', head: 1, tail: 1 }, 'conflicting_parameters'],
      ['list_directory', { depth: 0 }, 'invalid_value'],
      ['stat', { path: '/etc', hash: 'yes' }, 'wrong_type'],
    ];
    for (const [tool, args, reason] of cases) {
      const e = expectCode(await noRoots.call(tool, args), 'VALIDATION');
      expect(e.error.details.reason, `${tool} ${JSON.stringify(args)}`).toBe(reason);
    }
    // search_files needs a glob or a query: an argument problem, so it is found before the roots.
    expectCode(await noRoots.call('search_files', { path: '.' }), 'VALIDATION');
  });

  it('4 ROOTS_EMPTY before 5 NOT_ALLOWED', async () => {
    for (const [tool, args] of [
      ['read_file', { path: path.join(O.dir, 'plain.txt') }],
      ['read_file', { path: '/etc/hostname' }],
      ['list_directory', { path: '/' }],
      ['stat', { path: O.dir }],
      ['search_files', { path: O.dir, query: 'outside' }],
    ] as Array<[string, Record<string, unknown>]>) {
      expectCode(await noRoots.call(tool, args), 'ROOTS_EMPTY');
    }
  });

  it('5 NOT_ALLOWED before 6 SECRET_DENIED (an outside path named .env, existing or not)', async () => {
    const existing = path.join(O.dir, '.env');
    const missing = path.join(O.dir, 'no-such-dir', '.env');
    const a = expectCode(await main.call('read_file', { path: existing }), 'NOT_ALLOWED');
    const b = expectCode(await main.call('read_file', { path: missing }), 'NOT_ALLOWED');
    // Existence outside the roots is never revealed: the two refusals differ only in the path.
    expect(withoutPath(a, existing)).toEqual(withoutPath(b, missing));
    expect(JSON.stringify(a)).not.toContain(OUTSIDE_SECRET);
    // Through links inside the root: a secret name whose target is outside, and a plain name to an outside secret.
    expectCode(await main.call('read_file', { path: 'config/.env' }), 'NOT_ALLOWED');
    const viaLink = expectCode(await main.call('read_file', { path: 'out-link' }), 'NOT_ALLOWED');
    expect(JSON.stringify(viaLink)).not.toContain(OUTSIDE_SECRET);
    // read_files reports the same per entry
    const r = await main.callOk('read_files', { paths: [existing, missing] });
    expect(r.results.map((x: { error?: { code: string } }) => x.error?.code)).toEqual(['NOT_ALLOWED', 'NOT_ALLOWED']);
  });

  it('6 SECRET_DENIED before 6 FILE_POLICY_DENIED (a secret name the policy also denies)', async () => {
    const e = expectCode(await main.call('read_file', { path: '.env' }), 'SECRET_DENIED');
    expect(JSON.stringify(e)).not.toContain(INSIDE_SECRET);
    expectCode(await main.call('read_file', { path: path.join(R.dir, '.env') }), 'SECRET_DENIED');
    // SECRET_DENIED also comes before NOT_FOUND: a missing secret is refused, not reported missing.
    expectCode(await main.call('read_file', { path: 'src/.env.local' }), 'SECRET_DENIED');
  });

  it('6 FILE_POLICY_DENIED before 7 NOT_FOUND (a denied path that does not exist)', async () => {
    const missing = expectCode(await main.call('read_file', { path: 'private/missing.txt' }), 'FILE_POLICY_DENIED');
    expect(missing.error.details.source).toBe('policy');
    const existing = expectCode(await main.call('read_file', { path: 'private/notes.txt' }), 'FILE_POLICY_DENIED');
    expect(JSON.stringify(existing)).not.toContain(PRIVATE_TEXT);
    expectCode(await main.call('list_directory', { path: 'private/no-such-dir' }), 'FILE_POLICY_DENIED');
    expectCode(await main.call('stat', { path: 'private/missing.txt' }), 'FILE_POLICY_DENIED');
    // A hidden path behaves as absent: NOT_FOUND, the same answer as for a missing one.
    const hidden = expectCode(await main.call('read_file', { path: 'vault/hidden.txt' }), 'NOT_FOUND');
    const absent = expectCode(await main.call('read_file', { path: 'vault/absent.txt' }), 'NOT_FOUND');
    expect(withoutPath(hidden, path.join(R.dir, 'vault/hidden.txt'))).toEqual(
      withoutPath(absent, path.join(R.dir, 'vault/absent.txt')),
    );
  });

  it('7 NOT_FOUND before 7 VALIDATION of the kind', async () => {
    // A directory tool on a missing path, and a file tool on a path through a file: missing, not the wrong kind.
    expectCode(await main.call('list_directory', { path: 'no-such-dir' }), 'NOT_FOUND');
    expectCode(await main.call('search_files', { path: 'no-such-dir', query: 'x' }), 'NOT_FOUND');
    expectCode(await main.call('read_file', { path: 'a.txt/child' }), 'NOT_FOUND');
    expectCode(await main.call('read_file', { path: 'no-such-dir/' }), 'NOT_FOUND');
    // … while the wrong kind of an existing path is VALIDATION.
    expect(expectCode(await main.call('read_file', { path: 'src' }), 'VALIDATION').error.details.reason).toBe(
      'is_directory',
    );
    expect(expectCode(await main.call('list_directory', { path: 'a.txt' }), 'VALIDATION').error.details.reason).toBe(
      'not_a_directory',
    );
  });

  it('5 NOT_ALLOWED and 7 NOT_FOUND before 8 STALE_GIT (git_diff with a stale expected_status_hash)', async () => {
    expectCode(await main.call('git_diff', { path: O.dir, expected_status_hash: STALE }), 'NOT_ALLOWED');
    expectCode(await main.call('git_diff', { path: 'repo/no-such-dir', expected_status_hash: STALE }), 'NOT_FOUND');
    expectCode(await noRoots.call('git_diff', { path: '/tmp', expected_status_hash: STALE }), 'ROOTS_EMPTY');
    // … and with everything else in order, the stale hash decides, without a diff body.
    const stale = expectCode(await main.call('git_diff', { path: 'repo', expected_status_hash: STALE }), 'STALE_GIT');
    expect(stale.error.details.current_status_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(JSON.stringify(stale)).not.toContain('+two');
  });

  it('7 before 8 for a mutation: a path through a file is refused by kind or parent, not STALE_GIT', async () => {
    // Existence and kind are decided inside the lock (src/mutation/pipeline.ts), the held STALE_GIT after them.
    const through = { expected_status_hash: STALE, dry_run: true };
    const dir = expectCode(
      await main.call('create_directory', { path: 'repo/tracked.txt/sub', ...through }),
      'VALIDATION',
    );
    expect(dir.error.details.reason).toBe('not_a_directory');
    const made = { path: 'repo/tracked.txt/x', content: 'x\n', create_dirs: true, ...through };
    expect(expectCode(await main.call('write_file', made), 'VALIDATION').error.details.reason).toBe('not_a_directory');
    const bare = { path: 'repo/tracked.txt/x', content: 'x\n', ...through };
    expect(expectCode(await main.call('write_file', bare), 'NOT_FOUND').error.details.reason).toBe('parent_missing');
    // … and with everything else in order, the stale hash decides.
    expectCode(await main.call('write_file', { path: 'repo/new.txt', content: 'x\n', ...through }), 'STALE_GIT');
  });

  it('rejections left no trace: both trees are byte-for-byte unchanged', () => {
    expect(snapshot(R.dir)).toEqual(before.R);
    expect(snapshot(O.dir)).toEqual(before.O);
  });

  // ---------------------------------------------------------------------------------------------------------------
  // MUTATING-TOOL PAIRS (steps 2→3 VALIDATION/BEGIN_PATCH before READONLY, 3 READONLY before BUDGET_EXCEEDED, 3 before
  // 4 ROOTS_EMPTY, 7 NOT_FOUND before 9 HASH_REQUIRED, 8 STALE_GIT, 9 before 10 PATCH_FAILED/REWRITE_BLOCKED) live in
  // test/e2e/order-of-checks-mutations.test.ts, written with the mutation tools. Add read-tool pairs here.
  // ---------------------------------------------------------------------------------------------------------------
});

/**
 * authorizeTreeEntries (src/policy/tree-authorize.ts), pure: every entry of a tree is judged as the same operation on
 * it, at its old place and at its new one — move (write, write), copy (read, write), delete (write) — by the per-path
 * rules (secrets, the file policy, the built-in guards); visible offenders are named (up to MAX_NAMED_ENTRIES, then
 * `more`), a hidden or denied entry or a guarded path ends the walk with one generic refusal that names nothing;
 * entries beneath a refused directory are not named (but judged); a link above the top (requested spelling) is judged too.
 */
import { describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import type { PolicyContext } from '../../src/policy/authorize.js';
import type { FilePolicy } from '../../src/policy/file-policy.js';
import type { AllowedPath, ResolvedPath } from '../../src/policy/resolve-path.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import {
  authorizeTreeEntries,
  MAX_NAMED_ENTRIES,
  type TreeEntry,
  type TreeOperation,
} from '../../src/policy/tree-authorize.js';

const R = '/r';
const ROOT: EffectiveRoot = { given: R, real: R, source: 'cli' };
const POLICY: FilePolicy = {
  rules: [
    { pattern: 'src/hidden/**', access: 'hidden' },
    { pattern: 'src/sealed', access: 'deny' },
    { pattern: 'src/ro.txt', access: 'read_only' },
    { pattern: 'ro-dir', access: 'read_only' },
    { pattern: 'dst-ro/*.txt', access: 'read_only' },
    { pattern: 'dst-hidden/*.txt', access: 'hidden' },
    { pattern: 'src/ro-dir/deep', access: 'hidden' },
  ],
};
const ctx = (o: Partial<PolicyContext> = {}): PolicyContext => ({
  roots: [ROOT],
  allowSecrets: false,
  policy: POLICY,
  ...o,
});
const at = (relative: string, absolute = `${R}/${relative}`): ResolvedPath => ({
  requested: absolute,
  absolute,
  real: `${R}/${relative}` as AllowedPath,
  root: ROOT,
  stats: null,
  viaSymlink: false,
});
const file = (relative: string): TreeEntry => ({ relative, isDirectory: false });
const dir = (relative: string): TreeEntry => ({ relative, isDirectory: true });

/** Runs the judge over `entries`; the refusal (thrown by entry() or assertAllowed()), or null. */
function judge(
  operation: TreeOperation,
  entries: TreeEntry[],
  source = at('src'),
  destination: ResolvedPath | null = operation === 'delete' ? null : at('dst'),
  c = ctx(),
): { error: ToolError | null; judged: number; declined: string[] } {
  const j = authorizeTreeEntries(c, operation, source, destination);
  let judged = 0;
  const declined: string[] = [];
  try {
    for (const e of entries) {
      // As the walk does: nothing beneath an entry the judge declined is visited.
      if (declined.some((d) => e.relative.startsWith(`${d}/`))) continue;
      if (!j.entry(e)) declined.push(e.relative);
      judged++;
    }
    j.assertAllowed();
    return { error: null, judged, declined };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { error, judged, declined };
  }
}

describe('authorizeTreeEntries', () => {
  it('allows a tree whose every entry may be carried, for each operation', () => {
    for (const op of ['move', 'copy', 'delete'] as const) {
      expect(judge(op, [dir('a'), file('a/x.txt'), file('b.txt')]).error).toBeNull();
    }
  });

  it('a read_only entry refuses a move and a delete (a write at the old place), not a copy (a read there)', () => {
    for (const op of ['move', 'delete'] as const) {
      const { error } = judge(op, [file('ro.txt')]);
      expect(error?.code).toBe('FILE_POLICY_DENIED');
      expect(error?.details).toMatchObject({ source: 'policy', rule: 'read_only', reason: 'tree_entries' });
      expect(error?.details.entries).toEqual([{ path: `${R}/src/ro.txt`, side: 'source', kind: 'read_only' }]);
      expect(error?.path).toBe(`${R}/src/ro.txt`);
    }
    expect(judge('copy', [file('ro.txt')]).error).toBeNull();
  });

  it('the new place: read_only there is named on the destination side; hidden there is generic', () => {
    const ro = judge('copy', [file('a.txt')], at('src'), at('dst-ro')).error;
    expect(ro?.details.entries).toEqual([{ path: `${R}/dst-ro/a.txt`, side: 'destination', kind: 'read_only' }]);
    const hidden = judge('move', [file('a.txt')], at('src'), at('dst-hidden')).error;
    expect(hidden?.code).toBe('FILE_POLICY_DENIED');
    expect(hidden?.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'move' });
    expect(hidden?.message).not.toContain('a.txt');
  });

  it('beneath a .git directory the .git rule decides, as on the whole path; past it, the file policy again', () => {
    const c = ctx({ policy: { rules: [{ pattern: '**/vault', access: 'hidden' }] } });
    // A hidden entry inside `.git` (any spelling): the named git_dir refusal, as without it (the generic one would
    // tell that the hidden entry is there).
    for (const git of ['.git', '.GIT.', 'git~1']) {
      const inside = [dir('r'), dir(`r/${git}`), dir(`r/${git}/vault`), file(`r/${git}/vault/n`)];
      const { error } = judge('move', inside, at('src'), at('dst'), c);
      expect(error?.details, git).toMatchObject({ source: 'builtin', rule: 'git_dir', reason: 'tree_entries' });
      expect(error?.path).toBe(`${R}/src/r/${git}`);
      expect(judge('move', inside.slice(0, 2), at('src'), at('dst'), c).error?.details).toEqual(error?.details);
    }
    // The same hidden name beside `.git`, walked after it: the generic refusal.
    const beside = [dir('r'), dir('r/.git'), file('r/.git/HEAD'), dir('r/vault'), file('r/vault/n')];
    for (const op of ['move', 'copy', 'delete'] as const) {
      const { error } = judge(op, beside, at('src'), op === 'delete' ? null : at('dst'), c);
      expect(error?.details, op).toEqual({ source: 'policy', reason: 'tree_entries', operation: op });
    }
  });

  it('secrets alone: SECRET_DENIED secret_inside, both places named; allowed with --allow-secrets', () => {
    const { error } = judge('move', [dir('k'), file('k/id_rsa')]);
    expect(error?.code).toBe('SECRET_DENIED');
    expect(error?.details).toEqual({
      reason: 'secret_inside',
      operation: 'move',
      entries: [
        { path: `${R}/src/k/id_rsa`, side: 'source', kind: 'secret' },
        { path: `${R}/dst/k/id_rsa`, side: 'destination', kind: 'secret' },
      ],
    });
    expect(
      judge('move', [dir('k'), file('k/id_rsa')], at('src'), at('dst'), ctx({ allowSecrets: true })).error,
    ).toBeNull();
    // A name that is a secret only at the new place (`.aws/credentials`).
    const aws = judge('copy', [file('credentials')], at('creds'), at('.aws')).error;
    expect(aws?.details.entries).toEqual([{ path: `${R}/.aws/credentials`, side: 'destination', kind: 'secret' }]);
  });

  it('a hidden or denied entry is not looked into, the walk goes on, and the refusal is the generic one', () => {
    // The walk goes on past it (a cap the walk reaches later must answer the same whether the protected name sorts
    // before or after the cap's entry), but never inside it; whatever was named before or after is dropped.
    for (const [entries, judged, declined] of [
      [[file('ro.txt'), dir('hidden'), file('hidden/n.txt'), file('z.txt')], 3, ['hidden']],
      [[dir('sealed'), file('sealed/db.yml'), file('a.key')], 2, ['sealed']],
    ] as const) {
      const result = judge('move', [...entries]);
      expect(result.judged).toBe(judged);
      expect(result.declined).toEqual(declined);
      const { error } = result;
      expect(error?.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'move' });
      expect(JSON.stringify(error?.details)).not.toMatch(/hidden|sealed|n\.txt|db\.yml|ro\.txt|a\.key/);
      expect(error?.path).toBe(`${R}/src`);
    }
  });

  it('the built-in guards: .git is named (git_dir); the state directory and lock files are not', () => {
    const git = judge('delete', [dir('repo'), dir('repo/.git'), file('repo/.git/HEAD')]).error;
    expect(git?.details).toMatchObject({ source: 'builtin', rule: 'git_dir' });
    expect(git?.details.entries).toEqual([{ path: `${R}/src/repo/.git`, side: 'source', kind: 'git_dir' }]);
    const state = judge('move', [dir('state'), file('state/journal')], at('src'), at('dst'), {
      ...ctx(),
      guarded: [{ path: `${R}/src/state`, rule: 'state_dir' }],
    }).error;
    expect(state?.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'move' });
    const lock = judge('delete', [file(`.fs-tools-lock-${'0'.repeat(32)}`)]).error;
    expect(lock?.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'delete' });
  });

  it('entries beneath a refused directory are not named; siblings after it are', () => {
    // `ro-dir` (a rule without `/`) matches that name at any depth: at both places.
    const { error } = judge('move', [dir('ro-dir'), file('ro-dir/a.key'), dir('ro-dir/sub'), file('b.key')]);
    expect(error?.details.entries).toEqual([
      { path: `${R}/src/ro-dir`, side: 'source', kind: 'read_only' },
      { path: `${R}/dst/ro-dir`, side: 'destination', kind: 'read_only' },
      { path: `${R}/src/b.key`, side: 'source', kind: 'secret' },
      { path: `${R}/dst/b.key`, side: 'destination', kind: 'secret' },
    ]);
  });

  it(`names at most ${MAX_NAMED_ENTRIES} entries with more: true, and judges every entry after them`, () => {
    const many = Array.from({ length: 30 }, (_, i) => file(`f${String(i).padStart(2, '0')}.pem`));
    const { error, judged } = judge('delete', many);
    expect((error?.details.entries as unknown[]).length).toBe(MAX_NAMED_ENTRIES);
    expect(error?.details.more).toBe(true);
    expect(judged).toBe(30);
  });

  it('a hidden or denied entry gives the generic refusal wherever it comes in the walk (before, after, beneath)', () => {
    const many = Array.from({ length: 20 }, (_, i) => file(`f${String(i).padStart(2, '0')}.pem`));
    const generic = { source: 'policy', reason: 'tree_entries', operation: 'move' };
    for (const order of [
      [dir('hidden'), file('hidden/a'), ...many],
      [...many, dir('hidden'), file('hidden/a')],
      [dir('ro-dir'), dir('ro-dir/x'), file('sealed'), ...many],
      [dir('ro-dir'), file('ro-dir/b.pem'), dir('ro-dir/deep')],
    ]) {
      const { error } = judge('move', order);
      expect(error?.code).toBe('FILE_POLICY_DENIED');
      expect(error?.details).toEqual(generic);
    }
  });

  it('another root inside the tree: its entries are judged by its rules from it; it is not carried away', () => {
    const inner: EffectiveRoot = { given: `${R}/src/inner`, real: `${R}/src/inner`, source: 'cli' };
    const c = ctx({ roots: [ROOT, inner] });
    // src/inner/src/hidden/n: relative to /r no rule matches it; relative to the inner root it is src/hidden/n.
    const tree = [dir('inner'), dir('inner/src'), dir('inner/src/hidden'), file('inner/src/hidden/n')];
    expect(judge('copy', tree).error).toBeNull();
    const hidden = judge('copy', tree, at('src'), at('dst'), c);
    expect(hidden.error?.details).toEqual({ source: 'policy', reason: 'tree_entries', operation: 'copy' });
    for (const op of ['move', 'delete'] as const) {
      const { error } = judge(op, [dir('inner'), file('inner/a.txt')], at('src'), op === 'move' ? at('dst') : null, c);
      expect(error?.details.entries).toEqual([{ path: `${R}/src/inner`, side: 'source', kind: 'root' }]);
    }
  });

  it('judges the requested spelling too: a link above the top cannot carry entries out of a protected place', () => {
    // /r/alias is a link to /r/src: the tree asked for as alias/… is judged at src/… and at alias/….
    const viaAlias = at('elsewhere', `${R}/src`);
    expect(judge('delete', [file('ro.txt')], viaAlias).error?.details.rule).toBe('read_only');
    expect(judge('delete', [file('ro.txt')], at('elsewhere')).error).toBeNull();
  });
});

/**
 * Pins authorizeRead's order of checks (SPEC §3.3 steps 4–7) on real temp trees: ROOTS_EMPTY → NOT_ALLOWED (before
 * the secret name) → SECRET_DENIED (before the policy) → FILE_POLICY_DENIED / policy hidden as NOT_FOUND (before
 * existence) → NOT_FOUND → kind (directory for a file: VALIDATION; FIFO for a file: FILE_POLICY_DENIED builtin).
 * Secrets are checked on the requested spelling and on the link target (notes.txt → .env); the policy is checked on
 * the resolved path and on the requested spelling (a link cannot carry a path out of a hidden or denied directory, and
 * a link cannot reach into one). No refusal carries file content.
 */
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { toEnvelope, type EnvelopeError } from '../../src/errors/to-envelope.js';
import { ToolError } from '../../src/errors/tool-error.js';
import {
  authorizeRead,
  authorizeWrite,
  classifyEntry,
  isSecretEntry,
  policyWalkFilter,
  type PolicyContext,
  type WantedKind,
} from '../../src/policy/authorize.js';
import type { GuardedPath } from '../../src/policy/builtin-guards.js';
import type { FilePolicy } from '../../src/policy/file-policy.js';
import type { EffectiveRoot } from '../../src/policy/roots.js';
import { fifo, makeTree, symlink } from '../helpers/tree.js';

const CONTENT = 'CONTENT-MUST-NOT-LEAK-0815';

const tree = makeTree({
  proj: {
    'a.txt': 'A',
    '.env': `TOKEN=${CONTENT}`,
    '.env.example': 'TOKEN=',
    'notes.txt': symlink('.env'),
    dir: { 'x.txt': 'X' },
    pipe: fifo(),
    'pipe-link': symlink('pipe'),
    'hidden-dir': { 'h.txt': CONTENT, 'to-public': symlink('../dir/x.txt') },
    'denied-dir': { 'd.txt': CONTENT, 'to-public': symlink('../dir/x.txt') },
    'to-hidden': symlink('hidden-dir/h.txt'),
    'to-denied': symlink('denied-dir/d.txt'),
    docs: { 'r.md': 'R' },
  },
  outside: { '.env': `OUT=${CONTENT}`, 'o.txt': CONTENT },
  'root-link': symlink('proj'),
});
afterAll(() => tree.cleanup());

const PROJ = path.join(tree.dir, 'proj');
const OUT = path.join(tree.dir, 'outside');
const ROOT: EffectiveRoot = { given: PROJ, real: PROJ, source: 'cli' };

const POLICY: FilePolicy = {
  rules: [
    { pattern: 'hidden-dir', access: 'hidden' },
    { pattern: 'denied-dir/**', access: 'deny' },
    { pattern: '.env', access: 'deny' },
    { pattern: 'docs', access: 'read_only' },
  ],
};

function ctx(overrides: Partial<PolicyContext> = {}): PolicyContext {
  return { roots: [ROOT], allowSecrets: false, policy: POLICY, ...overrides };
}

async function refused(requested: string, kind: WantedKind = 'file', c: PolicyContext = ctx()): Promise<EnvelopeError> {
  try {
    const r = await authorizeRead(requested, c, { kind });
    throw new Error(`expected ${requested} to be refused, got ${r.real}`);
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    const envelope = toEnvelope(error).error;
    expect(JSON.stringify(envelope)).not.toContain(CONTENT);
    return envelope;
  }
}

describe('authorizeRead order of checks (SPEC §3.3)', () => {
  test.each<[string, string, WantedKind, string, Record<string, unknown>?]>([
    ['no roots wins over everything', '', 'file', 'ROOTS_EMPTY'],
    ['outside + secret name → NOT_ALLOWED', path.join(OUT, '.env'), 'file', 'NOT_ALLOWED', { reason: 'outside_roots' }],
    ['outside + missing secret name → NOT_ALLOWED', path.join(OUT, '.env.local'), 'file', 'NOT_ALLOWED'],
    ['relative escape to a secret → NOT_ALLOWED', '../outside/.env', 'file', 'NOT_ALLOWED'],
    ['secret + policy deny → SECRET_DENIED', '.env', 'file', 'SECRET_DENIED', { pattern: '.env' }],
    ['missing secret → SECRET_DENIED (not NOT_FOUND)', 'sub/.env.production', 'file', 'SECRET_DENIED'],
    ['secret as a directory kind → SECRET_DENIED', '.env', 'directory', 'SECRET_DENIED'],
    ['link notes.txt → .env → SECRET_DENIED', 'notes.txt', 'file', 'SECRET_DENIED'],
    [
      'policy deny → FILE_POLICY_DENIED',
      'denied-dir/d.txt',
      'file',
      'FILE_POLICY_DENIED',
      { source: 'policy', rule: 'deny' },
    ],
    [
      'policy deny on a missing path → FILE_POLICY_DENIED (before existence)',
      'denied-dir/nope',
      'file',
      'FILE_POLICY_DENIED',
    ],
    [
      'policy deny on a directory for kind file → FILE_POLICY_DENIED (before kind)',
      'denied-dir',
      'file',
      'FILE_POLICY_DENIED',
    ],
    ['policy hidden → NOT_FOUND', 'hidden-dir/h.txt', 'file', 'NOT_FOUND'],
    ['policy hidden directory itself → NOT_FOUND', 'hidden-dir', 'directory', 'NOT_FOUND'],
    ['policy hidden + wrong kind → NOT_FOUND (before kind)', 'hidden-dir', 'file', 'NOT_FOUND'],
    ['link into a hidden directory → NOT_FOUND', 'to-hidden', 'file', 'NOT_FOUND'],
    ['link into a denied directory → FILE_POLICY_DENIED', 'to-denied', 'file', 'FILE_POLICY_DENIED'],
    ['link out of a hidden directory → NOT_FOUND', 'hidden-dir/to-public', 'file', 'NOT_FOUND'],
    ['link out of a denied directory → FILE_POLICY_DENIED', 'denied-dir/to-public', 'file', 'FILE_POLICY_DENIED'],
    ['missing → NOT_FOUND', 'nope.txt', 'file', 'NOT_FOUND'],
    ['missing nested → NOT_FOUND', 'no/such/dir/f.txt', 'any', 'NOT_FOUND'],
    ['directory for kind file → VALIDATION', 'dir', 'file', 'VALIDATION', { reason: 'is_directory' }],
    [
      'file for kind directory → VALIDATION',
      'a.txt',
      'directory',
      'VALIDATION',
      { reason: 'not_a_directory', kind: 'file' },
    ],
    [
      'FIFO for kind file → FILE_POLICY_DENIED builtin',
      'pipe',
      'file',
      'FILE_POLICY_DENIED',
      { source: 'builtin', rule: 'special_file', kind: 'fifo' },
    ],
    [
      'link to a FIFO for kind file → FILE_POLICY_DENIED builtin',
      'pipe-link',
      'file',
      'FILE_POLICY_DENIED',
      { source: 'builtin' },
    ],
    ['FIFO for kind directory → VALIDATION', 'pipe', 'directory', 'VALIDATION', { kind: 'fifo' }],
  ])('%s', async (label, requested, kind, code, details) => {
    const c = label.startsWith('no roots') ? ctx({ roots: [] }) : ctx();
    const e = await refused(requested || 'a.txt', kind, c);
    expect(e.code).toBe(code);
    if (details) expect(e.details).toMatchObject(details);
  });

  test('the link notes.txt → .env is refused under the name that was asked for', async () => {
    const e = await refused('notes.txt');
    expect(e.path).toBe(path.join(PROJ, 'notes.txt'));
  });

  test('a hidden path is indistinguishable from a missing one', async () => {
    const hidden = await refused('hidden-dir/h.txt');
    const missing = await refused('hidden-dir-nope/h.txt');
    const blank = (e: EnvelopeError) =>
      JSON.stringify({ ...e, path: '', message: e.message.split(e.path ?? '\0').join('') });
    expect(blank(hidden)).toBe(blank(missing));
  });
});

describe('authorizeWrite: a link at a path whose last component is not followed (issue 30)', () => {
  test('a file wanted there: NOT_ALLOWED symlink_at_path, not a "special file"; kind any takes the link itself', async () => {
    const linkPath = path.join(PROJ, 'pipe-link');
    const error = await authorizeWrite(linkPath, ctx(), { kind: 'file', mustExist: true, followFinal: false }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ToolError);
    const envelope = toEnvelope(error).error;
    expect(envelope.code).toBe('NOT_ALLOWED');
    expect(envelope.path).toBe(linkPath);
    expect(envelope.details).toEqual({ reason: 'symlink_at_path' });
    const any = await authorizeWrite(linkPath, ctx(), { kind: 'any', mustExist: true, followFinal: false });
    expect(any.real).toBe(linkPath);
    expect(any.stats?.isSymbolicLink()).toBe(true);
  });
});

describe('authorizeWrite: near paths of an outside path (issue 30)', () => {
  test('offered by default; not with offerNear: false (the start-up journal recovery needs only the code)', async () => {
    const outside = path.join(OUT, 'a.txt');
    const refusal = async (offerNear?: boolean) =>
      toEnvelope(
        await authorizeWrite(outside, ctx(), { kind: 'file', mustExist: false, followFinal: true, offerNear }).then(
          () => null,
          (e: unknown) => e,
        ),
      ).error;
    expect((await refusal()).details).toEqual({
      reason: 'outside_roots',
      roots: [PROJ],
      near: [path.join(PROJ, 'a.txt')],
    });
    expect((await refusal(false)).details).toEqual({ reason: 'outside_roots', roots: [PROJ] });
  });
});

describe('authorizeRead successes', () => {
  test('a plain file: relative, access and stats', async () => {
    const r = await authorizeRead('a.txt', ctx(), { kind: 'file' });
    expect(r.real).toBe(path.join(PROJ, 'a.txt'));
    expect(r.relative).toBe('a.txt');
    expect(r.access).toBeNull();
    expect(r.stats.isFile()).toBe(true);
  });

  test('read_only allows reading and reports the access level', async () => {
    const r = await authorizeRead('docs/r.md', ctx(), { kind: 'file' });
    expect(r.access).toBe('read_only');
    expect(r.relative).toBe('docs/r.md');
  });

  test('the root itself as a directory: relative is empty', async () => {
    const r = await authorizeRead('.', ctx(), { kind: 'directory' });
    expect(r.relative).toBe('');
  });

  test('a root given through a symlink, in its given spelling', async () => {
    const linked: EffectiveRoot = { given: path.join(tree.dir, 'root-link'), real: PROJ, source: 'cli' };
    const r = await authorizeRead(path.join(tree.dir, 'root-link', 'a.txt'), ctx({ roots: [linked] }), {
      kind: 'file',
    });
    expect(r.real).toBe(path.join(PROJ, 'a.txt'));
    await expect(
      authorizeRead(path.join(tree.dir, 'root-link', 'hidden-dir', 'to-public'), ctx({ roots: [linked] }), {
        kind: 'file',
      }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  test('.env.example is not a secret', async () => {
    await expect(authorizeRead('.env.example', ctx(), { kind: 'file' })).resolves.toMatchObject({
      relative: '.env.example',
    });
  });

  test('--allow-secrets lets a secret through (the policy still applies)', async () => {
    const c = ctx({ allowSecrets: true });
    const viaLink = await authorizeRead('notes.txt', ctx({ allowSecrets: true, policy: { rules: [] } }), {
      kind: 'file',
    });
    expect(viaLink.real).toBe(path.join(PROJ, '.env'));
    expect((await refused('.env', 'file', c)).code).toBe('FILE_POLICY_DENIED');
  });

  test("secrets: 'flag' (stat) lets a secret name through", async () => {
    const r = await authorizeRead('notes.txt', ctx({ policy: { rules: [] } }), { kind: 'any', secrets: 'flag' });
    expect(r.real).toBe(path.join(PROJ, '.env'));
  });

  test("kind 'any' accepts a FIFO (stat never opens it)", async () => {
    const r = await authorizeRead('pipe', ctx(), { kind: 'any' });
    expect(r.stats.isFIFO()).toBe(true);
  });
});

describe('policyWalkFilter (the tree walks of search_files and replace_in_files)', () => {
  test('omits hidden and denied entries, counts only the denied ones, keeps the rest', () => {
    let denied = 0;
    const filter = policyWalkFilter(ctx(), () => denied++);
    const verdicts = ['a.txt', 'hidden-dir', 'denied-dir/d.txt', 'dir/x.txt'].map((rel) =>
      filter(path.join(PROJ, rel), rel),
    );
    expect([verdicts, denied]).toEqual([['ok', 'omit', 'omit', 'ok'], 1]);
  });

  test('agrees with classifyEntry on hidden, denied and guarded entries; isSecretEntry is its secret verdict', () => {
    const guarded: GuardedPath[] = [
      { path: path.join(PROJ, 'dir', 'state'), rule: 'state_dir' },
      { path: path.join(PROJ, 'docs', 'audit.log'), rule: 'audit_log' },
    ];
    const rels = [
      'a.txt',
      '.env',
      '.env.example',
      // Entries a walk can reach: nothing below a directory it left out (hidden-dir, dir/state), which the walk
      // filter's classifier assumes (walkEntryClassifier).
      'hidden-dir',
      'denied-dir/d.txt',
      'dir/state',
      'dir/stat',
      'dir/state-other',
      'docs/audit.log',
      'docs/audit.log2',
      'docs/r.md',
      `dir/.fs-tools-lock-${'0'.repeat(32)}`,
    ];
    for (const allowSecrets of [false, true]) {
      const c = ctx({ guarded, allowSecrets });
      let denied = 0;
      const filter = policyWalkFilter(c, () => denied++);
      let expectedDenied = 0;
      for (const rel of rels) {
        const abs = path.join(PROJ, rel);
        const v = classifyEntry(c, abs, rel);
        if (!v.hidden && v.denied) expectedDenied++;
        expect([rel, filter(abs, rel)]).toEqual([rel, v.hidden || v.denied ? 'omit' : 'ok']);
        expect([rel, isSecretEntry(c, abs)]).toEqual([rel, v.secret]);
      }
      expect(denied).toBe(expectedDenied);
    }
  });
});

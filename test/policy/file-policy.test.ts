/**
 * Pins the file security policy (SPEC §4.3): loadFilePolicy accepts a valid file and turns a missing file, bad JSON,
 * a wrong shape, an unknown access level or extra keys into a UsageError (exit 2) naming the file; accessFor picks
 * the most restrictive matching rule, a rule on a directory covers what is under it, dotfiles match, root-anchored
 * and directory spellings (`/secrets`, `./secrets`, `secrets/`) mean the same directory; assertPolicyAllows maps
 * deny/hidden/read_only per intent; the built-in `.git` rule (isInsideGitDir / assertNotGitInternal) catches `.git`,
 * `.GIT` and nested `.git/hooks/pre-commit` but not `.github` or `x.git`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { toEnvelope } from '../../src/errors/to-envelope.js';
import { ToolError } from '../../src/errors/tool-error.js';
import { UsageError } from '../../src/errors/usage-error.js';
import type { PathFlavor } from '../../src/policy/containment.js';
import {
  accessFor,
  assertNotGitInternal,
  assertPolicyAllows,
  isInsideGitDir,
  loadFilePolicy,
  type Access,
  type FilePolicy,
} from '../../src/policy/file-policy.js';
import { makeTree } from '../helpers/tree.js';

const POSIX: PathFlavor = { pathModule: path.posix, caseInsensitive: false };
const WIN: PathFlavor = { pathModule: path.win32, caseInsensitive: true };

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('loadFilePolicy', () => {
  const tree = makeTree({
    'valid.json': JSON.stringify({
      rules: [
        { pattern: 'secrets/**', access: 'deny' },
        { pattern: 'docs', access: 'read_only' },
      ],
    }),
    'empty-rules.json': '{"rules": []}',
    'bad.json': '{"rules": [',
    'multi-line-bad.json': '{\n  "rules": [\n    {"pattern": "a",\n',
    'array.json': '[]',
    'no-rules.json': '{}',
    'rules-not-array.json': '{"rules": {"pattern": "a", "access": "deny"}}',
    'unknown-access.json': '{"rules": [{"pattern": "a", "access": "forbid"}]}',
    'extra-top.json': '{"rules": [], "version": 1}',
    'extra-rule.json': '{"rules": [{"pattern": "a", "access": "deny", "comment": "x"}]}',
    'missing-access.json': '{"rules": [{"pattern": "a"}]}',
    'empty-pattern.json': '{"rules": [{"pattern": "", "access": "deny"}]}',
    'pattern-number.json': '{"rules": [{"pattern": 3, "access": "deny"}]}',
    'a-directory': {},
  });
  afterAll(() => tree.cleanup());

  test('a valid file parses to its rules', () => {
    expect(loadFilePolicy(path.join(tree.dir, 'valid.json'))).toEqual({
      rules: [
        { pattern: 'secrets/**', access: 'deny' },
        { pattern: 'docs', access: 'read_only' },
      ],
    });
    expect(loadFilePolicy(path.join(tree.dir, 'empty-rules.json'))).toEqual({ rules: [] });
  });

  test.each([
    ['missing file', 'does-not-exist.json', /cannot read/],
    ['a directory', 'a-directory', /cannot read/],
    ['bad JSON', 'bad.json', /not valid JSON/],
    ['bad JSON over several lines', 'multi-line-bad.json', /not valid JSON/],
    ['top-level array', 'array.json', /./],
    ['no rules key', 'no-rules.json', /rules/],
    ['rules not an array', 'rules-not-array.json', /rules/],
    ['unknown access level', 'unknown-access.json', /access/],
    ['extra top-level key', 'extra-top.json', /version/],
    ['extra key in a rule', 'extra-rule.json', /comment/],
    ['missing access', 'missing-access.json', /access/],
    ['empty pattern', 'empty-pattern.json', /pattern/],
    ['pattern not a string', 'pattern-number.json', /pattern/],
  ])('%s → UsageError (exit 2, one line, names the file)', (_label, name, reason) => {
    const file = path.join(tree.dir, name);
    const error = thrown(() => loadFilePolicy(file));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    expect((error as UsageError).message).toMatch(reason);
    expect((error as UsageError).message).toContain(file);
    expect((error as UsageError).message).not.toContain('\n');
  });
});

describe('accessFor', () => {
  const policy: FilePolicy = {
    rules: [
      { pattern: 'secrets/**', access: 'deny' },
      { pattern: 'docs', access: 'read_only' },
      { pattern: 'docs/internal', access: 'hidden' },
      { pattern: 'vendor/**', access: 'read_only' },
      { pattern: 'vendor/private/**', access: 'deny' },
      { pattern: '**/*.gen.ts', access: 'read_only' },
      { pattern: '.config', access: 'hidden' },
      { pattern: 'both.txt', access: 'read_only' },
      { pattern: 'both.txt', access: 'deny' },
      { pattern: 'both.txt', access: 'hidden' },
    ],
  };
  test.each<[string, Access | null]>([
    ['', null],
    ['src/a.ts', null],
    ['secrets', 'deny'],
    ['secrets/k', 'deny'],
    ['secrets/deep/er/k.txt', 'deny'],
    ['secrets-public/k', null],
    ['docs', 'read_only'],
    ['docs/guide.md', 'read_only'],
    ['docs/internal', 'hidden'],
    ['docs/internal/plan.md', 'hidden'],
    ['docsx/a.md', null],
    ['vendor/lib.js', 'read_only'],
    ['vendor/private/key.txt', 'deny'],
    ['a/b/c.gen.ts', 'read_only'],
    ['c.gen.ts', 'read_only'],
    ['.config', 'hidden'],
    ['.config/settings.json', 'hidden'],
    ['.configx', null],
    ['both.txt', 'deny'],
  ])('%j → %j (most restrictive wins; a directory rule covers its subtree; dotfiles match)', (relative, expected) => {
    expect(accessFor(policy, relative, POSIX)).toBe(expected);
  });

  test('rule order does not matter: the most restrictive wins', () => {
    const levels: Access[] = ['deny', 'hidden', 'read_only'];
    for (const order of [levels, [...levels].reverse(), ['hidden', 'deny', 'read_only'] as Access[]]) {
      expect(accessFor({ rules: order.map((access) => ({ pattern: 'x/**', access })) }, 'x/y', POSIX)).toBe('deny');
    }
    expect(
      accessFor(
        {
          rules: [
            { pattern: 'x', access: 'read_only' },
            { pattern: 'x', access: 'hidden' },
          ],
        },
        'x',
        POSIX,
      ),
    ).toBe('hidden');
  });

  test('dotfiles under a glob match (dot: true)', () => {
    const p: FilePolicy = {
      rules: [
        { pattern: 'conf/*', access: 'deny' },
        { pattern: '**/*.local', access: 'hidden' },
      ],
    };
    expect(accessFor(p, 'conf/.hidden', POSIX)).toBe('deny');
    expect(accessFor(p, 'a/.b/.x.local', POSIX)).toBe('hidden');
  });

  // A policy author writes a directory the way .gitignore and shells do; silently matching nothing would leave the
  // directory unprotected.
  test.each(['secrets', 'secrets/', './secrets', '/secrets', './secrets/', '/secrets/**', 'secrets/**'])(
    'the spelling %j covers the directory secrets and its subtree',
    (pattern) => {
      const p: FilePolicy = { rules: [{ pattern, access: 'deny' }] };
      expect(accessFor(p, 'secrets', POSIX)).toBe('deny');
      expect(accessFor(p, 'secrets/k.txt', POSIX)).toBe('deny');
      expect(accessFor(p, 'secrets-public/k.txt', POSIX)).toBe(null);
      // .gitignore semantics: a glob without any `/` matches the name at any depth; with a `/` it is anchored.
      expect(accessFor(p, 'a/secrets/k.txt', POSIX)).toBe(pattern.includes('/') ? null : 'deny');
    },
  );

  test('a glob without / matches the name at any depth; with / it is anchored at the root', () => {
    const p: FilePolicy = {
      rules: [
        { pattern: '*.log', access: 'hidden' },
        { pattern: 'build/*.tmp', access: 'deny' },
      ],
    };
    expect(accessFor(p, 'a.log', POSIX)).toBe('hidden');
    expect(accessFor(p, 'deep/er/a.log', POSIX)).toBe('hidden');
    expect(accessFor(p, 'build/x.tmp', POSIX)).toBe('deny');
    expect(accessFor(p, 'src/build/x.tmp', POSIX)).toBe(null);
  });

  test('case: exact on a case-sensitive platform, folded on a case-insensitive one', () => {
    const p: FilePolicy = { rules: [{ pattern: 'Secrets/**', access: 'deny' }] };
    expect(accessFor(p, 'secrets/k', POSIX)).toBe(null);
    expect(accessFor(p, 'SECRETS/k', WIN)).toBe('deny');
  });

  test('an empty policy restricts nothing', () => {
    expect(accessFor({ rules: [] }, 'anything/at/all', POSIX)).toBe(null);
  });
});

describe('assertPolicyAllows', () => {
  test.each<[Access | null, 'read' | 'write', string | null, string | null]>([
    [null, 'read', null, null],
    [null, 'write', null, null],
    ['read_only', 'read', null, null],
    ['read_only', 'write', 'FILE_POLICY_DENIED', 'read_only'],
    ['hidden', 'read', 'NOT_FOUND', null],
    ['hidden', 'write', 'NOT_FOUND', null],
    ['deny', 'read', 'FILE_POLICY_DENIED', 'deny'],
    ['deny', 'write', 'FILE_POLICY_DENIED', 'deny'],
  ])('access %j, intent %j → %j', (access, intent, code, rule) => {
    const fn = () => assertPolicyAllows(access, intent, '/proj/x/y', 'x/y');
    if (code === null) {
      expect(fn).not.toThrow();
      return;
    }
    const error = thrown(fn) as ToolError;
    expect(error).toBeInstanceOf(ToolError);
    expect(error.code).toBe(code);
    expect(error.path).toBe('/proj/x/y');
    if (rule) expect(error.details).toMatchObject({ source: 'policy', rule });
  });

  test('hidden looks exactly like a missing file: no policy word in the envelope', () => {
    const envelope = toEnvelope(thrown(() => assertPolicyAllows('hidden', 'read', '/proj/h', 'h'))).error;
    expect(envelope.code).toBe('NOT_FOUND');
    expect(envelope.details).toEqual({});
    expect(JSON.stringify(envelope)).not.toMatch(/polic|hidden/i);
  });
});

describe('built-in .git rule', () => {
  test.each([
    ['/proj/.git', true],
    ['/proj/.git/config', true],
    ['/proj/.git/hooks/pre-commit', true],
    ['/proj/.GIT/hooks/pre-commit', true],
    ['/proj/.Git/HEAD', true],
    ['/proj/sub/module/.git/hooks/post-checkout', true],
    ['/proj/.git/', true],
    ['/proj/.github', false],
    ['/proj/.github/workflows/ci.yml', false],
    ['/proj/x.git', false],
    ['/proj/x.git/hooks/pre-commit', false],
    ['/proj/.gitignore', false],
    ['/proj/.gitattributes', false],
    ['/proj/.git-credentials', false],
    ['/proj/git/hooks', false],
    ['/proj/src/main.ts', false],
  ])('isInsideGitDir(%j) === %j', (p, expected) => {
    expect(isInsideGitDir(p, POSIX)).toBe(expected);
  });

  test.each([
    ['C:\\proj\\.git\\hooks\\pre-commit', true],
    ['C:\\proj\\.GIT\\config', true],
    ['C:/proj/.git/hooks/pre-commit', true],
    ['C:\\proj\\.github\\x', false],
    ['C:\\proj\\x.git\\y', false],
  ])('win32: isInsideGitDir(%j) === %j', (p, expected) => {
    expect(isInsideGitDir(p, WIN)).toBe(expected);
  });

  test.each([
    ['requested inside .git', '/proj/.git/hooks/pre-commit', '/proj/.git/hooks/pre-commit'],
    ['link to a hook (resolved inside .git)', '/proj/hook-link', '/proj/.git/hooks/pre-commit'],
    ['requested through .GIT', '/proj/.GIT/config', '/proj/.GIT/config'],
    ['requested spelling only', '/proj/.git/x', '/proj/elsewhere/x'],
  ])('assertNotGitInternal: %s → FILE_POLICY_DENIED builtin', (_label, requested, resolved) => {
    const error = thrown(() => assertNotGitInternal(requested, resolved)) as ToolError;
    expect(error).toBeInstanceOf(ToolError);
    expect(error.code).toBe('FILE_POLICY_DENIED');
    expect(error.details).toMatchObject({ source: 'builtin', rule: 'git_dir' });
    expect(error.path).toBe(requested);
  });

  test.each([
    ['/proj/.github/workflows/ci.yml', '/proj/.github/workflows/ci.yml'],
    ['/proj/x.git/a', '/proj/x.git/a'],
    ['/proj/.gitignore', '/proj/.gitignore'],
  ])('assertNotGitInternal(%j) passes', (requested, resolved) => {
    expect(() => assertNotGitInternal(requested, resolved)).not.toThrow();
  });
});

test('loadFilePolicy reads the file as given (no caching between loads)', () => {
  const tree = makeTree({ 'p.json': '{"rules": []}' });
  try {
    const file = path.join(tree.dir, 'p.json');
    expect(loadFilePolicy(file).rules).toHaveLength(0);
    writeFileSync(file, '{"rules": [{"pattern": "a", "access": "hidden"}]}');
    expect(loadFilePolicy(file).rules).toHaveLength(1);
  } finally {
    tree.cleanup();
  }
});

/**
 * The per-entry rules of a tree walk (src/policy/authorize.ts `assertEntryAllowed`) decide exactly as the whole-path
 * rules (`assertPathAllowed`) for every entry the walk judges below a clean top — beneath a directory refused with a
 * name too (a `.git` spelling, a read_only or secret directory), where it went on judging — the walk judges a
 * directory before what it holds, so reading only the new component (and a bounded tail) loses nothing while keeping
 * a deep tree's judging linear in its depth (docs/security.md "Bounded work"). Also the helpers it rests on:
 * `lastComponents` (the tail the secret and execution-bearing configuration rules read) and `childPath`.
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolError } from '../../src/errors/tool-error.js';
import { lastComponents } from '../../src/fs/path-within.js';
import { childPath } from '../../src/fs/verified-dir.js';
import { assertEntryAllowed, assertPathAllowed, type PolicyContext } from '../../src/policy/authorize.js';
import { accessFor, isDotGitName, type FilePolicy, type Intent } from '../../src/policy/file-policy.js';

const TOP = '/r/top';
const POLICY: FilePolicy = {
  rules: [
    { pattern: 'top/**/hidden', access: 'hidden' },
    { pattern: 'top/**/sealed', access: 'deny' },
    { pattern: '*.ro', access: 'read_only' },
    // Globs that match on ancestor components.
    { pattern: '**/secret/**', access: 'hidden' },
    { pattern: 'top/*/db.yml', access: 'deny' },
    { pattern: 'top/**/e/**', access: 'read_only' },
  ],
};
/** Names of every class a component rule or a tail rule reads, and plain ones. */
const NAMES = [
  'd',
  'e',
  '.git',
  '.GIT. ',
  'git~1',
  '.g\u200cit',
  '.aws',
  'credentials',
  '.env',
  '.env.local',
  'id_rsa',
  '.claude',
  'settings.json',
  '.envrc',
  '.husky',
  'pre-commit',
  '.vscode',
  'tasks.json',
  '.x.fs-tools-0123456789ab.tmp',
  `.fs-tools-lock-${'a'.repeat(32)}`,
  'a\\.y.fs-tools-copy-0123456789ab',
  'hidden',
  'sealed',
  'x.ro',
  'state',
  'audit.log',
  'secret',
  'db.yml',
];

/** True for a refusal the walk does not look beneath (src/policy/tree-authorize.ts: never named, not entered). */
function unnamed(result: unknown): boolean {
  const r = result as { code: string; details: { source?: string; rule?: string } };
  if (r.code === 'NOT_FOUND') return true;
  if (r.code !== 'FILE_POLICY_DENIED') return false;
  return (
    (r.details.source === 'policy' && r.details.rule === 'deny') ||
    (r.details.source === 'builtin' &&
      ['state_dir', 'audit_log', 'lock_file', 'own_temporary'].includes(r.details.rule!))
  );
}

const ctxOf = (allowSecrets: boolean, allowExecConfig: boolean): PolicyContext => ({
  roots: [{ given: '/r', real: '/r', source: 'cli' }],
  allowSecrets,
  allowExecConfig,
  policy: POLICY,
  guarded: [
    { path: `${TOP}/state`, rule: 'state_dir' },
    { path: `${TOP}/d/audit.log`, rule: 'audit_log' },
  ],
});

/** The refusal a check throws (code, details), or null. */
function outcome(check: () => void): unknown {
  try {
    check();
    return null;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { code: error.code, path: error.path, details: error.details };
  }
}

describe('assertEntryAllowed', () => {
  // The walk judges the entries beneath a directory refused with a name too (the answer must not depend on the
  // walk's order), and enters nothing refused without one: so must the comparison. A `.git` spelling above is passed
  // in, as the judge tracks it.
  it('decides as assertPathAllowed on every entry the walk judges', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 8 }),
        fc.constantFrom<Intent>('read', 'write'),
        fc.boolean(),
        fc.boolean(),
        (names, intent, secrets, exec) => {
          const ctx = ctxOf(secrets, exec);
          let absolute = TOP;
          let belowGitDir = false;
          for (const name of names) {
            absolute = `${absolute}/${name}`;
            const relative = path.posix.relative('/r', absolute);
            const place = { absolute, real: absolute, relative, access: accessFor(POLICY, relative) };
            const whole = outcome(() => assertPathAllowed(ctx, intent, place));
            expect(outcome(() => assertEntryAllowed(ctx, intent, place, name, belowGitDir))).toEqual(whole);
            if (whole !== null && unnamed(whole)) break; // the walk does not enter it
            belowGitDir ||= isDotGitName(name);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('lastComponents', () => {
  it('is split-filter-slice of the tail, for any separators', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', 'bc', '', '.', '/', '\\', 'x y'), { maxLength: 12 }).map((p) => p.join('')),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom('/', '\\/'),
        (p, k, separators) => {
          const split = separators === '/' ? p.split('/') : p.split(/[\\/]/);
          const expected = split.filter(Boolean).slice(-k);
          expect(lastComponents(p, k, separators)).toEqual(expected);
        },
      ),
    );
  });
});

describe('childPath', () => {
  it('equals path.join for any directory spelling and name', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', '.', '..', '', 'b c'), { maxLength: 6 }).map((p) => `/${p.join('/')}`),
        fc.constantFrom('n', '.', '..', 'a/b', 'x\\y', '.hidden'),
        (dir, name) => {
          expect(childPath(dir, name)).toBe(path.join(dir, name));
        },
      ),
    );
    expect(childPath('/', 'a')).toBe('/a');
    expect(childPath('/a/b', 'c')).toBe('/a/b/c');
  });
});

/**
 * The per-entry rules of a tree walk (src/policy/authorize.ts `assertEntryAllowed`) decide exactly as the whole-path
 * rules (`assertPathAllowed`) for every entry whose ancestors below a clean top passed them — the walk judges a
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
import { accessFor, type FilePolicy, type Intent } from '../../src/policy/file-policy.js';

const TOP = '/r/top';
const POLICY: FilePolicy = {
  rules: [
    { pattern: 'top/**/hidden', access: 'hidden' },
    { pattern: 'top/**/sealed', access: 'deny' },
    { pattern: '*.ro', access: 'read_only' },
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
];

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
  it('decides as assertPathAllowed on every entry below passing ancestors', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 8 }),
        fc.constantFrom<Intent>('read', 'write'),
        fc.boolean(),
        fc.boolean(),
        (names, intent, secrets, exec) => {
          const ctx = ctxOf(secrets, exec);
          let absolute = TOP;
          for (const name of names) {
            absolute = `${absolute}/${name}`;
            const relative = path.posix.relative('/r', absolute);
            const place = { absolute, real: absolute, relative, access: accessFor(POLICY, relative) };
            const whole = outcome(() => assertPathAllowed(ctx, intent, place));
            expect(outcome(() => assertEntryAllowed(ctx, intent, place, name))).toEqual(whole);
            if (whole !== null) break; // beneath a refused directory the walk names nothing
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

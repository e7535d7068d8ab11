/**
 * walkEntryClassifier (src/policy/authorize.ts, issue #19): the per-call classifier the walks use gives the same
 * verdict as classifyEntry (the per-entry reference) for every entry a walk can reach, i.e. every path below the root
 * none of whose ancestors was left out. Pins, on random trees of names that hit every rule (secret names and the
 * two-component `.aws/credentials`, lock-file names, the state directory and audit log as guarded paths, policy rules
 * that hide, deny or make read-only a directory or a name at any depth):
 *  - the same class (ok, secret, hidden, denied) with and without the entry's name passed, with secrets allowed or not;
 *  - accessForEntry (src/policy/file-policy.ts) from the parent's level equals accessFor on the whole path.
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyEntry, walkEntryClassifier, type EntryClass, type PolicyContext } from '../../src/policy/authorize.js';
import { guardedPaths } from '../../src/policy/builtin-guards.js';
import { accessFor, accessForEntry, type FilePolicy } from '../../src/policy/file-policy.js';

const ROOT = '/r';
const LOCK = `.fs-tools-lock-${'a'.repeat(32)}`;
const NAMES = ['a', 'b', 'src', '.env', 'x.pem', '.aws', 'credentials', LOCK, '.fs-tools-x', 'state', 'audit.log', 'd'];
const POLICY: FilePolicy = {
  rules: [
    { pattern: 'b', access: 'hidden' },
    { pattern: 'src/d/**', access: 'deny' },
    { pattern: '*.pem', access: 'read_only' },
    { pattern: '/a/d', access: 'deny' },
    { pattern: 'src/a', access: 'hidden' },
  ],
};

function context(allowSecrets: boolean, policy: FilePolicy): PolicyContext {
  return {
    roots: [{ given: ROOT, real: ROOT, source: 'cli' }],
    allowSecrets,
    policy,
    guarded: guardedPaths({ stateDir: ['/r/a/state', '/r/state'], auditLog: ['/r/src/audit.log'] }),
  };
}

function reference(ctx: PolicyContext, absolute: string, relative: string): EntryClass {
  const v = classifyEntry(ctx, absolute, relative);
  return v.hidden ? 'hidden' : v.denied ? 'denied' : v.secret ? 'secret' : 'ok';
}

/** The relative paths a walk of `paths` (and their ancestors) visits, in walk order, without what it leaves out. */
function walkOrder(ctx: PolicyContext, paths: readonly string[]): string[] {
  const all = new Set<string>();
  for (const p of paths) {
    const parts = p.split('/');
    for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join('/'));
  }
  const omitted = new Set<string>();
  const out: string[] = [];
  for (const rel of [...all].sort()) {
    const parent = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    if (parent && (omitted.has(parent) || !all.has(parent))) {
      omitted.add(rel);
      continue;
    }
    const c = reference(ctx, path.posix.join(ROOT, rel), rel);
    if (c === 'hidden' || c === 'denied') omitted.add(rel);
    out.push(rel);
  }
  return out;
}

const pathArb = fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 4 }).map((p) => p.join('/'));

describe('walkEntryClassifier agrees with classifyEntry on every entry a walk reaches', () => {
  const cases: Array<[string, boolean, FilePolicy]> = [
    ['secrets denied, policy rules', false, POLICY],
    ['secrets allowed, policy rules', true, POLICY],
    ['secrets denied, no rules', false, { rules: [] }],
  ];
  it.each(cases)('%s (property)', (_label, allowSecrets, policy) => {
    const ctx = context(allowSecrets, policy);
    fc.assert(
      fc.property(fc.array(pathArb, { minLength: 1, maxLength: 12 }), (paths) => {
        const withName = walkEntryClassifier(ctx);
        const withoutName = walkEntryClassifier(ctx);
        for (const rel of walkOrder(ctx, paths)) {
          const absolute = path.posix.join(ROOT, rel);
          const expected = reference(ctx, absolute, rel);
          const name = rel.slice(rel.lastIndexOf('/') + 1);
          expect([rel, withName(absolute, rel, name)]).toEqual([rel, expected]);
          expect([rel, withoutName(absolute, rel)]).toEqual([rel, expected]);
        }
      }),
      { numRuns: 200, seed: 20261201 },
    );
  });

  it('covers every class (the generator reaches them all)', () => {
    const ctx = context(false, POLICY);
    const classify = walkEntryClassifier(ctx);
    expect(classify('/r/state', 'state', 'state')).toBe('hidden'); // the state directory
    expect(classify('/r/src/audit.log', 'src/audit.log', 'audit.log')).toBe('hidden'); // the audit log
    expect(classify(`/r/a/${LOCK}`, `a/${LOCK}`, LOCK)).toBe('hidden'); // a lock file
    expect(classify('/r/a/b', 'a/b', 'b')).toBe('hidden'); // policy hidden
    expect(classify('/r/a/d', 'a/d', 'd')).toBe('denied'); // policy deny
    expect(classify('/r/src/d', 'src/d', 'd')).toBe('denied'); // `src/d/**` matches src/d too
    expect(classify('/r/x.pem', 'x.pem', 'x.pem')).toBe('secret'); // read_only is no omission
    expect(classify('/r/.aws/credentials', '.aws/credentials', 'credentials')).toBe('secret');
    expect(classify('/r/a/credentials', 'a/credentials', 'credentials')).toBe('ok');
    expect(classify('/r/a/.env', 'a/.env', '.env')).toBe('secret');
    expect(classify('/r/a/.fs-tools-x', 'a/.fs-tools-x', '.fs-tools-x')).toBe('ok');
  });
});

describe('accessForEntry', () => {
  it('from the parent directory’s level equals accessFor on the whole path (property)', () => {
    fc.assert(
      fc.property(pathArb, (rel) => {
        const slash = rel.lastIndexOf('/');
        const parentAccess = slash < 0 ? null : accessFor(POLICY, rel.slice(0, slash));
        expect([rel, accessForEntry(POLICY, rel, parentAccess)]).toEqual([rel, accessFor(POLICY, rel)]);
      }),
      { numRuns: 3000, seed: 20261201 },
    );
  });
});

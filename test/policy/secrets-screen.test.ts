/**
 * The fast screen in front of the secret rules (src/policy/secrets.ts, SPEC §4.2) never changes a verdict: for every
 * rule's own name, its variants (case, exceptions, prefixes, suffixes, parent directories, trailing separators,
 * Windows separators) and random names, `secretRuleFor` (screen + rules) equals `matchSecretRules` (rules only).
 */
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PathFlavor } from '../../src/policy/containment.js';
import { deriveScreen, matchSecretRules, SECRET_RULES, secretRuleFor } from '../../src/policy/secrets.js';

const POSIX: PathFlavor = { pathModule: path.posix, caseInsensitive: false };
const WIN: PathFlavor = { pathModule: path.win32, caseInsensitive: true };

/** Names built from every rule: itself, cased, and with things around it. */
function variants(): string[] {
  const out: string[] = [];
  for (const { glob, except } of SECRET_RULES) {
    const concrete = glob.replace(/\*/g, 'x');
    for (const n of [
      concrete,
      glob.replace(/\*/g, ''),
      concrete.toUpperCase(),
      `a${concrete}`,
      `${concrete}b`,
      `${concrete}.bak`,
      `x.${concrete}`,
      ...(except ?? []),
    ]) {
      out.push(n, `/r/${n}`, `/r/sub/${n}`, `/r/${n}/`, `r\\${n}`, `/r/.aws/${n}`, `/r/.docker/${n}`);
    }
  }
  out.push(
    '',
    '/',
    '.',
    '..',
    'credentials',
    'config.json',
    '.aws/CREDENTIALS',
    '/x/.Docker/Config.JSON',
    'id_rsa.pub',
    '.env.example',
    '.ENV.Sample',
    '.envrc',
    'env',
    'a.pem/',
    'a.PeM',
    'key',
    '.key',
    'x.keys',
    'x.keystore',
    // Non-ASCII characters that lower-case to ASCII (the Kelvin sign K to `k`, dotted İ to `i̇`) at the places the
    // cheap screen looks at: the last two characters and the first.
    'x.\u212Aey',
    'X.KE\u212A',
    '\u0130d_rsa',
    '\u212A',
    'a\u212A',
    '.ENV.\u212A',
    'é.pem',
    'x.ts',
    'ts',
    't',
  );
  return out;
}

describe('the screen never changes a verdict', () => {
  it.each([
    ['posix', POSIX],
    ['windows', WIN],
  ] as const)('rule-derived names (%s separators)', (_name, flavor) => {
    for (const p of variants()) expect([p, secretRuleFor(p, flavor)]).toEqual([p, matchSecretRules(p, flavor)]);
  });

  it('random paths over the letters the rules use (property)', () => {
    const alphabet = fc.constantFrom(...'.-_/\\envpmkyscrdtialjoxfgwhEPNKYSCRDT\u212A\u0130é'.split(''));
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 24 }).map((a) => a.join('')),
        fc.boolean(),
        (p, win) => {
          const flavor = win ? WIN : POSIX;
          expect(secretRuleFor(p, flavor)).toBe(matchSecretRules(p, flavor));
        },
      ),
      { numRuns: 20_000 },
    );
  });
});

describe('deriveScreen (which rule sets the name screen can stand in for)', () => {
  it('screens the shipped rules: every literal name, `*suffix` and `prefix*` last component', () => {
    const screen = deriveScreen(SECRET_RULES);
    expect(screen).not.toBeNull();
    expect(screen!.names.has('.netrc')).toBe(true);
    expect(screen!.suffixes).toContain('.pem');
    expect(screen!.prefixes).toContain('.env.');
  });

  it('gives up (null: every path runs the full rules) on a last component it cannot screen', () => {
    for (const glob of [
      '**/[ab].key', // a class
      '**/a*b', // a glob in the middle
      '**/x', // a name shorter than two characters
      '**/*', // an empty suffix
      '**/*.clé', // a non-ASCII suffix
      '**/é*', // a non-ASCII prefix
    ]) {
      expect([glob, deriveScreen([{ glob: '**/id_rsa' }, { glob }])]).toEqual([glob, null]);
    }
    expect(deriveScreen([{ glob: '**/id_rsa' }, { glob: '**/.env.*' }, { glob: '**/*.p12' }])).not.toBeNull();
  });
});

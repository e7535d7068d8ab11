/**
 * Secret filenames (docs/security.md). The rules are data: one array of globs with their exceptions, matched
 * case-insensitively on the last one or two path components. `isSecretPath` is a pure predicate;
 * `assertNotSecret` throws SECRET_DENIED.
 */
import { compileGlob } from '../fs/glob/glob.js';
import { lastComponents } from '../fs/path-within.js';
import { ToolError } from '../errors/tool-error.js';
import { HOST_FLAVOR, type PathFlavor } from './containment.js';

interface SecretRule {
  /** Glob over the last N components joined by `/` (N = number of `/` in the glob + 1). */
  glob: string;
  /** Names that look like the glob but are not secrets. */
  except?: readonly string[];
}

/** docs/security.md "at least" list. */
export const SECRET_RULES: readonly SecretRule[] = [
  { glob: '.env' },
  { glob: '.env.*', except: ['.env.example', '.env.sample', '.env.template'] },
  { glob: '*.pem' },
  { glob: '*.key' },
  { glob: '*.p12' },
  { glob: '*.pfx' },
  { glob: '*.jks' },
  { glob: '*.keystore' },
  { glob: '*.kdbx' },
  { glob: 'id_rsa' },
  { glob: 'id_dsa' },
  { glob: 'id_ecdsa' },
  { glob: 'id_ed25519' },
  { glob: '.netrc' },
  { glob: '_netrc' },
  { glob: '.npmrc' },
  { glob: '.pypirc' },
  { glob: '.git-credentials' },
  { glob: '.htpasswd' },
  { glob: 'credentials.json' },
  { glob: '.aws/credentials' },
  { glob: '.docker/config.json' },
  // Beyond docs/security.md's list: the forge CLIs' own token stores (gh's hosts.yml holds oauth_token per host;
  // glab's config.yml holds token per host). With a root at $HOME they were readable and writable by the agent.
  { glob: 'gh/hosts.yml' },
  { glob: 'glab-cli/config.yml' },
];

/**
 * The rules compiled once, to the linear-time glob matcher (src/fs/glob): compiling per call made classifying the
 * entries of a 50,000-file listing take ~25 s, and a match costs at most O(name length × rule size) whatever the name.
 */
const COMPILED_RULES = SECRET_RULES.map((rule) => ({
  rule,
  depth: rule.glob.split('/').length,
  isMatch: compileGlob(rule.glob, { nocase: true }),
}));
/** The most components any rule reads from a path's end. */
const MAX_RULE_DEPTH = Math.max(...COMPILED_RULES.map((r) => r.depth));

/**
 * A necessary condition derived from the rules, checked before them: the lower-cased last component of a path any
 * rule matches is one of `names`, ends with one of `suffixes` or starts with one of `prefixes` (`*.pem` → suffix
 * `.pem`, `.env.*` → prefix `.env.`, `.aws/credentials` → name `credentials`). Listings and search classify every
 * entry of a tree, and nearly every name fails this screen in a few string comparisons instead of 22 glob tests on
 * a split, re-joined path. Null when a rule's last component is a glob this derivation does not understand: then
 * every path runs the full rules.
 *
 * In front of it, cheaper still (a listing screens every entry): `tails` holds the last two characters of
 * every name and suffix (ASCII, lower-cased) and `firsts` the first character of every prefix, so a name whose last
 * two and first characters are ASCII and in neither set is no secret without lower-casing it (most names: `.txt`,
 * `.ts`, `.md` end in none of those pairs). A non-ASCII character there takes the full screen, since lower-casing
 * one can give ASCII (the Kelvin sign K becomes `k`).
 */
const SCREEN = deriveScreen(SECRET_RULES);

/** The screen of a rule set (shape above); exported for its tests, which also give it rules it cannot screen. */
export function deriveScreen(rules: readonly { glob: string }[]): {
  names: Set<string>;
  suffixes: string[];
  prefixes: string[];
  tails: Set<number>;
  firsts: Set<number>;
} | null {
  const names = new Set<string>();
  const suffixes: string[] = [];
  const prefixes: string[] = [];
  const special = /[*?[\]{}()!+@\\]/;
  for (const { glob } of rules) {
    const last = glob.split('/').pop()!.toLowerCase();
    if (!special.test(last)) names.add(last);
    else if (last.startsWith('*') && !special.test(last.slice(1))) suffixes.push(last.slice(1));
    else if (last.endsWith('*') && !special.test(last.slice(0, -1))) prefixes.push(last.slice(0, -1));
    else return null;
  }
  const tails = new Set<number>();
  const firsts = new Set<number>();
  for (const s of [...names, ...suffixes]) {
    // A name or suffix shorter than two characters, or not ASCII, would need the full screen for every path.
    if (s.length < 2 || [...s].some((c) => c.charCodeAt(0) >= 0x80)) return null;
    tails.add(pairKey(s.charCodeAt(s.length - 2), s.charCodeAt(s.length - 1)));
  }
  for (const s of prefixes) {
    if (s.length < 1 || s.charCodeAt(0) >= 0x80) return null;
    firsts.add(asciiLower(s.charCodeAt(0)));
  }
  return { names, suffixes, prefixes, tails, firsts };
}

/** An ASCII character code lower-cased (A-Z → a-z; anything else unchanged). */
function asciiLower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
}

/** Two ASCII character codes, lower-cased, as one number. */
function pairKey(a: number, b: number): number {
  return asciiLower(a) * 128 + asciiLower(b);
}

/** Start and end (exclusive) of the last non-empty component of a path (separators per flavor). */
function lastComponentRange(filePath: string, flavor: PathFlavor): [number, number] {
  const win = flavor.pathModule.sep === '\\';
  const isSep = (c: number) => c === 0x2f || (win && c === 0x5c);
  let end = filePath.length;
  while (end > 0 && isSep(filePath.charCodeAt(end - 1))) end--;
  let start = end;
  while (start > 0 && !isSep(filePath.charCodeAt(start - 1))) start--;
  return [start, end];
}

/**
 * The secret rule an absolute or relative path matches, or null. Case-insensitive on every platform: a `.ENV` is a
 * secret even on Linux, because the same repository is checked out on macOS and Windows too.
 */
export function secretRuleFor(filePath: string, flavor: PathFlavor = HOST_FLAVOR): string | null {
  if (SCREEN) {
    const [start, end] = lastComponentRange(filePath, flavor);
    if (!mayBeSecret(filePath, start, end)) return null;
  }
  return matchSecretRules(filePath, flavor);
}

/**
 * `secretRuleFor(filePath)` when the caller has the path's last component, `name`, at hand (a walk's entry): the
 * screen reads only `name` (reading a freshly joined path string copies it).
 */
export function secretRuleForEntry(filePath: string, name: string, flavor: PathFlavor = HOST_FLAVOR): string | null {
  if (SCREEN && !mayBeSecret(name, 0, name.length)) return null;
  return matchSecretRules(filePath, flavor);
}

/** False when the component `s[start, end)` fails the screen (SCREEN): no rule can match a path ending in it. */
function mayBeSecret(s: string, start: number, end: number): boolean {
  if (!SCREEN) return true;
  if (end - start >= 2) {
    const a = s.charCodeAt(end - 2);
    const b = s.charCodeAt(end - 1);
    const first = s.charCodeAt(start);
    if (
      a < 0x80 &&
      b < 0x80 &&
      first < 0x80 &&
      !SCREEN.tails.has(pairKey(a, b)) &&
      !SCREEN.firsts.has(asciiLower(first))
    )
      return false;
  }
  const base = s.slice(start, end).toLowerCase();
  return (
    SCREEN.names.has(base) ||
    SCREEN.suffixes.some((x) => base.endsWith(x)) ||
    SCREEN.prefixes.some((x) => base.startsWith(x))
  );
}

/** The full rule match behind `secretRuleFor`, without the screen (exported so tests can compare the two). */
export function matchSecretRules(filePath: string, flavor: PathFlavor = HOST_FLAVOR): string | null {
  // Only the tail a rule can read (its depth in components): the cost does not grow with the path's depth.
  const parts = lastComponents(filePath, MAX_RULE_DEPTH, flavor.pathModule.sep === '\\' ? '\\/' : '/');
  if (parts.length === 0) return null;
  for (const { rule, depth, isMatch } of COMPILED_RULES) {
    if (parts.length < depth) continue;
    const tail = parts
      .slice(parts.length - depth)
      .join('/')
      .toLowerCase();
    if (rule.except?.includes(tail)) continue;
    if (isMatch(tail)) return rule.glob;
  }
  return null;
}

/** True when the path names a secret file (docs/security.md). */
export function isSecretPath(filePath: string, flavor: PathFlavor = HOST_FLAVOR): boolean {
  return secretRuleFor(filePath, flavor) !== null;
}

/**
 * Throws SECRET_DENIED when either the requested spelling or the resolved target is a secret name
 * (docs/security.md: "checked on the requested path and on the resolved target"), unless secrets are allowed.
 * @throws ToolError SECRET_DENIED
 */
export function assertNotSecret(requestedAbsolute: string, resolved: string, allowSecrets: boolean): void {
  if (allowSecrets) return;
  const rule = secretRuleFor(requestedAbsolute) ?? secretRuleFor(resolved);
  if (rule !== null) throw secretRefusal(requestedAbsolute, rule);
}

/** SECRET_DENIED for `requestedAbsolute`, a secret name matching the rule `rule`. */
export function secretRefusal(requestedAbsolute: string, rule: string): ToolError {
  return new ToolError('SECRET_DENIED', `${requestedAbsolute} is a secret file (matches ${rule}); access is denied.`, {
    path: requestedAbsolute,
    details: { pattern: rule },
  });
}

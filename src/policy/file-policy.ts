/**
 * The file security policy (docs/security.md): JSON rules with globs (micromatch dialect, matched in linear time by
 * src/fs/glob) relative to each root, each with an access
 * level, plus the built-in rules that are always on (no writes under `.git`; FIFOs, sockets and devices are never
 * opened). Loading an invalid file is a UsageError (exit 2). Evaluation is pure.
 */
import { readFileSync } from 'node:fs';
import { compileGlob, type GlobPredicate } from '../fs/glob/glob.js';
import { PatternTooComplexError } from '../fs/glob/engine.js';
import { z } from 'zod';
import { UsageError } from '../errors/usage-error.js';
import { ToolError } from '../errors/tool-error.js';
import { HOST_FLAVOR, type PathFlavor } from './containment.js';

/** Access levels, from least to most restrictive. */
export const ACCESS_LEVELS = ['read_only', 'hidden', 'deny'] as const;
export type Access = (typeof ACCESS_LEVELS)[number];

const PolicyFileSchema = z.strictObject({
  rules: z.array(
    z.strictObject({
      pattern: z.string().min(1),
      access: z.enum(ACCESS_LEVELS),
    }),
  ),
});

/** A parsed policy file. */
export type FilePolicy = z.infer<typeof PolicyFileSchema>;

/**
 * Reads and validates a policy file, e.g. `{"rules":[{"pattern":"secrets/**","access":"deny"}]}`.
 * @throws UsageError when the file is missing, not JSON, or not of that shape
 */
export function loadFilePolicy(file: string): FilePolicy {
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--policy: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    throw new UsageError(`--policy: ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = PolicyFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(`--policy: ${file}: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  for (const [index, rule] of parsed.data.rules.entries()) {
    // Compiled now (both cases), so a rule over the pattern limits stops start-up instead of failing a call later.
    try {
      ruleMatcher(rule.pattern, false);
      ruleMatcher(rule.pattern, true);
    } catch (error) {
      const shown = rule.pattern.length > 80 ? `${rule.pattern.slice(0, 80)}…` : rule.pattern;
      if (error instanceof PatternTooComplexError) {
        throw new UsageError(
          `--policy: ${file}: rules.${index}.pattern is too complex (pattern_too_complex: ${error.message}): '${shown}'`,
        );
      }
      throw new UsageError(`--policy: ${file}: invalid glob '${shown}'`);
    }
  }
  return parsed.data;
}

/**
 * The most restrictive access level the policy assigns to `relative` (a `/`-separated path relative to its root),
 * or null. A rule that matches a directory applies to everything beneath it.
 */
export function accessFor(policy: FilePolicy, relative: string, flavor: PathFlavor = HOST_FLAVOR): Access | null {
  if (policy.rules.length === 0 || relative === '') return null;
  const parts = relative.split('/');
  const candidates: string[] = [];
  for (let i = 1; i <= parts.length; i++) candidates.push(parts.slice(0, i).join('/'));
  let best: Access | null = null;
  for (const rule of policy.rules) {
    const isMatch = ruleMatcher(rule.pattern, flavor.caseInsensitive);
    if (candidates.some((candidate) => isMatch(candidate))) {
      if (best === null || ACCESS_LEVELS.indexOf(rule.access) > ACCESS_LEVELS.indexOf(best)) best = rule.access;
    }
  }
  return best;
}

/**
 * `accessFor(policy, relative)` when the access level of its parent directory (`relative` without its last
 * component) is already known: the most restrictive of `parentAccess` and the rules that match `relative` itself
 * (accessFor tests every leading part of the path, and those of the parent are the parent's). A walk knows its
 * directory's level once per directory (the entries of one directory share every candidate but the last).
 */
export function accessForEntry(
  policy: FilePolicy,
  relative: string,
  parentAccess: Access | null,
  flavor: PathFlavor = HOST_FLAVOR,
): Access | null {
  let best = parentAccess;
  for (const rule of policy.rules) {
    if (best !== null && ACCESS_LEVELS.indexOf(rule.access) <= ACCESS_LEVELS.indexOf(best)) continue;
    if (ruleMatcher(rule.pattern, flavor.caseInsensitive)(relative)) best = rule.access;
  }
  return best;
}

/**
 * Compiled rule globs (each compiled once: listings and search classify every entry of a tree, so compiling per call
 * made a policy cost seconds on large trees). Linear-time matching (src/fs/glob): a rule costs at most
 * O(path length × rule size) per candidate.
 * Not process state (test/architecture.test.ts allow list): a memo of a pure function, pattern → predicate.
 */
const RULE_MATCHERS = new Map<string, GlobPredicate>();

/** @throws PatternTooComplexError for a rule over the pattern limits (loadFilePolicy checks every rule at start-up) */
function ruleMatcher(pattern: string, nocase: boolean): GlobPredicate {
  const key = `${nocase ? 'i' : 's'}:${pattern}`;
  let isMatch = RULE_MATCHERS.get(key);
  if (!isMatch) {
    // A glob without any `/` matches a name at any depth (`*.log`, `secrets`), as in .gitignore and the listing
    // globs; a glob with a `/` (including a leading `/`) is anchored at the root.
    isMatch = compileGlob(rootRelativePattern(pattern), { nocase, basename: !pattern.includes('/') });
    RULE_MATCHERS.set(key, isMatch);
  }
  return isMatch;
}

/**
 * A rule's glob as the matcher needs it: relative to the root, no trailing `/`. Authors write directories the way
 * .gitignore and shells do (`/secrets`, `./secrets`, `secrets/`); as micromatch globs those match nothing, which would
 * silently leave the directory unprotected.
 */
function rootRelativePattern(pattern: string): string {
  const out = pattern.replace(/^(?:\.?\/)+/, '').replace(/\/+$/, '');
  return out === '' ? '**' : out;
}

/** What the caller intends to do with a path. */
export type Intent = 'read' | 'write';

/**
 * Applies the policy's verdict for `intent`.
 * @throws ToolError FILE_POLICY_DENIED (deny; read_only on write), NOT_FOUND (hidden)
 */
export function assertPolicyAllows(access: Access | null, intent: Intent, absolute: string, relative: string): void {
  if (access === 'deny') {
    throw new ToolError('FILE_POLICY_DENIED', `The file policy denies access to ${absolute}.`, {
      path: absolute,
      details: { source: 'policy', rule: 'deny', relative },
    });
  }
  if (access === 'hidden') {
    throw new ToolError('NOT_FOUND', 'No such file or directory.', { path: absolute });
  }
  if (access === 'read_only' && intent === 'write') {
    throw new ToolError('FILE_POLICY_DENIED', `The file policy makes ${absolute} read-only.`, {
      path: absolute,
      details: { source: 'policy', rule: 'read_only', relative },
    });
  }
}

/**
 * Code points HFS+ ignores in names (git's `is_hfs_dotgit`, utf8.c): `.g\u200cit` is `.git` on a Mac volume.
 */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * True when a name is `.git` as some filesystem git may meet sees it (git's `is_ntfs_dotgit` and `is_hfs_dotgit`):
 * any case, HFS+-ignored code points, NTFS trailing dots and spaces, an NTFS stream suffix (`.git::$INDEX_ALLOCATION`),
 * and the 8.3 short name `git~1`. On a case-sensitive Linux filesystem some of these are other names; refusing them
 * costs nothing, and a tree is often shared with a Mac or Windows checkout.
 */
export function isDotGitName(name: string): boolean {
  let n = name.toLowerCase().replace(HFS_IGNORED, '');
  const stream = n.indexOf(':');
  if (stream >= 0) n = n.slice(0, stream);
  n = n.replace(/[. ]+$/, '');
  return n === '.git' || n === 'git~1';
}

/** True when any component of the path is `.git` in any spelling (isDotGitName): docs/security.md's built-in write protection. */
export function isInsideGitDir(absolute: string, flavor: PathFlavor = HOST_FLAVOR): boolean {
  return absolute.split(flavor.pathModule.sep === '\\' ? /[\\/]+/ : /\/+/).some((c) => isDotGitName(c));
}

/**
 * Built-in rule: nothing under a `.git` directory may be written by the file tools (a written hook is code execution).
 * @throws ToolError FILE_POLICY_DENIED with details.source "builtin"
 */
export function assertNotGitInternal(requestedAbsolute: string, resolved: string): void {
  if (isInsideGitDir(requestedAbsolute) || isInsideGitDir(resolved)) throw gitInternalRefusal(requestedAbsolute);
}

/** FILE_POLICY_DENIED (builtin, rule git_dir) for `requestedAbsolute`, a path with a `.git` component. */
export function gitInternalRefusal(requestedAbsolute: string): ToolError {
  return new ToolError(
    'FILE_POLICY_DENIED',
    `Writing inside a .git directory is never allowed (${requestedAbsolute}).`,
    {
      path: requestedAbsolute,
      details: { source: 'builtin', rule: 'git_dir' },
    },
  );
}

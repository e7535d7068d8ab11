/**
 * Whole-tree operations carry every entry's rules (docs/security.md, "Whole-tree operations"): moving, copying or
 * deleting a directory is authorized as the same operation on every entry it carries, at the old place and at the
 * new one. The one policy decision for a tree is `authorizeTreeEntries`; each entry is judged by the per-path rules
 * every single-path call passes (`assertPathAllowed` in src/policy/authorize.ts: built-in guards, secret names, the
 * `.git` rule, execution-bearing configuration, the file policy), so a rule added there holds for the entries of a
 * tree too; and by the git-directory guard for trees (`treeGitGuard`: a git directory carried inside the tree, a
 * hooks directory at either place). The caller walks the tree (src/fs/tree-ops.ts `inspectTree`, through verified
 * descriptors) and hands each entry over; the judge reads only the tops' ancestors (the hooks directories that apply
 * there), once, when it is made.
 */
import { ToolError } from '../errors/tool-error.js';
import { assertEntryAllowed, assertPathAllowed, type PolicyContext } from './authorize.js';
import { findContainingRoot, isWithin, toPosixRelative } from './containment.js';
import { accessFor, accessForEntry, isDotGitName, isInsideGitDir, type Access, type Intent } from './file-policy.js';
import { ownComponentOf } from '../fs/own-files.js';
import { treeGitGuard } from './git-dirs.js';
import type { ResolvedPath } from './resolve-path.js';

/** The operations that carry a whole tree. */
export type TreeOperation = 'move' | 'copy' | 'delete';

/** Most offending entries one refusal names (`details.entries`); `details.more` says when there were more. */
export const MAX_NAMED_ENTRIES = 10;

/** One entry of the walked tree, in pre-order (a directory before what it holds). */
export interface TreeEntry {
  /** Relative to the top of the tree, `/`-separated. */
  relative: string;
  isDirectory: boolean;
}

/** One offending entry as a refusal names it. */
export interface NamedEntry {
  /** The entry's absolute path at that side (its old place, or where it would land). */
  path: string;
  side: 'source' | 'destination';
  /** `secret`, `read_only`, `root` (another root inside the tree), or a built-in rule (`git_dir`, …). */
  kind: string;
}

/** The judge of one tree operation (see `authorizeTreeEntries`). */
export interface TreeJudge {
  /**
   * Judges one entry at every place it has. Every entry is judged, whatever the walk's order; entries beneath a
   * refused directory are not named or counted (the directory is named). An entry that must not be named (hidden,
   * denied, guarded) is remembered, and the answer is false: the walk must not look inside it (its contents do not
   * change the verdict), but goes on with the rest, so that a cap the walk reaches later answers the same whether a
   * protected name sorts before or after the cap's entry (docs/security.md "Whole-tree operations").
   * @returns false when the entry was refused without a name (do not descend into it), else true
   */
  entry(e: TreeEntry): boolean;
  /**
   * After the walk: refuses the whole operation when any entry was refused — with the generic refusal, naming
   * nothing, when any entry must not be named.
   * @throws ToolError FILE_POLICY_DENIED (reason tree_entries) or SECRET_DENIED (reason secret_inside)
   */
  assertAllowed(): void;
}

/** One spelling of one side's top directory: its absolute path and its path relative to its root. */
interface Spelling {
  absolute: string;
  relative: string;
  /**
   * The other roots that lie strictly inside `absolute` in this spelling (real paths). An entry at or beneath one of
   * them is judged relative to the deepest such root, as a single-path call on it is (rules are relative to the
   * nearest root: src/policy/containment.ts `findContainingRoot`), and the root itself is an entry no move or delete
   * may carry.
   */
  nested: string[];
  /** The policy level of each directory on the walk's current branch, by depth (0: the top). */
  levels: Array<Access | null>;
  /**
   * True when no component of `absolute` is of a class judged component by component (a `.git` spelling, one of the
   * server's own files): each entry is then judged by its own name only (`assertEntryAllowed`), since every
   * component between the top and it was judged as an entry before it. Otherwise (a top that was refused already)
   * each entry gets the whole-path check.
   */
  clean: boolean;
}

interface Side {
  name: 'source' | 'destination';
  intent: Intent;
  spellings: Spelling[];
}

/**
 * Built-in guards whose paths listings omit (src/policy/builtin-guards.ts): never named, like `hidden`. The server's
 * own files (locks and temporaries, src/fs/own-files.ts) are one class here as in listings: a temporary's name tells
 * which file was being written (a `..env.fs-tools-*.tmp` holds a secret's bytes).
 */
const UNLISTED_BUILTIN_RULES = new Set(['state_dir', 'audit_log', 'lock_file', 'own_temporary']);

/**
 * The spellings a path is judged in, as `policyAccess` judges a single path: its resolved place, and the spelling
 * that was asked for when it differs and lies in a root (a link above it must neither carry entries out of a
 * protected directory nor into one).
 */
function spellingsOf(ctx: PolicyContext, place: ResolvedPath): Spelling[] {
  const nestedIn = (top: string) =>
    ctx.roots.map((r) => r.real).filter((real) => real.length > top.length && isWithin(top, real));
  const relative = toPosixRelative(place.root.real, place.real);
  const out: Spelling[] = [
    {
      absolute: place.real,
      relative,
      nested: nestedIn(place.real),
      levels: [accessFor(ctx.policy, relative)],
      clean: componentsClean(place.real),
    },
  ];
  if (place.absolute !== place.real) {
    const root =
      findContainingRoot(ctx.roots, place.absolute) ?? ctx.roots.find((r) => isWithin(r.given, place.absolute));
    if (root) {
      const base = isWithin(root.real, place.absolute) ? root.real : root.given;
      const asked = toPosixRelative(base, place.absolute);
      out.push({
        absolute: place.absolute,
        relative: asked,
        nested: nestedIn(place.absolute),
        levels: [accessFor(ctx.policy, asked)],
        clean: componentsClean(place.absolute),
      });
    }
  }
  return out;
}

/** True when no component of `absolute` is a `.git` spelling or one of the server's own files. */
function componentsClean(absolute: string): boolean {
  return !isInsideGitDir(absolute) && ownComponentOf(absolute) === null;
}

/** The deepest of `roots` (real paths) that holds `absolute` or is it, or null. */
function innermost(roots: readonly string[], absolute: string): string | null {
  let best: string | null = null;
  for (const root of roots) if ((!best || root.length > best.length) && isWithin(root, absolute)) best = root;
  return best;
}

/**
 * The one policy decision of a whole-tree operation: a `move` is a write of every entry at its old place (it goes
 * away) and at its new place (it appears); a `copy` is a read at the old place and a write at the new one; a
 * `delete` is a write at the old place. The top directory itself has passed the single-path authorization already;
 * this judges what it holds. Any entry that a single-path call of the same kind would refuse — a `deny`, `hidden` or
 * `read_only` rule (relative to the nearest root, also where another root lies inside the tree), a secret name (unless
 * secrets are allowed), a built-in guard, another root carried away or replaced — refuses the whole operation,
 * before anything is changed.
 *
 * The refusal names up to MAX_NAMED_ENTRIES offending entries (`details.entries`: path, side, kind), only of kinds a
 * listing shows (secrets, read_only, built-in rules like `git_dir`). An entry that listings omit — `hidden` or `deny`
 * by policy, or the state directory, audit log or one of the server's own files — is never named, at either side: once one is met the
 * refusal is the generic one (FILE_POLICY_DENIED, reason tree_entries, no entries, no rule), whatever else was met,
 * so the envelope tells nothing about which entry, or which rule.
 * @param destination the new place of the top (null for a delete)
 */
export function authorizeTreeEntries(
  ctx: PolicyContext,
  operation: TreeOperation,
  source: ResolvedPath,
  destination: ResolvedPath | null,
): TreeJudge {
  return new TreeEntriesJudge(ctx, operation, source, destination);
}

/**
 * The offence of one entry at one place, judged by the per-path rules (null: allowed), or 'unnamed' when the entry
 * must not be named (hidden, denied by policy, or a built-in guard listings omit). A directory's policy level is kept
 * in `spelling.levels` for the entries beneath it.
 * @throws whatever the rules throw other than their refusals (a programming error)
 */
function judgePlace(
  ctx: PolicyContext,
  side: Side,
  spelling: Spelling,
  e: TreeEntry,
  name: string,
  depth: number,
  belowGitDir: boolean,
): { kind: string; source: string } | 'unnamed' | null {
  const absolute = `${spelling.absolute}/${e.relative}`;
  const nestedRoot = spelling.nested.length > 0 ? innermost(spelling.nested, absolute) : null;
  let relative: string;
  let access: Access | null;
  if (nestedRoot !== null) {
    // Beneath another root: its own rules, from that root (the walk's levels are those of the top's root).
    relative = toPosixRelative(nestedRoot, absolute);
    // A root is neither moved nor deleted, nor replaced by what a move or copy brings (authorizeWrite: is_root).
    if (relative === '' && side.intent === 'write') return { kind: 'root', source: 'builtin' };
    access = accessFor(ctx.policy, relative);
  } else {
    relative = spelling.relative === '' ? e.relative : `${spelling.relative}/${e.relative}`;
    access = ctx.policy.rules.length > 0 ? accessForEntry(ctx.policy, relative, spelling.levels[depth - 1]) : null;
  }
  if (e.isDirectory) spelling.levels[depth] = access;
  try {
    const place = { absolute, real: absolute, relative, access };
    if (spelling.clean) assertEntryAllowed(ctx, side.intent, place, name, belowGitDir);
    else assertPathAllowed(ctx, side.intent, place);
    return null;
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    if (error.code === 'NOT_FOUND') return 'unnamed'; // hidden
    if (error.code === 'SECRET_DENIED') return { kind: 'secret', source: 'secret' };
    if (error.code !== 'FILE_POLICY_DENIED') throw error;
    const rule = typeof error.details.rule === 'string' ? error.details.rule : 'policy';
    const from = typeof error.details.source === 'string' ? error.details.source : 'policy';
    if (from === 'policy' && rule === 'deny') return 'unnamed';
    if (from === 'builtin' && UNLISTED_BUILTIN_RULES.has(rule)) return 'unnamed';
    return { kind: rule, source: from };
  }
}

/** The judge `authorizeTreeEntries` makes: the state of one walk's verdicts. */
class TreeEntriesJudge implements TreeJudge {
  private readonly sides: Side[];
  /** Git directories carried inside the tree, and hooks directories at either place (src/policy/git-dirs.ts). */
  private readonly git: ReturnType<typeof treeGitGuard>;
  private readonly named: NamedEntry[] = [];
  private offending = 0;
  private allSecrets = true;
  private first: { source: string; rule: string } | null = null;
  /** Depth of the shallowest refused directory on the current branch (its entries are not judged); 0: none. */
  private refusedDepth = 0;
  /** True once an entry that must not be named was met: the refusal is then the generic one. */
  private unnamed = false;
  /**
   * Depth of the shallowest directory on the current branch whose name is a `.git` spelling; 0: none. Its entries
   * are still walked, and the `.git` rule refuses each of them as the whole-path check does (`assertEntryAllowed`).
   */
  private gitDepth = 0;

  constructor(
    private readonly ctx: PolicyContext,
    private readonly operation: TreeOperation,
    private readonly source: ResolvedPath,
    destination: ResolvedPath | null,
  ) {
    this.sides = [
      { name: 'source', intent: operation === 'copy' ? 'read' : 'write', spellings: spellingsOf(ctx, source) },
    ];
    if (destination) {
      this.sides.push({ name: 'destination', intent: 'write', spellings: spellingsOf(ctx, destination) });
    }
    this.git = treeGitGuard(
      ctx,
      [source, ...(destination ? [destination] : [])].map((p) => ({ absolute: p.absolute, real: p.real })),
    );
  }

  entry(e: TreeEntry): boolean {
    let depth = 1;
    for (let i = e.relative.indexOf('/'); i !== -1; i = e.relative.indexOf('/', i + 1)) depth++;
    const name = e.relative.slice(e.relative.lastIndexOf('/') + 1);
    if (this.refusedDepth !== 0 && depth <= this.refusedDepth) this.refusedDepth = 0;
    if (this.gitDepth !== 0 && depth <= this.gitDepth) this.gitDepth = 0;
    const belowGitDir = this.gitDepth !== 0;
    // Every entry is judged, also beneath a refused directory and past the named ones: the answer must not depend
    // on the order of the walk (which the agent steers with the names it writes), or whether a hidden or denied
    // entry sorts before or after other offenders would tell its name.
    const beneathRefused = this.refusedDepth !== 0;
    let refused = false;
    const gitOffence = this.git(
      e.relative,
      this.sides.map((side) => `${side.spellings[0].absolute}/${e.relative}`),
    );
    for (const [index, side] of this.sides.entries()) {
      let offence: { kind: string; source: string } | null = null;
      for (const spelling of side.spellings) {
        const verdict = judgePlace(this.ctx, side, spelling, e, name, depth, belowGitDir);
        if (verdict === 'unnamed') {
          this.unnamed = true;
          return false;
        }
        offence ??= verdict;
      }
      if (!offence && gitOffence?.top === index) offence = { kind: gitOffence.rule, source: 'builtin' };
      if (!offence || beneathRefused) continue;
      refused = true;
      this.count(side, e, offence);
    }
    if (refused && e.isDirectory) this.refusedDepth = depth;
    if (e.isDirectory && !belowGitDir && isDotGitName(name)) this.gitDepth = depth;
    return true;
  }

  /** Counts one offending entry at one side, naming it while fewer than MAX_NAMED_ENTRIES are named. */
  private count(side: Side, e: TreeEntry, offence: { kind: string; source: string }): void {
    this.offending++;
    if (offence.kind !== 'secret') {
      this.allSecrets = false;
      this.first ??= { source: offence.source, rule: offence.kind };
    }
    if (this.named.length < MAX_NAMED_ENTRIES) {
      this.named.push({ path: `${side.spellings[0].absolute}/${e.relative}`, side: side.name, kind: offence.kind });
    }
  }

  assertAllowed(): void {
    if (this.unnamed) throw this.refusal(true);
    if (this.offending > 0) throw this.refusal(false);
  }

  /** The refusal of the whole operation: generic when an entry must not be named, else naming the offenders. */
  private refusal(unnamed: boolean): ToolError {
    const operation = this.operation;
    const what = operation === 'move' ? 'moved' : operation === 'copy' ? 'copied' : 'deleted';
    const top = this.source.absolute;
    if (unnamed) {
      return new ToolError(
        'FILE_POLICY_DENIED',
        `${top} holds entries this ${operation} may not carry; nothing was ${what}.`,
        {
          path: top,
          details: { source: 'policy', reason: 'tree_entries', operation },
          suggestion: `Only a tree whose every entry may be ${what} is ${what} as a whole.`,
        },
      );
    }
    const lead = this.named[0];
    const more = this.offending > this.named.length;
    const message =
      `${top} holds entries this ${operation} may not carry (${lead.path}: ${lead.kind}` +
      `${this.offending > 1 ? `, and ${this.offending - 1} more` : ''}); nothing was ${what}.`;
    const details: Record<string, unknown> = {
      reason: this.allSecrets ? 'secret_inside' : 'tree_entries',
      operation,
    };
    if (!this.allSecrets) Object.assign(details, { source: this.first!.source, rule: this.first!.rule });
    details.entries = this.named.map((n) => ({ ...n }));
    if (more) details.more = true;
    return new ToolError(this.allSecrets ? 'SECRET_DENIED' : 'FILE_POLICY_DENIED', message, {
      path: lead.path,
      details,
    });
  }
}

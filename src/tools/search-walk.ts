/**
 * search_files, step 1 of 3 (walk → match → page; issue #20): which entries a search visits, in walk order, and what
 * the walk skipped before each of them (SPEC §6.1). A directory is walked by the shared walker (src/fs/walk.ts:
 * deterministic order, .gitignore, no symlinks followed, policy-hidden and denied entries left out); a single file is
 * a walk of one entry. This file changes when what a search visits, or how its skips are counted, changes.
 */
import { walkTree, type WalkItem } from '../fs/walk.js';
import { policyWalkFilter, type AuthorizedPath, type PolicyContext } from '../policy/authorize.js';
import { HOST_FLAVOR } from '../policy/containment.js';

/** The walk's own skip reasons, counted per yielded entry. */
export const WALK_SKIPS = ['policy', 'unreadable', 'too_deep', 'name_too_long'] as const;

/** Walk skips by reason (entries or directories). */
export type WalkSkipCounts = Readonly<Record<(typeof WALK_SKIPS)[number], number>>;

/** The skips of an entry with none before it (shared by most entries: compare by identity). */
export const NO_SKIPS: WalkSkipCounts = Object.freeze({ policy: 0, unreadable: 0, too_deep: 0, name_too_long: 0 });

/** Where a page resumes, from the cursor: at a file (inclusive) or after one (exclusive); null: from the start. */
export type WalkResume = { components: readonly string[]; inclusive: boolean } | null;

/** What a search walks over. */
export interface SearchWalk {
  /** Entries in walk order (files, directories, links; the caller picks the files it wants). */
  items: AsyncIterable<WalkItem>;
  /**
   * The skips since the previous call (the skips before the entry the walk just yielded), reset to zero; NO_SKIPS
   * itself when there were none.
   */
  takeSkips(): WalkSkipCounts;
  /** `.gitignore` lines not applied because they exceed the pattern limits, so far. */
  ignoreRules(): number;
}

/** Options of `searchWalk`. */
export interface SearchWalkOptions {
  /** The authorized file or directory searched. */
  target: AuthorizedPath;
  policy: PolicyContext;
  respectGitignore: boolean;
  include?: readonly string[];
  exclude?: readonly string[];
  resume: WalkResume;
  signal: AbortSignal;
}

/** An async source of exactly one item (a search over a single file). */
function oneItem<T>(item: T): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      let given = false;
      return {
        next: (): Promise<IteratorResult<T>> => {
          const result: IteratorResult<T> = given ? { done: true, value: undefined } : { done: false, value: item };
          given = true;
          return Promise.resolve(result);
        },
      };
    },
  };
}

/**
 * The entries a search visits below (or at) `target`, with skip accounting: policy-denied entries and directories
 * the walk could not read, was not allowed to descend (depth 64) or whose path is too long are counted, hidden ones
 * are not (they behave as absent, SPEC §4.3).
 */
export function searchWalk(o: SearchWalkOptions): SearchWalk {
  const pending = { policy: 0, unreadable: 0, too_deep: 0, name_too_long: 0 };
  let ignoreRules = 0;
  const takeSkips = (): WalkSkipCounts => {
    if (pending.policy + pending.unreadable + pending.too_deep + pending.name_too_long === 0) return NO_SKIPS;
    const taken = { ...pending };
    for (const k of WALK_SKIPS) pending[k] = 0;
    return taken;
  };
  const target = o.target;
  const items = target.stats.isFile()
    ? oneItem<WalkItem>({
        relative: target.real.split(/[\\/]/).pop()!,
        absolute: target.real,
        rootRelative: target.relative,
        type: 'file',
        depth: 1,
      })
    : walkTree({
        base: target.real,
        rootReal: target.root.real,
        maxDepth: 64,
        respectGitignore: o.respectGitignore,
        include: o.include,
        exclude: o.exclude,
        resume: o.resume,
        filter: policyWalkFilter(o.policy, () => pending.policy++),
        onSkip: (reason) => {
          if (reason === 'ignore_rule') ignoreRules++;
          else if (reason !== 'policy') pending[reason]++;
        },
        depthIsLimit: true,
        signal: o.signal,
        nocase: HOST_FLAVOR.caseInsensitive,
        // Types from the directory listing are all search needs: no per-entry lstat (sizes come from each open).
        stats: false,
      });
  return { items, takeSkips, ignoreRules: () => ignoreRules };
}

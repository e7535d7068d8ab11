/**
 * search_files, step 1 of 3 (walk → match → page): which entries a search visits, in walk order, and what
 * the walk skipped before each of them (docs/tools.md). A directory is walked by the shared walker (src/fs/walk.ts:
 * deterministic order, .gitignore, no symlinks followed, policy-hidden and denied entries left out); a single file is
 * a walk of one entry. This file changes when what a search visits, or how its skips are counted, changes.
 */
import path from 'node:path';
import { walkInto, type WalkItem, type WalkOptions } from '../fs/walk.js';
import { policyWalkFilter, type AuthorizedPath, type PolicyContext } from '../policy/authorize.js';
import { childOf } from '../policy/resolve-path.js';
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
  /**
   * Walks, handing each entry, its last path component and its directory's absolute path to `sink` in walk order
   * (files, directories, links; the caller picks the files it wants), right where the walk reaches it; `false` (or a
   * promise of it) from the sink stops the walk, a promise pauses it until it settles (no async-iteration step per
   * entry). Resolves when the walk is done or stopped; rejects with what the sink threw.
   */
  run(sink: WalkSink): Promise<void>;
  /**
   * The skips since the previous call (the skips before the entry the walk just yielded), reset to zero; NO_SKIPS
   * itself when there were none.
   */
  takeSkips(): WalkSkipCounts;
  /** `.gitignore` lines not applied because they exceed the pattern limits, so far. */
  ignoreRules(): number;
}

/** What a search's walk hands each entry to (SearchWalk.run): false (or a promise of it) stops the walk. */
export type WalkSink = (item: WalkItem, name: string, parent: string) => boolean | Promise<boolean>;

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

/**
 * The entries a search visits below (or at) `target`, with skip accounting: policy-denied entries and directories
 * the walk could not read, was not allowed to descend (depth 64) or whose path is too long are counted, hidden ones
 * are not (they behave as absent, docs/security.md).
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
  const walkOptions: WalkOptions & { stats: false } = {
    base: target.real,
    rootReal: target.root.real,
    childOf,
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
  };
  const run = async (sink: WalkSink): Promise<void> => {
    if (target.stats.isFile()) {
      // A single file is a walk of one entry.
      const name = target.real.split(/[\\/]/).pop()!;
      await sink(
        { relative: name, absolute: target.real, rootRelative: target.relative, type: 'file', depth: 1 },
        name,
        path.dirname(target.real),
      );
      return;
    }
    await walkInto(walkOptions, sink);
  };
  return { run, takeSkips, ignoreRules: () => ignoreRules };
}

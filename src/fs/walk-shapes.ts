/**
 * The objects the directory walker (src/fs/walk.ts) builds for every walk, directory and entry, made so that each
 * has one V8 map whoever called the walk and whether or not the walk's code is optimized yet: the walk's per-entry code then stays optimized from a server's first
 * calls on (docs/benchmarks.md, names-only listing). This file changes when WalkOptions or WalkItem gain a field.
 */
import type { AllowedPath } from '../policy/resolve-path.js';
import type { SpecialType, WalkBaseOptions, WalkEntry, WalkItem, WalkOptions, WalkType, WalkVisitor } from './walk.js';
import type { IgnoreLevel } from './walk-scan.js';

/**
 * WalkOptions with every field set, in one order: one V8 map for the options of every caller (list_directory,
 * search_files, replace plans), where each caller's own literal (fields present or absent, in its order) had a map of
 * its own and the walk's per-entry reads of them went polymorphic or deoptimized when another caller's came by. The
 * filter and sink are a WalkVisitor's methods.
 */
export class WalkSettings {
  readonly base: AllowedPath;
  readonly rootReal: string;
  readonly maxDepth: number;
  readonly respectGitignore: boolean;
  readonly include: readonly string[] | undefined;
  readonly exclude: readonly string[] | undefined;
  readonly resume: NonNullable<WalkOptions['resume']> | null;
  readonly childOf: WalkOptions['childOf'];
  readonly onSkip: WalkOptions['onSkip'];
  readonly signal: AbortSignal | undefined;
  readonly nocase: boolean;
  readonly stats: boolean;
  readonly depthIsLimit: boolean;
  readonly trace: WalkTrace | null;

  /**
   * @param visitor where the walk asks about each entry and hands it
   * @param hasSink true: entries go to `visitor.sink` (and the walk yields nothing); false: they are yielded
   */
  constructor(
    o: WalkBaseOptions,
    readonly visitor: WalkVisitor,
    readonly hasSink: boolean,
  ) {
    this.base = o.base;
    this.rootReal = o.rootReal;
    this.maxDepth = o.maxDepth;
    this.respectGitignore = o.respectGitignore;
    this.include = o.include;
    this.exclude = o.exclude;
    this.resume = o.resume ?? null;
    this.childOf = o.childOf;
    this.onSkip = o.onSkip;
    this.signal = o.signal;
    this.nocase = o.nocase ?? false;
    this.stats = o.stats !== false;
    this.depthIsLimit = o.depthIsLimit ?? false;
    this.trace = o.trace ?? null;
  }
}

/**
 * What a walk's outcome depended on besides its options and the policy (WalkOptions.trace), for a caller that keeps
 * the outcome and must know when it is still valid (src/tools/list-memo.ts): the text of every `.gitignore` the walk
 * read, in order (null where one was looked for and not applied: absent, not a regular file, over the cap,
 * unreadable), the identity of the base directory's listing, and whether it went below the base. One class, one V8
 * map.
 */
export class WalkTrace {
  /** Every `.gitignore` looked for, in the walk's order (the root's down to the base's): its text, or null. */
  readonly ignoreTexts: (string | null)[] = [];
  /**
   * The base directory's identity (src/fs/listing-cache.ts `listingIdentity`) when its listing is proven to be its
   * entries under that identity (not racy, the same fstat before and after the listing was taken); null otherwise.
   */
  baseKey: string | null = null;
  /** Whether the base's own `.gitignore` was looked for (its listing names one of d_type regular file). */
  baseIgnoreTried = false;
  /** Subdirectories the walk tried to open (0: the outcome depends on the base's listing alone). */
  descents = 0;
}

/** The WalkVisitor of a walk given functions (WalkOptions.filter and .sink). */
export class FunctionVisitor implements WalkVisitor {
  constructor(
    private readonly filterFn: WalkOptions['filter'],
    private readonly sinkFn: WalkOptions['sink'],
  ) {}

  filter(absolute: string, rootRelative: string, name: string): 'ok' | 'omit' {
    return this.filterFn(absolute, rootRelative, name);
  }

  sink(item: WalkItem | WalkEntry, name: string, parent: string): boolean | Promise<boolean> {
    return this.sinkFn!(item, name, parent);
  }
}

/**
 * An entry without stats (WalkItem): one class, so every item of every walk has one V8 map (`special` is always a
 * field, undefined for the four common types and when the listing does not say), where the literals with and
 * without `special` were two.
 */
export class PlainItem implements WalkItem {
  constructor(
    readonly relative: string,
    readonly absolute: AllowedPath,
    readonly rootRelative: string,
    readonly type: WalkType,
    readonly special: SpecialType | undefined,
    readonly depth: number,
  ) {}
}

/*
 * The two arrays below are built by push onto `[]`, never by a spread or `map`: those made arrays of another elements
 * kind (another V8 map) once walkDir was optimized than while it was interpreted, so isIgnored, which reads them per
 * entry, was deoptimized for "wrong map" in a server's first calls and compiled again.
 */

/** `levels` and then `level`, as a new array. */
export function withLevel(levels: readonly IgnoreLevel[], level: IgnoreLevel): IgnoreLevel[] {
  const next: IgnoreLevel[] = [];
  for (let i = 0; i < levels.length; i++) next.push(levels[i]);
  next.push(level);
  return next;
}

/** The directory `rootRel` as each .gitignore level sees it (GitignoreRules.testEntry), once per directory. */
export function ignoreDirsOf(levels: readonly IgnoreLevel[], rootRel: string): string[] {
  const dirs: string[] = [];
  for (let i = 0; i < levels.length; i++) {
    const d = levels[i].dir;
    dirs.push(d === '' ? rootRel : rootRel.slice(d.length + 1));
  }
  return dirs;
}

/**
 * list_directory (docs/tools.md): entries of a directory tree up to `depth`, in deterministic order, paged with a cursor.
 * Symlinks are reported as links (never descended), with their target's type only when the target is inside the
 * roots. Secret names are shown and marked; policy-hidden and denied entries are omitted; .gitignore is honoured by
 * default.
 */
import {
  globMatcher,
  probeWalk,
  walkWith,
  type WalkBaseOptions,
  type WalkEntry,
  type WalkItem,
  type WalkVisitor,
} from '../fs/walk.js';
import { patternBudget } from '../fs/glob/glob.js';
import { authorizeRead, linkTargetKind, WalkEntryClassifier, type PolicyContext } from '../policy/authorize.js';
import { childOf } from '../policy/resolve-path.js';
import { HOST_FLAVOR } from '../policy/containment.js';
import { decodeCursor, encodeCursor, queryFingerprint } from './cursor.js';
import type { z } from 'zod';
import { defineTool } from './define-tool.js';
import { ListPage } from './list-page.js';
import { listPageMemo } from './list-memo.js';
import { WalkTrace } from '../fs/walk-shapes.js';
import { ListDirectoryInput, ListDirectoryOutput, ListPosition } from './list-schema.js';

/** Default page of a `long` listing (at most --max-list-entries): entries, each an object with size and mtime. */
export const LONG_PAGE_ENTRIES = 1000;

export const listDirectory = defineTool({
  name: 'list_directory',
  title: 'List directory',
  description:
    'List a directory in stable order: a file as its path, a directory as path/; links (not followed), secrets, ' +
    'other kinds and long (size, mtime) as objects. .gitignore respected. Paged ' +
    '(next_cursor). Fails on a file (VALIDATION).',
  group: 'fs-read',
  input: ListDirectoryInput,
  output: ListDirectoryOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => [a.path],
  // A heavy call: the server runs it through the heavy-call queue (src/tools/heavy-calls.ts).
  heavy: () => ['walk'],
  async run(args, ctx) {
    const fingerprint = queryFingerprint([
      'list_directory',
      args.path,
      args.depth,
      args.include,
      args.exclude,
      args.respect_gitignore,
    ]);
    // Where the page resumes: after this entry (the last one the previous page returned).
    const resumeAfter = args.cursor ? decodeCursor(args.cursor, fingerprint, ListPosition).after : null;
    // Patterns are arguments: one over the limits is VALIDATION (pattern_too_complex) before any path is looked at.
    const patterns = patternBudget();
    globMatcher(args.include, HOST_FLAVOR.caseInsensitive, 'include', patterns);
    globMatcher(args.exclude, HOST_FLAVOR.caseInsensitive, 'exclude', patterns);
    const target = await authorizeRead(args.path, ctx.policy, { kind: 'directory' });
    // A names-and-types page holds up to --max-list-entries (10,000) entries, one call for most directories; a long
    // one defaults to LONG_PAGE_ENTRIES (its entries are objects, three times the bytes).
    const most = ctx.config.limits.maxListEntries;
    const pageSize = Math.min(args.max_entries ?? (args.long ? Math.min(LONG_PAGE_ENTRIES, most) : most), most);
    // A names-and-types page whose inputs are all unchanged is the kept one (src/tools/list-memo.ts); `long` pages
    // show sizes and times, which change without the directory changing, and are always built.
    const memoKey = args.long ? null : memoKeyOf(args, target.real, target.root.real, pageSize);
    const probeOptions = { base: target.real, rootReal: target.root.real, respectGitignore: args.respect_gitignore };
    const kept =
      memoKey === null ? null : listPageMemo().lookup(memoKey, ctx.policy, (tried) => probeWalk(probeOptions, tried));
    if (kept !== null) return { structured: kept.structured, text: kept.text, audit: { paths: [target.real] } };
    const page = new ListPage(pageSize);
    const trace = memoKey === null ? undefined : new WalkTrace();
    const walkOptions: WalkBaseOptions = {
      base: target.real,
      rootReal: target.root.real,
      childOf,
      maxDepth: args.depth,
      respectGitignore: args.respect_gitignore,
      include: args.include,
      exclude: args.exclude,
      resume: resumeAfter ? { components: resumeAfter.split('/'), inclusive: false } : null,
      onSkip: (reason) => page.skip(reason),
      signal: ctx.signal,
      nocase: HOST_FLAVOR.caseInsensitive,
      // Names and types come from the directory listing itself (d_type); only `long` lstats entries.
      stats: args.long,
      trace,
    };
    const visitor = new ListVisitor(page, new WalkEntryClassifier(ctx.policy), ctx.policy);
    await walkWith(walkOptions, visitor);
    if (!page.truncated) page.commitSkips();
    const nextCursor =
      page.truncated && page.lastPath !== undefined ? encodeCursor(fingerprint, { after: page.lastPath }) : null;
    const structured = {
      path: target.real,
      entries: page.entries,
      truncated: page.truncated,
      next_cursor: nextCursor,
      skipped: {
        unreadable: page.unreadable,
        name_too_long: page.nameTooLong,
        ...(page.tooDeep > 0 ? { too_deep: page.tooDeep } : {}),
        ...(page.ignoreRules > 0 ? { ignore_rules: page.ignoreRules } : {}),
      },
    };
    const text = page.text(nextCursor);
    // Kept only when nothing but what the memo checks went into it (no link's target, a walk not cancelled).
    if (memoKey !== null && trace !== undefined && !visitor.sawLink && walkOptions.signal?.aborted !== true) {
      listPageMemo().remember(memoKey, ctx.policy, trace, { structured, text }, page.entries);
    }
    return { structured, text, audit: { paths: [target.real] } };
  },
});

/**
 * The key of a names-and-types page in the page memo (src/tools/list-memo.ts): every argument that shapes the page or
 * its cursor (the path as given is in the cursor's fingerprint), what policy resolved the path to, and the page size.
 */
function memoKeyOf(args: z.infer<typeof ListDirectoryInput>, real: string, rootReal: string, pageSize: number): string {
  return JSON.stringify([
    args.path,
    real,
    rootReal,
    args.depth,
    args.include ?? null,
    args.exclude ?? null,
    args.respect_gitignore,
    pageSize,
    args.cursor ?? null,
  ]);
}

/**
 * What the listing's walk asks about each entry and where it puts it (a WalkVisitor: one class, so the walk calls the
 * same two functions call after call). `filter` omits what policy hides or denies; its verdict is kept for the sink,
 * which the walk calls right after it for the same entry, so an entry is classified once, not twice. `sink` adds the
 * entry to the page, synchronously for every entry but a symlink, whose target type is looked up first.
 */
class ListVisitor implements WalkVisitor {
  /** The entry `filter` judged last, and whether it is a secret. */
  private judged = '';
  private judgedSecret = false;
  /** Whether a symlink was handed to the page (its target's type is looked up outside the directory). */
  sawLink = false;

  constructor(
    private readonly page: ListPage,
    private readonly classifier: WalkEntryClassifier,
    private readonly policy: PolicyContext,
  ) {}

  filter(absolute: string, rootRelative: string, name: string): 'ok' | 'omit' {
    const c = this.classifier.classify(absolute, rootRelative, name);
    this.judged = absolute;
    this.judgedSecret = c === 'secret';
    return c === 'hidden' || c === 'denied' ? 'omit' : 'ok';
  }

  sink(entry: WalkItem | WalkEntry): boolean | Promise<boolean> {
    if ('stats' in entry ? entry.stats.isSymbolicLink() : entry.type === 'symlink') {
      this.sawLink = true;
      return linkTargetKind(this.policy, entry.absolute).then((kind) =>
        this.page.add(entry, this.isSecret(entry), kind),
      );
    }
    return this.page.add(entry, this.isSecret(entry));
  }

  private isSecret(entry: WalkItem | WalkEntry): boolean {
    if (this.judged === entry.absolute) return this.judgedSecret;
    return this.classifier.classify(entry.absolute, entry.rootRelative) === 'secret';
  }
}

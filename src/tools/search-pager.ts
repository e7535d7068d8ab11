/**
 * search_files, the loop of one page (walk → match → page, docs/tools.md): the walk's sink, which prepares each entry
 * as the walk reaches it (its skips taken, a wanted file handed to the reader threads) and pages the queue strictly in
 * walk order as far as the outcomes are there. This file changes when how the three steps are interleaved changes.
 */
import { ReadTicket } from '../fs/search-reader.js';
import { NO_MATCH_OUTCOME } from '../fs/search-reader-protocol.js';
import type { WalkItem } from '../fs/walk.js';
import { READ_AHEAD, type ContentMatch, type Loaded, type Started } from './search-match.js';
import type { SearchPage } from './search-page.js';
import { NO_SKIPS, type SearchWalk, type WalkSink, type WalkSkipCounts } from './search-walk.js';

/** What `pageEntries` works with. */
export interface PageEntriesOptions {
  walk: SearchWalk;
  content: ContentMatch | null;
  globMatch: ((relative: string) => boolean) | null;
  page: SearchPage;
  /** Date.now() past which the page stops (the call's time budget), ms since the epoch. */
  deadline: number;
}

/** How many wanted entries are paged between two looks at the clock (the call's time budget, 20 s). */
const CLOCK_EVERY = 64;

/** `EntryQueue`'s mark of a queued entry the search does not want (a directory, a link, a file the glob skips). */
const NOT_WANTED = Symbol('not wanted');

/**
 * The queue of entries between the walk and the page: a ring of READ_AHEAD slots in three arrays (no object per
 * entry): `head` is the next entry to page, `count` how many are queued. A slot's `started` is NOT_WANTED (not a file
 * the search wants), null (a wanted file with nothing to read: a glob search), or what content search started for it
 * (a ticket, or a known outcome).
 */
class EntryQueue {
  private readonly entries = new Array<WalkItem | undefined>(READ_AHEAD);
  private readonly skipsOf = new Array<WalkSkipCounts | undefined>(READ_AHEAD);
  private readonly startedOf = new Array<Started | null | typeof NOT_WANTED | undefined>(READ_AHEAD);
  private head = 0;
  private count = 0;
  /** Wanted entries to page before the clock is read again. */
  private sinceClock = 0;
  /** The page is full or out of time. */
  stopped = false;

  constructor(private readonly o: PageEntriesOptions) {}

  /** Pages a loaded candidate (content search). */
  private addLoaded(entry: WalkItem, loaded: Loaded): void {
    const page = this.o.page;
    if (loaded.kind === 'no_match') page.scannedWithoutMatch();
    else if (loaded.kind !== 'text') page.skippedFile(loaded.kind);
    else if (!page.addFileMatches(entry.relative, loaded.lines, loaded.hits)) this.stopped = true;
  }

  /**
   * Pages queued entries while their outcomes are at hand. Returns null when the queue is empty or the page stopped,
   * the head's ticket when its batch is not answered yet, or a promise (to be awaited before anything else is paged)
   * when the head is being read on this thread.
   */
  pageReady(): ReadTicket | Promise<void> | null {
    const { page } = this.o;
    while (this.count > 0 && !this.stopped) {
      // The head entry, taken off the queue once its outcome is at hand (no object per entry).
      const head = this.head;
      const started = this.startedOf[head]!;
      const outcome = started instanceof ReadTicket ? started.outcome : undefined;
      if (outcome === undefined && started instanceof ReadTicket) return started;
      const entry = this.entries[head]!;
      page.beforeEntry(this.skipsOf[head]!);
      this.entries[head] = undefined;
      this.skipsOf[head] = undefined;
      this.startedOf[head] = undefined;
      this.head = head + 1 === READ_AHEAD ? 0 : head + 1;
      this.count--;
      if (started === NOT_WANTED) continue;
      // The clock is read for the first wanted entry, every CLOCK_EVERY after it (the budget is 20 s), and for the
      // first after one whose outcome took work on this thread (below).
      if (this.sinceClock-- === 0) {
        this.sinceClock = CLOCK_EVERY - 1;
        if (Date.now() > this.o.deadline) {
          page.stopAt(entry.relative);
          this.stopped = true;
          return null;
        }
      }
      if (started === null) {
        if (!page.addFile(entry.relative)) this.stopped = true;
        continue;
      }
      page.commitSkips();
      if (outcome === NO_MATCH_OUTCOME) {
        // The common outcome, paged without a Loaded in between.
        page.scannedWithoutMatch();
        continue;
      }
      const loaded = outcome !== undefined ? this.o.content!.finish(entry, outcome) : (started as Loaded);
      if (loaded instanceof Promise) {
        // Work on this thread (a file read or matched here: up to the per-file regex limit): the clock is read again
        // for the next wanted entry, so a page overruns its budget by one such file at most, as when it was read for
        // every entry.
        this.sinceClock = 0;
        return loaded.then((l) => this.addLoaded(entry, l));
      }
      this.addLoaded(entry, loaded);
    }
    return null;
  }

  /**
   * Pages until fewer than `room` entries are queued (1: all of them), waiting where it must; `next` is what the last
   * `pageReady` returned (a promise there must be awaited before anything else is paged). False once stopped.
   */
  async drain(room: number, next: ReadTicket | Promise<void> | null): Promise<boolean> {
    for (;;) {
      if (this.stopped) return false;
      if (next === null) return true;
      if (next instanceof Promise) await next;
      else if (this.count >= room) await next.wait();
      else return true;
      next = this.pageReady();
    }
  }

  /** The walk's sink (see `pageEntries`). */
  sink(entry: WalkItem, name: string, parent: string): boolean | Promise<boolean> {
    const { walk, content, globMatch, page } = this.o;
    const skips = walk.takeSkips();
    const wanted = entry.type === 'file' && (globMatch === null || globMatch(entry.relative));
    if (!wanted && (this.count === 0 || skips === NO_SKIPS)) {
      // Nothing queued ahead of it, or nothing to page (no skips before it): paged at once.
      page.beforeEntry(skips);
      return true;
    }
    const at = this.head + this.count;
    const tail = at < READ_AHEAD ? at : at - READ_AHEAD;
    this.entries[tail] = entry;
    this.skipsOf[tail] = skips;
    this.startedOf[tail] = !wanted ? NOT_WANTED : content !== null ? content.start(entry, name, parent) : null;
    this.count++;
    const next = this.pageReady();
    if (this.stopped) return false;
    if (next === null || (!(next instanceof Promise) && this.count < READ_AHEAD)) return true;
    return this.drain(READ_AHEAD, next);
  }
}

/**
 * The walk's sink for one page (this was an async generator of read-ahead over the walk's own, a promise
 * and an iterator step per entry at each level): each entry is prepared as the walk reaches it (its skips taken, a
 * wanted file handed to the reader threads) and queued; the queue is paged in walk order as far as the outcomes are
 * there. The walk goes on while the head waits for its batch, up to READ_AHEAD entries queued (a glob search queues
 * none: it has nothing to read); then, or when the head must be read on this thread, the walk waits for the page.
 * The sink returns false (the walk stops) once the page is full or out of time; after the walk, `drain` pages what is
 * still queued.
 */
export function pageEntries(o: PageEntriesOptions): {
  sink: WalkSink;
  drain: () => Promise<void>;
} {
  const queue = new EntryQueue(o);
  return {
    sink: (entry, name, parent) => queue.sink(entry, name, parent),
    drain: async () => {
      await queue.drain(1, queue.pageReady());
    },
  };
}

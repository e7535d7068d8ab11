/**
 * What the content-search reader threads and the main thread say to each other (src/fs/search-reader.ts is the main
 * thread's side, src/fs/search-reader-worker.ts the threads'): the outcome of reading one candidate, the per-search
 * options, the batch and regular-expression job messages and their compact encoding, and the shared progress record
 * the watchdog reads. Structured-clonable values only.
 */
import type { LineHit } from './match-lines.js';
import type { LineReplacement } from './replace-lines.js';

/**
 * What reading one candidate found. `text`: a text file passed to the caller to match (no `match` in the options);
 * `hits`: a file with matching lines (with `match`); `deferred`: a candidate over keepMaxBytes, for the caller to read;
 * `fallback`: not read here (no worker), for the caller to read; `regex_timeout`: the expression ran out of time.
 */
export type ReadOutcome =
  | { kind: 'too_large' | 'unreadable' | 'binary' | 'no_match' | 'deferred' | 'fallback' | 'regex_timeout' }
  | { kind: 'text'; bytes: Uint8Array }
  | { kind: 'hits'; bytes: Uint8Array; hits: LineHit[] };

/** The per-search settings a worker needs (structured-clonable). */
export interface ReaderOptions {
  /** Real paths of the sandbox roots: the opened file must lie in one (the /proc/self/fd re-check). */
  roots: ReadonlyArray<{ real: string }>;
  /** Larger files are `too_large` (--max-search-file-bytes). */
  maxFileBytes: number;
  /** Larger candidates are `deferred` instead of returned. */
  keepMaxBytes: number;
  /** Bytes every matching line contains (null: every text file is a candidate). */
  needle: Uint8Array | null;
  /**
   * Bytes of which every matching line contains one (LineMatcher.anyOf; null: none known): a candidate holding none
   * of them is `no_match` undecoded, and only the lines holding one are tested (absent: none known).
   */
  anyOf?: Uint8Array[] | null;
  /**
   * A number of this search, unique in the process (set by the pool's `session`, src/fs/search-reader.ts; below
   * 2^32, never 0): content summaries are built only in directories an earlier search read
   * (native/fs_tools_native_summary.c). Absent: every run counts as its own search.
   */
  search?: number;
  /** Match lines here (`hits`), with this expression; `bounded`: a user regex under the per-file time limit. */
  match: { source: string; flags: string; bounded: boolean } | null;
}

/** Slots of a worker's progress record (Int32Array over shared memory): the batch or job it is on, */
export const P_BATCH = 0;
/** the index of the file in that batch (0 for a job), */
export const P_INDEX = 1;
/** and ms since the pool's epoch when the current file or job started (0: idle). */
export const P_STARTED = 2;
/** Int32 slots of a progress record. */
export const PROGRESS_SLOTS = 3;

/** Session options a worker keeps (older ones are dropped; their batches are long answered). */
export const WORKER_SESSIONS = 8;

/**
 * The message to a worker: a batch of one session's files in one string (`files`, BatchRuns' encoding: one string
 * clones far faster than an array of them, posting batches was 14 % of a search's main thread), and the session's
 * options the first time this worker sees the session.
 */
export interface BatchRequest {
  id: number;
  session: number;
  options?: ReaderOptions;
  files: string;
}

/** The files of one directory in a batch: its absolute path, its entries' names, the batch index of the first. */
export interface BatchRun {
  parent: string;
  names: string[];
  first: number;
}

/**
 * A batch's files as runs of one directory (the walk hands over a directory's files together), encoded in one
 * string: NUL-separated tokens (no path or name holds a NUL), where an empty token (no entry name is empty) says that
 * the next token is a directory, the parent of the names after it. Each directory's path is written once per run,
 * not once per file, and the names are the listing's own strings (no joined path built per file, nor taken apart
 * again by the reader thread).
 */
export class BatchRuns {
  private parts: string[] = [];
  private parent: string | null = null;
  /** Files added since the last `take`. */
  count = 0;

  /** Adds the entry `name` of the directory `parent` (absolute). */
  add(parent: string, name: string): void {
    if (parent !== this.parent) {
      this.parts.push('', parent);
      this.parent = parent;
    }
    this.parts.push(name);
    this.count++;
  }

  /** The encoded batch, and a fresh start. */
  take(): string {
    const files = this.parts.join('\0');
    this.parts = [];
    this.parent = null;
    this.count = 0;
    return files;
  }
}

/**
 * The runs of an encoded batch (BatchRuns), in order, and how many files it holds (numbered across runs from 0). A
 * name before any directory (a malformed string) is counted but in no run: the caller answers it `fallback`.
 */
export function batchRuns(files: string): { runs: BatchRun[]; count: number } {
  const tokens = files.split('\0');
  const runs: BatchRun[] = [];
  let run: BatchRun | null = null;
  let count = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (token === '') {
      if (i + 1 >= tokens.length) break;
      run = { parent: tokens[++i], names: [], first: count };
      runs.push(run);
      continue;
    }
    run?.names.push(token);
    count++;
  }
  return { runs, count };
}

/**
 * A worker's answer: one kind code per file, in order (KIND_CODES), and for the files with bytes (`text`, `hits`) their
 * index, bytes (transferred) and hits.
 */
export interface BatchReply {
  id: number;
  kinds: string;
  found: Array<{ index: number; bytes: Uint8Array; hits?: LineHit[] }>;
}

/**
 * A regular-expression job on one text (search on the main thread's path, replace_in_files): the matching lines of
 * `text` under (`source`, `flags`), or with `replace` every match replaced (src/fs/replace-lines.ts: a result over
 * `maxChars` UTF-16 code units, or of more than `maxCount` matches, is not built). Always under the per-file time
 * limit.
 */
export interface RegexJobRequest {
  id: number;
  job: {
    source: string;
    flags: string;
    text: string;
    replace?: { replacement: string; maxChars: number; maxCount: number };
  };
}

/** A worker's answer to a RegexJobRequest: the lines, the replacement, or what running it threw (a message). */
export interface RegexJobReply {
  id: number;
  lines?: LineHit[];
  replaced?: LineReplacement;
  error?: string;
}

/** One character per outcome kind in BatchReply.kinds. */
export const KIND_CODES = {
  too_large: 'L',
  unreadable: 'U',
  binary: 'B',
  no_match: 'N',
  deferred: 'D',
  fallback: 'F',
  regex_timeout: 'R',
  text: 'T',
  hits: 'H',
} as const satisfies Record<ReadOutcome['kind'], string>;
const KIND_OF_CODE = new Map<string, ReadOutcome['kind']>(
  Object.entries(KIND_CODES).map(([kind, code]) => [code, kind as ReadOutcome['kind']]),
);

/** The outcomes without bytes, one frozen object per kind, shared by every file with that outcome. */
const PLAIN_OUTCOMES = new Map<string, ReadOutcome>(
  (['too_large', 'unreadable', 'binary', 'no_match', 'deferred', 'fallback', 'regex_timeout'] as const).map((kind) => [
    KIND_CODES[kind],
    Object.freeze({ kind }),
  ]),
);
/** PLAIN_OUTCOMES by the char code of their kind code (no string made or hashed per file). */
const PLAIN_BY_CHAR: ReadonlyArray<ReadOutcome | undefined> = Array.from({ length: 128 }, (_, c) =>
  PLAIN_OUTCOMES.get(String.fromCharCode(c)),
);
const FALLBACK = PLAIN_OUTCOMES.get(KIND_CODES.fallback)!;
/** The outcome of every file without a matching line (`ReplyOutcomes` answers this one object: compare by identity). */
export const NO_MATCH_OUTCOME = PLAIN_OUTCOMES.get(KIND_CODES.no_match)!;

/**
 * A worker's reply read file by file, as the page consumes it (no array of outcomes built per batch): `at(i)` is the
 * outcome of file i, `fallback` for anything missing or malformed; the outcomes with bytes are made once, at the first
 * `at` that needs one, so `at(i)` is the same object each time.
 */
export class ReplyOutcomes {
  private readonly kinds: string;
  private withBytes: Map<number, ReadOutcome> | null = null;

  constructor(private readonly reply: BatchReply) {
    this.kinds = typeof reply.kinds === 'string' ? reply.kinds : '';
  }

  /** The outcome of file `i` (0-based, in batch order). */
  at(i: number): ReadOutcome {
    if (i < this.kinds.length) {
      const plain = PLAIN_BY_CHAR[this.kinds.charCodeAt(i)];
      if (plain !== undefined) return plain;
    }
    this.withBytes ??= this.outcomesWithBytes();
    return this.withBytes.get(i) ?? FALLBACK;
  }

  /** The `text` and `hits` outcomes of the reply by file index (a kind code without its bytes is left out). */
  private outcomesWithBytes(): Map<number, ReadOutcome> {
    const out = new Map<number, ReadOutcome>();
    for (const f of Array.isArray(this.reply.found) ? this.reply.found : []) {
      const kind = KIND_OF_CODE.get(this.kinds[f.index] ?? '');
      if (kind === 'hits' && f.hits) out.set(f.index, { kind, bytes: f.bytes, hits: f.hits });
      else if (kind === 'text') out.set(f.index, { kind, bytes: f.bytes });
    }
    return out;
  }
}

/** The outcomes of a reply, in file order (`fallback` for anything missing or malformed). */
export function outcomesOf(reply: BatchReply, count: number): ReadOutcome[] {
  const outcomes = new ReplyOutcomes(reply);
  return Array.from({ length: count }, (_, i) => outcomes.at(i));
}

/**
 * Content search's verdict on a candidate's bytes, in a reader thread (docs/tools.md, search_files): binary, then the
 * query's required bytes, then the matching lines; and the regular-expression jobs the same threads run for the main
 * thread (a user regular expression's search on the main thread's path, replace_in_files), under the same per-file
 * time limit (the pool's watchdog, src/fs/search-reader.ts). Each thread keeps its compiled expressions in a
 * `CompiledRegexes` it owns (no module-level state).
 */
import { matchLines } from './match-lines.js';
import { replaceLines } from './replace-lines.js';
import type { ReaderOptions, ReadOutcome, RegexJobReply, RegexJobRequest } from './search-reader-protocol.js';
import { looksBinary } from './text.js';

/** How many compiled expressions a thread keeps (the cache is emptied when full). */
const COMPILED_MAX = 16;

/**
 * A thread's compiled regular expressions by flags and source, and the text of the last session needle (and required
 * set) it decoded.
 * Owned by one reader thread (`ReaderState`), or created per call where no state is kept.
 */
export class CompiledRegexes {
  private readonly compiled = new Map<string, RegExp>();
  private needleBytes: Uint8Array | null = null;
  private needle = '';
  private anyOfBytes: Uint8Array[] | null = null;
  private anyOf: string[] = [];

  /** The expression for (`source`, `flags`), compiled once. @throws SyntaxError when it does not compile */
  get(source: string, flags: string): RegExp {
    const key = `${flags}/${source}`;
    let re = this.compiled.get(key);
    if (!re) {
      if (this.compiled.size > COMPILED_MAX) this.compiled.clear();
      re = new RegExp(source, flags);
      this.compiled.set(key, re);
    }
    return re;
  }

  /** `needle` decoded as UTF-8 (cached for the last needle seen: one per search). */
  needleText(needle: Uint8Array): string {
    if (needle !== this.needleBytes) {
      this.needleBytes = needle;
      this.needle = Buffer.from(needle).toString('utf8');
    }
    return this.needle;
  }

  /** `anyOf` decoded as UTF-8 (cached for the last set seen: one per search). */
  anyOfText(anyOf: Uint8Array[]): string[] {
    if (anyOf !== this.anyOfBytes) {
      this.anyOfBytes = anyOf;
      this.anyOf = anyOf.map((b) => Buffer.from(b).toString('utf8'));
    }
    return this.anyOf;
  }
}

/** A byte-string test with Buffer#indexOf's verdict (`indexOf(needle) !== -1`). */
export type ContainsBytes = (haystack: Uint8Array, needle: Uint8Array) => boolean;

/** `ContainsBytes` by Buffer#indexOf (the JavaScript path; the addon's `contains` is several times faster on text). */
const indexOfContains: ContainsBytes = (haystack, needle) =>
  Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).indexOf(needle) !== -1;

/** True when `bytes` holds at least one of `anyOf`. */
function holdsAny(bytes: Buffer, anyOf: readonly Uint8Array[], contains: ContainsBytes): boolean {
  for (const b of anyOf) if (contains(bytes, b)) return true;
  return false;
}

/**
 * Content search's verdict on a file's bytes read by JavaScript: binary (the whole file: any prefix that looks binary
 * makes the whole file look binary, so a first look at 8 KiB gave the same verdict), then the required bytes, then
 * `matched` (the native path applies the first two in C, byte for byte the same). Never throws.
 */
export function classify(bytes: Buffer, options: ReaderOptions, regexes: CompiledRegexes): ReadOutcome {
  if (looksBinary(bytes, true)) return { kind: 'binary' };
  if (options.needle && bytes.indexOf(options.needle) === -1) return { kind: 'no_match' };
  return matched(bytes, options, regexes);
}

/**
 * What a text file holding the required bytes is: `text` (a copy) without `options.match`, else `hits` or `no_match`;
 * `deferred` when over keepMaxBytes; `fallback` when the expression throws while it runs. `bytes` may be a view of a
 * reused buffer: what is returned is a copy. Never throws.
 * @param contains the byte-string test of the required set (the native addon's `contains` where it is loaded)
 */
export function matched(
  bytes: Buffer,
  options: ReaderOptions,
  regexes: CompiledRegexes,
  contains: ContainsBytes = indexOfContains,
): ReadOutcome {
  // The required set (LineMatcher.anyOf): a file holding none of its strings has no matching line.
  if (options.anyOf && !holdsAny(bytes, options.anyOf, contains)) return { kind: 'no_match' };
  if (!options.match) {
    return bytes.length > options.keepMaxBytes ? { kind: 'deferred' } : { kind: 'text', bytes: new Uint8Array(bytes) };
  }
  let hits;
  try {
    const re = regexes.get(options.match.source, options.match.flags);
    // Every matching line holds the needle (LineMatcher.needle) and one string of the required set (anyOf): only
    // lines holding one of the set, else the needle, are tested.
    const literal = options.anyOf
      ? regexes.anyOfText(options.anyOf)
      : options.needle
        ? regexes.needleText(options.needle)
        : null;
    hits = matchLines(re, bytes.toString('utf8'), literal);
  } catch {
    // The expression threw while it ran (V8's backtracking stack overflows on a long line: RangeError). The thread
    // must live on (it serves every search and regular expression of the process): the caller reads the file and
    // runs the expression as a job, which answers the call's error.
    return { kind: 'fallback' };
  }
  if (hits.length === 0) return { kind: 'no_match' };
  if (bytes.length > options.keepMaxBytes) return { kind: 'deferred' };
  return { kind: 'hits', bytes: new Uint8Array(bytes), hits }; // a copy with its own ArrayBuffer (transferable)
}

/**
 * Runs one regular-expression job: every line of the text tested (matchLines), or every match replaced
 * (src/fs/replace-lines.ts `replaceLines`, with its bounds). @throws what compiling or running the expression throws
 */
export function runRegexJob(request: RegexJobRequest, regexes: CompiledRegexes): RegexJobReply {
  const { job } = request;
  const re = regexes.get(job.source, job.flags);
  if (!job.replace) return { id: request.id, lines: matchLines(re, job.text) };
  const { replacement, maxChars, maxCount } = job.replace;
  return { id: request.id, replaced: replaceLines(re, job.text, replacement, false, maxChars, maxCount) };
}

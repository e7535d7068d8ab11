/**
 * The optional native addon of content search: native/fs_tools_native.c, built by scripts/build-native.mjs
 * into dist/native/<platform>-<arch>/fs_tools_native.node and shipped in the package. It opens, checks and reads a
 * batch of files relative to one verified directory descriptor (openat, O_NOFOLLOW) and applies content search's
 * prefilter (binary verdict, required bytes) without a JavaScript call per syscall. src/fs/search-reader-read.ts uses it in
 * the reader threads when it loads, and its JavaScript path otherwise (the same outcomes: test/fs/native-reader.test.ts).
 *
 * The process loads it once, at start-up, from a private copy whose sha256 matches the digest recorded at build time
 * (src/fs/native-load.ts); a reader thread attaches to that already-loaded library (`attachNativeAddon`) and reads no
 * file. This module wraps the addon's one call in `nativeReadRun`, which grows the output buffer as needed and turns
 * codes into outcomes.
 */

/** The addon's exports (native/fs_tools_native.c). */
export interface NativeAddon {
  /** Interface version; this module uses NATIVE_ABI. */
  abi: number;
  /**
   * Reads `names[start..]` relative to `dirfd`; per file i writes [code, offset in out, length] to meta[3i..3i+2];
   * `names` is an array of single entry names, or (the fast form, no JavaScript call per name) the names packed by
   * `packNames` into a buffer of its own (not shared, apart from `out` and `meta`), every name checked before any open;
   * returns the index after the last file answered (a NEED_SPACE file stops the run). A text file is a candidate
   * when it holds `needle` (null: any) and one string of `anyOf` (a set packed by `packByteSet`; null or absent: no
   * such test), else no_match. With packed names, a file's content summary may answer instead of a read (the same
   * code; `contentSummaries`); `search` numbers the search the run belongs to (summaries are built only in
   * directories an earlier search read; absent or 0: every run counts as its own search).
   * @throws TypeError for a malformed argument or a name that is not one directory entry (nothing is opened then)
   */
  readFiles(
    dirfd: number,
    names: readonly string[] | Uint8Array,
    start: number,
    maxFileBytes: number,
    needle: Uint8Array | null,
    out: Uint8Array,
    meta: Float64Array,
    anyOf?: Uint8Array | null,
    search?: number,
  ): number;
  /** The binary test's verdict, true for text (for tests: it must equal `!looksBinary(bytes, true)`). */
  isText(bytes: Uint8Array): boolean;
  /** The required-bytes test (for tests: it must equal `Buffer#indexOf(needle) !== -1`). */
  contains(haystack: Uint8Array, needle: Uint8Array): boolean;
  /**
   * Per packed name i (`names`: each name's bytes and a NUL, in a buffer of its own apart from `out`), the entry of
   * `dirfd` not followed if a link, as `out[5i..5i+4]` = [kind (0 not stat'ed, 1 directory, 2 link, 3 other), dev, ino,
   * mtimeMs, ctimeMs] (the numbers fs.Stats gives); returns the number of names.
   * @throws TypeError for a malformed argument or a name that is not one directory entry (nothing is stat'ed then)
   */
  statEntries(dirfd: number, names: Uint8Array, out: Float64Array): number;
  /**
   * Per packed relative path i (entry names joined by `/`, each path's bytes and a NUL, in a buffer apart from `out`),
   * the kind of what it names under `dirfd`, its last component not followed, as `out[i]` (kinds as `statEntries`);
   * returns the number of paths.
   * @throws TypeError for a malformed argument or path (nothing is stat'ed then)
   */
  entryKinds(dirfd: number, paths: Uint8Array, out: Uint8Array): number;
  /**
   * The process's content summaries (native/fs_tools_native_summary.c; docs/tools.md "Content summaries"): `op` 0
   * reports, 1 turns them on, 2 off (dropping every entry), 3 drops every entry, 4 sets the bounds to at most
   * `entries` summaries and `bytes` of bitsets (capped at the compiled ones: 65,536 and 8 MiB; tests) and drops every
   * entry; returns [enabled (0/1), entries, bytes held, directories remembered, files answered by a summary,
   * summaries stored, times emptied] (the counts since the process started).
   * @throws TypeError for another op, or op 4 without entries >= 1 and bytes >= 0
   */
  contentSummaries(op: 0 | 1 | 2 | 3 | 4, entries?: number, bytes?: number): number[];
  /** A new inotify descriptor (non-blocking, close-on-exec), or -errno; the caller closes it. */
  watchInit(): number;
  /**
   * Adds a watch on the directory open at `dirfd` (through /proc/self/fd, no path resolved) to inotify `ifd`; its file
   * system's type (statfs f_type) in `out[0]`. Returns the watch descriptor (≥ 1) or -errno.
   * @throws TypeError for a malformed argument
   */
  watchDirectory(ifd: number, dirfd: number, out: Float64Array): number;
  /**
   * Reads inotify `ifd` until it is empty: `out[0]` the events read, `out[1]` 1 when one changes what is watched (a
   * directory made, moved or deleted, a watch gone, an unmount, an overflow). Returns 0, or -errno.
   * @throws TypeError for a malformed argument
   */
  watchDrain(ifd: number, out: Float64Array): number;
  /** 1 when the mount table changed since the last call on `fd` (/proc/self/mountinfo), 0 if not, -errno on failure. */
  mountsChanged(fd: number): number;
}

/**
 * The interface version this code expects (`abi` of the addon; 2: readFiles takes the required set `anyOf`; 3: it
 * takes packed names; 4: statEntries and entryKinds; 5: content summaries, `contentSummaries`; 6: the git status
 * reuse's watches).
 */
export const NATIVE_ABI = 6;

/**
 * A set of byte strings as `readFiles` takes it: each string as its length (4 bytes, little endian), then its bytes,
 * one after another, in one buffer of its own (never a view of Buffer's shared pool, which the output could overlap).
 */
export function packByteSet(set: readonly Uint8Array[]): Uint8Array {
  const packed = new Uint8Array(set.reduce((n, b) => n + 4 + b.length, 0));
  const view = new DataView(packed.buffer);
  let at = 0;
  for (const b of set) {
    view.setUint32(at, b.length, true);
    packed.set(b, at + 4);
    at += 4 + b.length;
  }
  return packed;
}

/** The addon's per-file codes. */
export const NATIVE_CODES = {
  candidate: 0,
  unreadable: 1,
  too_large: 2,
  binary: 3,
  no_match: 4,
  need_space: 5,
} as const;

/** The addon's exports when they have the expected shape and `abi`, else null. */
export function checkedNativeAddon(exports: unknown): NativeAddon | null {
  const addon = exports as Partial<NativeAddon> | null;
  if (!addon || addon.abi !== NATIVE_ABI || typeof addon.readFiles !== 'function') return null;
  return addon as NativeAddon;
}

/** The only shape of path a thread attaches to: a descriptor of this process (never a file by name). */
const LOADED_PATH = /^\/proc\/self\/fd\/\d+$/;

/**
 * Attaches this thread (a reader thread) to the addon the process loaded at start-up: `path` is
 * `LoadedNativeAddon.path` (src/fs/native-load.ts), a descriptor of the verified private copy, so the dynamic loader
 * finds the library already loaded under that name and no file is read. Null off Linux, for any other path, or when
 * the addon does not attach. Never throws.
 */
export function attachNativeAddon(path: string): NativeAddon | null {
  if (process.platform !== 'linux' || !LOADED_PATH.test(path)) return null;
  try {
    const module = { exports: {} as unknown };
    process.dlopen(module, path);
    return checkedNativeAddon(module.exports);
  } catch {
    return null;
  }
}

/** What a native run found for one file: a code other than need_space, and for a candidate its bytes. */
export type NativeResult = { code: 1 | 2 | 3 | 4 } | { code: 0; bytes: Buffer };

/** The results without bytes, one frozen object per code the addon answers with (no object per file). */
const PLAIN_RESULTS: Readonly<Record<number, NativeResult>> = Object.freeze({
  [NATIVE_CODES.unreadable]: Object.freeze({ code: NATIVE_CODES.unreadable }),
  [NATIVE_CODES.too_large]: Object.freeze({ code: NATIVE_CODES.too_large }),
  [NATIVE_CODES.binary]: Object.freeze({ code: NATIVE_CODES.binary }),
  [NATIVE_CODES.no_match]: Object.freeze({ code: NATIVE_CODES.no_match }),
});

/** The reusable buffers of one reader thread. */
export interface NativeBuffers {
  /** Candidates' bytes (grown to the largest file needed, at most the size cap). */
  out: Buffer;
  /** Three numbers per name. */
  meta: Float64Array;
  /** The names of a run, packed (`packNames`; grown as needed, its own memory: never Buffer's shared pool). */
  names: Buffer;
}

/** Fresh buffers: 256 KiB of output, room for `names` names. */
export function nativeBuffers(names = 256): NativeBuffers {
  return {
    out: Buffer.allocUnsafe(256 * 1024),
    meta: new Float64Array(3 * names),
    names: Buffer.allocUnsafeSlow(16 * 1024),
  };
}

/**
 * `names` as `readFiles` takes them packed: each name's UTF-8 bytes followed by one NUL, in `buffers.names` (grown
 * when they do not fit); returns the view of the packed bytes. A name holding `/` (or empty, `.`, `..`) is refused by
 * the addon before it opens anything.
 * @throws TypeError for a name holding NUL (packed, it would read as two names)
 */
export function packNames(names: readonly string[], buffers: NativeBuffers): Uint8Array {
  for (const name of names) if (name.includes('\0')) throw new TypeError('packNames: a name holds NUL');
  const joined = names.length === 0 ? '' : `${names.join('\0')}\0`;
  // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, 2 units, is 4).
  if (buffers.names.length < 3 * joined.length) buffers.names = Buffer.allocUnsafeSlow(3 * joined.length);
  const length = buffers.names.write(joined, 0, 'utf8');
  return buffers.names.subarray(0, length);
}

/**
 * Reads `names` (single entry names) in the directory `dirfd` natively and calls `each(index, result)` in order. A
 * candidate's `bytes` is a view of the shared output buffer, valid only during the call: copy what you keep. A file
 * that does not fit the output buffer makes it grow (to the file's size, at most `maxFileBytes`, which bounds what is
 * allocated) and the run resumes at that file; if the buffer cannot grow, that file is unreadable. `anyOf`: the
 * required set packed by `packByteSet` (a text file holding none of it is no_match; null: no such test). `search`: the
 * search's number (`ReaderOptions.search`; 0: none).
 * @throws TypeError from the addon for a name that is not one directory entry (nothing opened)
 */
export function nativeReadRun(
  addon: NativeAddon,
  dirfd: number,
  names: readonly string[],
  maxFileBytes: number,
  needle: Uint8Array | null,
  buffers: NativeBuffers,
  each: (index: number, result: NativeResult) => void,
  anyOf: Uint8Array | null = null,
  search = 0,
): void {
  if (buffers.meta.length < 3 * names.length) buffers.meta = new Float64Array(3 * names.length);
  // Packed once for the run (the addon reads them without a call per name; NEED_SPACE resumes in the same list).
  const packed = packNames(names, buffers);
  let start = 0;
  while (start < names.length) {
    const { out, meta } = buffers;
    const next = addon.readFiles(dirfd, packed, start, maxFileBytes, needle, out, meta, anyOf, search);
    for (let i = start; i < next; i++) {
      const code = meta[3 * i];
      if (code === NATIVE_CODES.candidate) {
        each(i, { code: 0, bytes: out.subarray(meta[3 * i + 1], meta[3 * i + 1] + meta[3 * i + 2]) });
      } else each(i, PLAIN_RESULTS[code]);
    }
    if (next >= names.length) return;
    // NEED_SPACE at `next`: at least its size, doubling so that a file growing between tries cannot loop for long.
    const needed = meta[3 * next + 2];
    try {
      buffers.out = Buffer.allocUnsafe(Math.min(Math.max(needed, 2 * out.length), Math.max(needed, maxFileBytes)));
    } catch {
      each(next, { code: NATIVE_CODES.unreadable });
      start = next + 1;
      continue;
    }
    start = next;
  }
}

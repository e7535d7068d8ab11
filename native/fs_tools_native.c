/*
 * fs-tools native reads for content search (issue #19): an N-API function, readFiles, that opens, checks and reads a
 * batch of files named relative to one verified directory descriptor, and applies the content-search prefilter (binary
 * verdict, required bytes) in C. It is the twin of the JavaScript path of src/fs/search-reader.ts (`readCandidate`),
 * which stays the fallback; test/fs/native-reader.test.ts compares the two on random trees.
 *
 * Security (README "Security model", "Native reads"):
 *  - a file is opened only as openat(dirfd, name, O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOCTTY): `dirfd` is the
 *    directory descriptor the caller opened and verified (its /proc/self/fd location equals the authorized path), so a
 *    directory swapped for a link afterwards cannot redirect the open; the final name is never followed if it is a
 *    link; a FIFO or device never blocks (O_NONBLOCK); the walk hands over only entries its listing says are regular
 *    files, a FIFO or directory swapped in since fails the read (ESPIPE, EISDIR), and every file whose bytes go back,
 *    that is judged binary, or that fills the read is proven a regular file of its size by statx, so no byte of
 *    anything but a regular file is returned and nothing past the cap is read but its first byte over it;
 *  - a name that is empty, ".", "..", or holds "/" or NUL is a hard failure (a thrown TypeError) before anything is
 *    opened: this function never resolves a path, only one directory entry;
 *  - nothing is allocated here: bytes go into the caller's buffer `out`; a file that does not fit stops the batch and
 *    reports the size it needs (never more than `maxFileBytes`, which the caller caps);
 *  - every descriptor opened is closed before the next file, on every path;
 *  - errors carry no file content and no path: a thrown message names only the argument that was wrong.
 *
 * The git view's stat batches (statEntries, entryKinds) are in fs_tools_native_stat.c, and the git status reuse's
 * watches (watchInit, watchDirectory, watchDrain, mountsChanged) in fs_tools_watch.c, under the same rules.
 *
 * Build: `cc -O2 -shared -fPIC -I<node headers> native/fs_tools_native.c native/fs_tools_native_stat.c
 * native/fs_tools_watch.c`
 * (scripts/build-native.mjs), node_api.h only (ABI-stable across Node versions).
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include "fs_tools_native.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Per-file codes in meta[3 * i] (src/fs/native-reader.ts NATIVE_CODES). */
enum {
  CODE_CANDIDATE = 0, /* a text file holding the required bytes: out[meta[3i+1] .. + meta[3i+2]] */
  CODE_UNREADABLE = 1,
  CODE_TOO_LARGE = 2,
  CODE_BINARY = 3,
  CODE_NO_MATCH = 4,
  CODE_NEED_SPACE = 5 /* out has too little room left: meta[3i+2] bytes are needed; the batch stops here */
};

/* Longest name read from JavaScript; anything longer is over NAME_MAX (255) anyway and unreadable without an open. */
#define NAME_BUF 1024

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* 1 when the 16 bytes at `p` are all in 0x01..0x7f (ASCII without NUL): as signed bytes, all greater than zero. */
#if defined(__SSE2__)
static inline __m128i ascii_no_nul16(const unsigned char *p) {
  return _mm_cmpgt_epi8(_mm_loadu_si128((const __m128i *)p), _mm_setzero_si128());
}
#endif

/*
 * 1 when the bytes are text as content search judges it (src/fs/text.ts looksBinary(bytes, true) is false): no NUL
 * byte, and UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates, nothing above U+10FFFF) — the verdict of
 * Node's buffer.isUtf8 (simdutf). One pass: 64 or 16 (SSE2) or 8 bytes at a time while they are ASCII without NUL
 * (one signed compare per 16 bytes tests both), then byte by byte through the rest of a UTF-8 sequence.
 */
static int text_no_nul(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
#if defined(__SSE2__)
    while (i + 64 <= n) {
      __m128i ab = _mm_and_si128(ascii_no_nul16(s + i), ascii_no_nul16(s + i + 16));
      __m128i cd = _mm_and_si128(ascii_no_nul16(s + i + 32), ascii_no_nul16(s + i + 48));
      if (_mm_movemask_epi8(_mm_and_si128(ab, cd)) != 0xffff) break;
      i += 64;
    }
    while (i + 16 <= n && _mm_movemask_epi8(ascii_no_nul16(s + i)) == 0xffff) i += 16;
#endif
    while (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if ((w & HIGHS) != 0 || ((w - ONES) & ~w & HIGHS) != 0) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = s[i];
    if (c == 0) return 0;
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t need;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return 0;
    }
    if (n - i - 1 < need) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k <= need; k++) {
      if (s[i + k] < 0x80 || s[i + k] > 0xbf) return 0;
    }
    i += need + 1;
  }
  return 1;
}

/* How common a byte is in source text (higher: more common); the rarest byte of a needle is searched with memchr. */
static int commonness(unsigned char c) {
  if (c == ' ' || c == 'e' || c == 't' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's' || c == 'r')
    return 9;
  if (c >= 'a' && c <= 'z') return 7;
  if (c == '\n' || c == '\t' || c == '.' || c == '(' || c == ')' || c == ';' || c == ',' || c == '"' || c == '\'')
    return 6;
  if (c == '_' || c == '=' || c == ':' || c == '/' || c == '{' || c == '}' || c == '-' || c == '*') return 5;
  if (c >= 'A' && c <= 'Z') return 4;
  if (c >= '0' && c <= '9') return 3;
  if (c < 0x80) return 2;
  return 1;
}

/*
 * memmem(h, hn, nd, nn) != NULL (Buffer#indexOf's verdict; an empty needle is everywhere), faster on text: for a
 * needle of up to RARE_MAX bytes, memchr for its rarest byte, then memcmp around it; once false candidates are more
 * than one in 16 bytes (after the first 64), memmem (linear) does the rest. So the work stays linear in the haystack:
 * at most (64 + hn / 16) × RARE_MAX bytes compared before memmem takes over, whatever the file and the needle.
 */
#define RARE_MAX 64
static int contains(const unsigned char *h, size_t hn, const unsigned char *nd, size_t nn) {
  if (nn == 0) return 1;
  if (hn < nn) return 0;
  if (nn > RARE_MAX) return memmem(h, hn, nd, nn) != NULL;
  size_t r = 0;
  for (size_t k = 1; k < nn; k++) {
    if (commonness(nd[k]) < commonness(nd[r])) r = k;
  }
  const unsigned char *p = h + r;
  const unsigned char *last = h + (hn - nn) + r; /* the last place the rare byte can be */
  size_t misses = 0;
  while (p <= last) {
    p = memchr(p, nd[r], (size_t)(last - p) + 1);
    if (p == NULL) return 0;
    if (memcmp(p - r, nd, nn) == 0) return 1;
    p++;
    if (++misses > 64 && misses * 16 > (size_t)(p - h)) {
      const unsigned char *from = p - r; /* every match starting before this was tested */
      return memmem(from, hn - (size_t)(from - h), nd, nn) != NULL;
    }
  }
  return 0;
}

/* The 4 bytes at `p` as a little-endian number. */
static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1 when `set` (n bytes) is a well-formed byte-string set: strings one after another, each its length (4 bytes, little
 * endian) then that many bytes, nothing left over. */
static int set_well_formed(const unsigned char *set, size_t n) {
  size_t at = 0;
  while (at < n) {
    if (n - at < 4) return 0;
    uint32_t len = le32(set + at);
    at += 4;
    if (len > n - at) return 0;
    at += len;
  }
  return 1;
}

/* 1 when `h` contains one string of the well-formed set `set` (`contains` per string, in order; an empty set: 0).
 * Every length is bounded as it is read (a string past the set's end ends the test: no_match), so no change to the set
 * after it was validated can make this read past it. */
static int contains_any(const unsigned char *h, size_t hn, const unsigned char *set, size_t n) {
  size_t at = 0;
  while (at + 4 <= n) {
    uint32_t len = le32(set + at);
    at += 4;
    if (len > n - at) return 0;
    if (contains(h, hn, set + at, len)) return 1;
    at += len;
  }
  return 0;
}

/* 1 when `name` (n bytes) is one directory entry name: not empty, ".", "..", and no "/" or NUL. */
int entry_name(const char *name, size_t n) {
  if (n == 0) return 0;
  if (n == 1 && name[0] == '.') return 0;
  if (n == 2 && name[0] == '.' && name[1] == '.') return 0;
  if (memchr(name, '/', n) != NULL) return 0;
  if (memchr(name, '\0', n) != NULL) return 0;
  return 1;
}

/* 1 when the byte ranges [a, a + an) and [b, b + bn) share a byte. */
int overlaps(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

/*
 * 1 when what readFiles writes shares no byte with another of its buffers: `out` (out_n bytes) none with meta (meta_n
 * doubles), the needle or the set; meta none with the needle or the set (a NULL buffer: not passed).
 */
static int buffers_apart(const void *out, size_t out_n, const void *meta, size_t meta_n, const void *needle,
                         size_t needle_n, const void *set, size_t set_n) {
  size_t meta_bytes = meta_n * sizeof(double);
  if (overlaps(out, out_n, meta, meta_bytes)) return 0;
  if (needle != NULL && (overlaps(out, out_n, needle, needle_n) || overlaps(meta, meta_bytes, needle, needle_n))) {
    return 0;
  }
  return set == NULL || !(overlaps(out, out_n, set, set_n) || overlaps(meta, meta_bytes, set, set_n));
}

napi_value throw_type(napi_env env, const char *message) {
  napi_throw_type_error(env, NULL, message);
  return NULL;
}

/* The bytes of a Uint8Array or Buffer argument (typed array of uint8 only). */
int bytes_of(napi_env env, napi_value v, unsigned char **data, size_t *length) {
  napi_typedarray_type type;
  size_t len;
  void *ptr;
  napi_value ab;
  size_t offset;
  if (napi_get_typedarray_info(env, v, &type, &len, &ptr, &ab, &offset) != napi_ok) return 0;
  if (type != napi_uint8_array) return 0;
  *data = (unsigned char *)ptr;
  *length = len;
  return 1;
}

/* bytes_of, for bytes the call tests and must not change under it: not in a SharedArrayBuffer (another thread could
 * write them meanwhile; napi_is_arraybuffer is false for a SharedArrayBuffer). */
int unshared_bytes_of(napi_env env, napi_value v, unsigned char **data, size_t *length) {
  napi_typedarray_type type;
  size_t len;
  void *ptr;
  napi_value ab;
  size_t offset;
  bool plain = false;
  if (napi_get_typedarray_info(env, v, &type, &len, &ptr, &ab, &offset) != napi_ok) return 0;
  if (type != napi_uint8_array || napi_is_arraybuffer(env, ab, &plain) != napi_ok || !plain) return 0;
  *data = (unsigned char *)ptr;
  *length = len;
  return 1;
}

/* What `read_files` reads with, fixed for one call (the buffers as taken after the last JavaScript that could run). */
struct read_args {
  int dirfd;
  double max_bytes;
  int has_needle;
  unsigned char *needle;
  size_t needle_len;
  int has_set;
  unsigned char *set;
  size_t set_len;
  unsigned char *out;
  size_t out_len;
  /* Content summaries: looked up before each open and kept after each read (packed names only; 0: off). */
  int summarize;
  struct summary_query query;
};

/*
 * The verdict on a text's `filled` bytes at `dst`: CODE_BINARY (looksBinary(bytes, true) of src/fs/text.ts: a NUL byte,
 * or not UTF-8), CODE_NO_MATCH (it holds neither the needle nor, when there is a set, any string of it: matched()'s
 * holdsAny, src/fs/search-reader-match.ts; an empty needle is found everywhere, even in an empty file), else
 * CODE_CANDIDATE.
 */
static int judge(const struct read_args *a, const unsigned char *dst, size_t filled) {
  if (!text_no_nul(dst, filled)) return CODE_BINARY;
  if (a->has_needle && !contains(dst, filled, a->needle, a->needle_len)) return CODE_NO_MATCH;
  if (a->has_set && !contains_any(dst, filled, a->set, a->set_len)) return CODE_NO_MATCH;
  return CODE_CANDIDATE;
}

/* One read of at least this many bytes may have been cut by the kernel's per-call limit rather than the end of file. */
#define READ_CHUNK_MAX ((ssize_t)1 << 30)

/*
 * 1 when `fd` is a regular file, its size in *size. statx, not fstat: glibc exports fstat only from 2.33 (before, it
 * was an inline over __fxstat), so a binary calling fstat would not load on the older glibc Node 20 still supports
 * (2.28, where statx appeared).
 */
static int regular_size(int fd, uint64_t *size) {
  struct statx st;
  if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_SIZE, &st) != 0 ||
      (st.stx_mask & (STATX_TYPE | STATX_SIZE)) != (STATX_TYPE | STATX_SIZE) || !S_ISREG(st.stx_mode))
    return 0;
  *size = st.stx_size;
  return 1;
}

/*
 * Opens, checks and reads the one entry `name` (NUL-terminated, a single entry name) of `a->dirfd` into a->out at
 * *used, and writes its [code, offset, length] to m. Returns 1 when the file does not fit (NEED_SPACE: the run stops
 * there), else 0.
 */
static int read_one(const struct read_args *a, const char *name, double *m, size_t *used) {
  m[1] = 0;
  m[2] = 0;
  int store = 0;
  if (a->summarize) {
    /* A valid summary answers as the read would (fs_tools_native_summary.c): nothing is opened. */
    int known = summary_lookup(a->dirfd, name, &a->query, &store);
    if (known >= 0) {
      m[0] = known;
      return 0;
    }
  }
  int fd;
  do {
    fd = openat(a->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    m[0] = CODE_UNREADABLE;
    return 0;
  }
  /* Read first, stat only when needed (docs/security.md "Native reads for content search"): at most one byte over
   * the cap, into the room left in `out`. pread fails on what the walk's d_type and O_NOFOLLOW|O_NONBLOCK still let
   * through a race — a FIFO (ESPIPE), a directory (EISDIR); a socket or a link never opened — and a regular file comes
   * back short only at its end (the page cache fills a read whole), so a short read is the whole file. */
  unsigned char *dst = a->out + *used;
  size_t room = a->out_len - *used;
  size_t want = (double)room > a->max_bytes ? (size_t)a->max_bytes + 1 : room;
  ssize_t n;
  do {
    n = pread(fd, dst, want, 0);
  } while (n < 0 && errno == EINTR);
  /* Linux returns at most MAX_RW_COUNT (2 GiB less a page) from one read: a read that large is continued (a cap over
   * 2 GiB), not taken as the end of the file; a smaller short read is the end, as above. */
  while (n >= READ_CHUNK_MAX && (size_t)n < want) {
    ssize_t more = pread(fd, dst + n, want - (size_t)n, (off_t)n);
    if (more < 0 && errno == EINTR) continue;
    if (more < 0) n = more;
    if (more <= 0) break;
    n += more;
  }
  uint64_t size;
  /* A failed read of a regular file that reports size 0 (procfs: /proc/PID/mem, pagemap) is an empty file, as when
   * the size was read first: nothing of it was to be read. */
  if (n < 0 && !(regular_size(fd, &size) && size == 0)) {
    close(fd);
    m[0] = CODE_UNREADABLE;
    return 0;
  }
  if (n < 0) n = 0;
  size_t filled = (size_t)n;
  /* A full read may be a file over the cap or over the room left: its type and size decide, as a stat first would
   * have (its size is what is read: a file that reports less than it holds, as procfs does, is read as that much). */
  if (filled == want) {
    if (!regular_size(fd, &size)) {
      close(fd);
      m[0] = CODE_UNREADABLE;
      return 0;
    }
    if ((double)size > a->max_bytes) {
      close(fd);
      m[0] = CODE_TOO_LARGE;
      return 0;
    }
    if (size > room) {
      close(fd);
      m[0] = CODE_NEED_SPACE;
      m[2] = (double)size;
      return 1;
    }
    if (size < filled) filled = (size_t)size;
  }
  int verdict = judge(a, dst, filled);
  /* Bytes that go back to the caller, and a binary verdict (which a shorter size could change), are a regular
   * file's, proven now; a no-match verdict holds for every prefix of the bytes read, so it needs no size. */
  if ((verdict == CODE_CANDIDATE || verdict == CODE_BINARY) && n < (ssize_t)want) {
    if (!regular_size(fd, &size)) verdict = CODE_UNREADABLE;
    else if (size < filled) {
      filled = (size_t)size;
      verdict = judge(a, dst, filled);
    }
  }
  if (store && verdict != CODE_UNREADABLE) summary_store(fd, dst, filled, verdict == CODE_BINARY);
  close(fd);
  m[0] = verdict;
  if (verdict != CODE_CANDIDATE) return 0;
  m[1] = (double)*used;
  m[2] = (double)filled;
  *used += filled;
  return 0;
}

/*
 * The number of names in a packed list (each name's UTF-8 bytes followed by one NUL), or -1 when it is malformed: it
 * does not end with a NUL, or a name is not one directory entry name (empty, ".", "..", or holding "/").
 */
int64_t packed_count(const unsigned char *p, size_t n) {
  if (n > 0 && p[n - 1] != '\0') return -1;
  int64_t count = 0;
  size_t at = 0;
  while (at < n) {
    const unsigned char *nul = memchr(p + at, '\0', n - at);
    size_t len = (size_t)(nul - (p + at));
    if (!entry_name((const char *)p + at, len)) return -1;
    at += len + 1;
    count++;
  }
  return count;
}

/*
 * readFiles(dirfd, names, start, maxFileBytes, needle, out, meta[, anyOf[, search]]) → next
 *
 *   dirfd         int32 ≥ 0: a verified directory descriptor (the caller's; not closed here)
 *   names         string[]: single entry names, read from index `start`; or a Uint8Array (not shared, sharing no byte
 *                 with `out` or `meta`) of packed names: each name's UTF-8 bytes followed by one NUL, every name
 *                 checked before anything is opened (no JavaScript can run while they are read: the fast form)
 *   maxFileBytes  number: a regular file larger than this is TOO_LARGE (not read)
 *   needle        Uint8Array | null: bytes a candidate must contain (`contains`; null: every text file is a candidate)
 *   out           Uint8Array: candidates' bytes are placed one after another from offset 0
 *   meta          Float64Array, at least 3 × the number of names: per file i, [code, offset in out, length]
 *   anyOf         Uint8Array | null | absent: a set of byte strings of which a candidate must also contain one
 *                 (`contains_any`; src/fs/native-reader.ts `packByteSet`: each string as its length, 4 bytes little
 *                 endian, then its bytes; an empty set: no file is a candidate); absent or null: no such test
 *   search        uint32 | absent: the search this run belongs to, the same for all its runs (content summaries are
 *                 built only in directories an earlier search read: fs_tools_native_summary.c); absent or 0: none said
 *
 * Returns the index after the last file answered: the number of names, or the index of a NEED_SPACE file (not read,
 * its descriptor closed; the caller consumes the candidates, grows `out` and calls again from there).
 * Throws TypeError on a malformed argument or a name that is not a single entry name (before opening it).
 */
static napi_value read_files(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 7) {
    return throw_type(env, "readFiles: 7 to 9 arguments expected");
  }
  struct read_args a;
  if (napi_get_value_int32(env, argv[0], &a.dirfd) != napi_ok || a.dirfd < 0) {
    return throw_type(env, "readFiles: dirfd must be a descriptor");
  }
  bool is_array = false;
  uint32_t count;
  unsigned char *packed = NULL;
  size_t packed_len = 0;
  if (napi_is_array(env, argv[1], &is_array) != napi_ok) return throw_type(env, "readFiles: names");
  if (is_array) {
    if (napi_get_array_length(env, argv[1], &count) != napi_ok) return throw_type(env, "readFiles: names");
  } else {
    if (!unshared_bytes_of(env, argv[1], &packed, &packed_len)) {
      return throw_type(env, "readFiles: names must be an array or packed names (not shared)");
    }
    int64_t c = packed_count(packed, packed_len);
    if (c < 0) return throw_type(env, "readFiles: not a single directory entry name");
    if (c > UINT32_MAX) return throw_type(env, "readFiles: too many names");
    count = (uint32_t)c;
  }
  uint32_t start;
  if (napi_get_value_uint32(env, argv[2], &start) != napi_ok) {
    return throw_type(env, "readFiles: start must be an index");
  }
  if (napi_get_value_double(env, argv[3], &a.max_bytes) != napi_ok || !(a.max_bytes >= 0)) {
    return throw_type(env, "readFiles: maxFileBytes must be a number >= 0");
  }
  a.needle = NULL;
  a.needle_len = 0;
  napi_valuetype nt;
  if (napi_typeof(env, argv[4], &nt) != napi_ok) return throw_type(env, "readFiles: needle");
  a.has_needle = !(nt == napi_null || nt == napi_undefined);
  if (a.has_needle && !unshared_bytes_of(env, argv[4], &a.needle, &a.needle_len)) {
    return throw_type(env, "readFiles: needle must be a Uint8Array (not shared) or null");
  }
  if (!bytes_of(env, argv[5], &a.out, &a.out_len)) return throw_type(env, "readFiles: out must be a Uint8Array");
  napi_typedarray_type mt;
  size_t meta_len;
  void *meta_ptr;
  napi_value meta_ab;
  size_t meta_off;
  if (napi_get_typedarray_info(env, argv[6], &mt, &meta_len, &meta_ptr, &meta_ab, &meta_off) != napi_ok ||
      mt != napi_float64_array || meta_len / 3 < count) {
    return throw_type(env, "readFiles: meta must be a Float64Array of 3 per name");
  }
  double *meta = (double *)meta_ptr;
  /* argc is 8 when the caller passed anyOf: napi fills missing arguments with undefined. */
  a.set = NULL;
  a.set_len = 0;
  napi_valuetype st_type = napi_undefined;
  if (argc >= 8 && napi_typeof(env, argv[7], &st_type) != napi_ok) return throw_type(env, "readFiles: anyOf");
  a.has_set = !(st_type == napi_null || st_type == napi_undefined);
  if (a.has_set && (!unshared_bytes_of(env, argv[7], &a.set, &a.set_len) || !set_well_formed(a.set, a.set_len))) {
    return throw_type(env, "readFiles: anyOf must be a packed byte-string set (not shared) or null");
  }
  uint32_t search = 0;
  napi_valuetype search_type = napi_undefined;
  if (argc >= 9 && napi_typeof(env, argv[8], &search_type) != napi_ok) return throw_type(env, "readFiles: search");
  if (search_type != napi_undefined && napi_get_value_uint32(env, argv[8], &search) != napi_ok) {
    return throw_type(env, "readFiles: search must be a number");
  }
  /* Nothing the call writes (out, meta) may overlap another buffer: the output not what it is compared with or where
   * codes go, and meta not the needle or the set, which are tested after meta[1] and meta[2] of a file are zeroed (a
   * set over meta would change its lengths after it was validated, and be read past its end); nor packed names, which
   * were checked before the first write. */
  if (!buffers_apart(a.out, a.out_len, meta_ptr, meta_len, a.has_needle ? a.needle : NULL, a.needle_len,
                     a.has_set ? a.set : NULL, a.set_len) ||
      (packed != NULL && (overlaps(packed, packed_len, a.out, a.out_len) ||
                          overlaps(packed, packed_len, meta_ptr, meta_len * sizeof(double))))) {
    return throw_type(env, "readFiles: out or meta overlaps another buffer");
  }

  size_t used = 0;
  uint32_t i;
  a.summarize = 0;
  a.query = (struct summary_query){a.has_needle, a.needle, a.needle_len, a.has_set, a.set, a.set_len, a.max_bytes};
  if (packed != NULL) {
    /* Content summaries only for packed names: no JavaScript runs, so the needle and the set stay as checked. */
    a.summarize = summary_run_begin(a.dirfd, search) && summary_query_usable(&a.query);
    /* No JavaScript runs from here to the end: the buffers stay as taken and checked above. */
    size_t at = 0;
    for (i = 0; i < start && i < count; i++) at += strlen((const char *)packed + at) + 1;
    for (; i < count; i++) {
      const char *name = (const char *)packed + at;
      at += strlen(name) + 1;
      if (read_one(&a, name, meta + 3 * (size_t)i, &used)) break;
    }
  } else {
    for (i = start; i < count; i++) {
      napi_value v;
      napi_valuetype vt;
      if (napi_get_element(env, argv[1], i, &v) != napi_ok || napi_typeof(env, v, &vt) != napi_ok ||
          vt != napi_string) {
        return throw_type(env, "readFiles: names must be strings");
      }
      char name[NAME_BUF];
      size_t name_len;
      if (napi_get_value_string_utf8(env, v, name, sizeof name, &name_len) != napi_ok) {
        return throw_type(env, "readFiles: names must be strings");
      }
      if (!entry_name(name, name_len)) {
        return throw_type(env, "readFiles: not a single directory entry name");
      }
      /* napi_get_element can run JavaScript (an accessor on the array, or on Array.prototype for a hole), which can
       * detach or shrink the buffers and free their memory: take their addresses afresh after it, and stop when they
       * no longer hold what was promised (the bytes already placed, 3 numbers per name, the same needle). */
      size_t needle_now = 0;
      size_t set_now = 0;
      if ((a.has_needle && (!unshared_bytes_of(env, argv[4], &a.needle, &needle_now) || needle_now != a.needle_len)) ||
          (a.has_set && (!unshared_bytes_of(env, argv[7], &a.set, &set_now) || set_now != a.set_len ||
                         !set_well_formed(a.set, a.set_len))) ||
          !bytes_of(env, argv[5], &a.out, &a.out_len) || a.out_len < used ||
          napi_get_typedarray_info(env, argv[6], &mt, &meta_len, &meta_ptr, &meta_ab, &meta_off) != napi_ok ||
          meta_len / 3 < count ||
          !buffers_apart(a.out, a.out_len, meta_ptr, meta_len, a.has_needle ? a.needle : NULL, a.needle_len,
                         a.has_set ? a.set : NULL, a.set_len)) {
        return throw_type(env, "readFiles: a buffer changed during the call");
      }
      meta = (double *)meta_ptr;
      double *m = meta + 3 * (size_t)i;
      if (name_len > NAME_BUF - 8) {
        /* Possibly cut short; over NAME_MAX either way: ENAMETOOLONG without asking. */
        m[0] = CODE_UNREADABLE;
        m[1] = 0;
        m[2] = 0;
        continue;
      }
      if (read_one(&a, name, m, &used)) break;
    }
  }
  napi_value result;
  if (napi_create_uint32(env, i, &result) != napi_ok) return NULL;
  return result;
}

/* isText(bytes) → boolean: the binary test (true: not binary), exported so tests can compare it with looksBinary. */
static napi_value is_text_js(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  unsigned char *data;
  size_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      !bytes_of(env, argv[0], &data, &len)) {
    return throw_type(env, "isText: a Uint8Array expected");
  }
  napi_value result;
  if (napi_get_boolean(env, text_no_nul(data, len), &result) != napi_ok) return NULL;
  return result;
}

/* contains(haystack, needle) → boolean: the required-bytes test, exported so tests can compare it with indexOf. */
static napi_value contains_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  unsigned char *h, *nd;
  size_t hn, nn;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 || !bytes_of(env, argv[0], &h, &hn) ||
      !bytes_of(env, argv[1], &nd, &nn)) {
    return throw_type(env, "contains: two Uint8Arrays expected");
  }
  napi_value result;
  if (napi_get_boolean(env, contains(h, hn, nd, nn), &result) != napi_ok) return NULL;
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"readFiles", NULL, read_files, NULL, NULL, NULL, napi_enumerable, NULL},
      {"isText", NULL, is_text_js, NULL, NULL, NULL, napi_enumerable, NULL},
      {"contains", NULL, contains_js, NULL, NULL, NULL, napi_enumerable, NULL},
      {"statEntries", NULL, stat_entries, NULL, NULL, NULL, napi_enumerable, NULL},
      {"entryKinds", NULL, entry_kinds, NULL, NULL, NULL, napi_enumerable, NULL},
      {"contentSummaries", NULL, content_summaries, NULL, NULL, NULL, napi_enumerable, NULL},
      {"watchInit", NULL, watch_init, NULL, NULL, NULL, napi_enumerable, NULL},
      {"watchDirectory", NULL, watch_directory, NULL, NULL, NULL, napi_enumerable, NULL},
      {"watchDrain", NULL, watch_drain, NULL, NULL, NULL, napi_enumerable, NULL},
      {"mountsChanged", NULL, mounts_changed, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_value abi;
  if (napi_create_uint32(env, 6, &abi) != napi_ok) return NULL;
  napi_property_descriptor version = {"abi", NULL, NULL, NULL, NULL, abi, napi_enumerable, NULL};
  if (napi_define_properties(env, exports, 10, props) != napi_ok) return NULL;
  if (napi_define_properties(env, exports, 1, &version) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

/*
 * Content summaries of the native addon (docs/tools.md "Content summaries", docs/security.md "Native reads for content
 * search"): per regular file that content search read whole, what its bytes prove for any later search — the binary
 * verdict, or a Bloom bitset of its byte trigrams — kept in one table of the process (both reader threads see it), so
 * that a later search skips a file whose summary proves it cannot hold the query's required bytes: one statx of the
 * entry relative to the verified directory descriptor instead of openat + pread + close.
 *
 * Validity (git's racily-clean rule): an entry is keyed by the file's mount (its unique id), device, inode, size, mtime
 * and ctime in nanoseconds, all taken by statx of the open descriptor after the read, and kept only when the
 * descriptor is a regular file whose size is the number of bytes read and whose mtime and ctime were at least
 * SUMMARY_RACY_NS before the read ended. A change of the file's content through write, truncate, rename or link
 * after that gives it a new ctime, so a later statx differs and the file is read again; so does another file system
 * mounted in its place, any stat failure or a non-regular entry. Not seen, as by git's stat check and the read cache
 * (src/fs/content-cache.ts): a write through a shared mapping to a page already dirty, and one write(2) still running
 * across SUMMARY_RACY_NS (the kernel stamps a write when it starts) — docs/security.md "Content summaries". A summary only ever answers what reading the file would: binary (the same bytes are
 * binary), no match (a required string none of whose trigram sets is fully present cannot occur in the bytes), or
 * too large (the size, which is part of the key, is over the search's cap).
 *
 * Admission: summaries are built only in directories (device, inode of the verified descriptor) that an earlier search
 * read (readFiles' `search`: the same number for every run of one search, whichever thread reads it; 0: every run
 * counts as its own search), so a first search over a tree pays one statx per directory and nothing per file; building
 * a bitset costs about as much as the read itself, and is paid only where searches repeat.
 *
 * Bounds: the table holds at most SUMMARY_MAX_ENTRIES entries and SUMMARY_ARENA_BYTES of bitsets, and remembers at most
 * SUMMARY_MAX_DIRS directories; when one is full it is cleared whole (allocated once, lazily, freed never: the one
 * allocation of the addon, bounded). One spin lock guards it; the bitset is built outside it.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>

#include "fs_tools_native.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A file modified less than this before its read gets no summary: coarse timestamps, up to FAT's 2 s (a change after
 * the read then always gets a later stamp); src/policy/git-dirs-state.ts RACY_MS. */
#define SUMMARY_RACY_NS 2000000000LL
/* Files larger than this get no bitset (their trigrams would fill it); they are marked so and read every time. */
#define SUMMARY_MAX_FILE (64 * 1024)
/* The bitset is built at 2^BLOOM_LOG bits and folded in halves while it stays at most FILL_NUM/FILL_DEN full, down
 * to 2^BLOOM_MIN_LOG; a bitset fuller than that at 2^BLOOM_LOG bits is not kept (the file is marked unsummarized). */
#define BLOOM_LOG 14
#define BLOOM_MIN_LOG 10
#define FILL_NUM 5
#define FILL_DEN 8
/* Table bounds: entries, bitset bytes, remembered directories (powers of two for the open-addressed indexes). */
#define SUMMARY_MAX_ENTRIES 65536u
#define SUMMARY_ARENA_BYTES (8u * 1024u * 1024u)
#define SUMMARY_MAX_DIRS 16384u

enum { KIND_BINARY = 1, KIND_BITS = 2, KIND_NONE = 3 };

struct sum_entry {
  uint64_t mnt, dev, ino, size;
  int64_t mtime, ctime;
  uint32_t off; /* bitset offset in the arena (KIND_BITS) */
  uint8_t log2; /* bitset size, 2^log2 bits (KIND_BITS) */
  uint8_t kind;
};

struct dir_key {
  uint64_t dev, ino;
  uint32_t search; /* the search that first read the directory (0: none said) */
};

static volatile int lock_word = 0;
static int enabled = 1;
static struct sum_entry *entries = NULL;
static uint32_t *index_slots = NULL; /* 2 × SUMMARY_MAX_ENTRIES slots: entry index + 1, 0 free */
static unsigned char *arena = NULL;
static struct dir_key *dirs = NULL; /* 2 × SUMMARY_MAX_DIRS slots, ino 0 free */
static uint32_t n_entries = 0, n_dirs = 0;
/* The bounds in force (contentSummaries op 4 lowers them, for tests; never above the allocated sizes). */
static uint32_t max_entries = SUMMARY_MAX_ENTRIES;
static size_t max_arena = SUMMARY_ARENA_BYTES;
static size_t arena_used = 0;
static double n_skipped = 0, n_stored = 0, n_cleared = 0;
static int alloc_failed = 0;

static void lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&lock_word, __ATOMIC_RELAXED)) sched_yield();
  }
}
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static uint64_t mix(uint64_t dev, uint64_t ino) {
  uint64_t h = ino * 0x9E3779B97F4A7C15ULL ^ dev * 0xC2B2AE3D27D4EB4FULL;
  return h ^ (h >> 29);
}

/* Allocates the table once (under the lock); 0 when it cannot (summaries then stay off). */
static int allocated(void) {
  if (entries != NULL) return 1;
  if (alloc_failed) return 0;
  entries = malloc(sizeof(struct sum_entry) * SUMMARY_MAX_ENTRIES);
  index_slots = calloc(2 * SUMMARY_MAX_ENTRIES, sizeof(uint32_t));
  arena = malloc(SUMMARY_ARENA_BYTES);
  dirs = calloc(2 * SUMMARY_MAX_DIRS, sizeof(struct dir_key));
  if (entries == NULL || index_slots == NULL || arena == NULL || dirs == NULL) {
    free(entries);
    free(index_slots);
    free(arena);
    free(dirs);
    entries = NULL;
    alloc_failed = 1;
    return 0;
  }
  return 1;
}

/* Drops every entry (under the lock); the directories stay unless `all`. */
static void clear_entries(int all) {
  if (entries == NULL) return;
  if (n_entries > 0) memset(index_slots, 0, 2 * SUMMARY_MAX_ENTRIES * sizeof(uint32_t));
  n_entries = 0;
  arena_used = 0;
  if (all && n_dirs > 0) {
    memset(dirs, 0, 2 * SUMMARY_MAX_DIRS * sizeof(struct dir_key));
    n_dirs = 0;
  }
  n_cleared++;
}

/* The slot of (dev, ino) in the entry index (under the lock): its entry's, or the free one where it would go. */
static uint32_t *entry_slot(uint64_t dev, uint64_t ino) {
  uint32_t mask = 2 * SUMMARY_MAX_ENTRIES - 1;
  for (uint32_t i = (uint32_t)mix(dev, ino) & mask;; i = (i + 1) & mask) {
    uint32_t v = index_slots[i];
    if (v == 0 || (entries[v - 1].dev == dev && entries[v - 1].ino == ino)) return &index_slots[i];
  }
}

static int64_t ns_of(const struct statx_timestamp *t) { return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec; }

#define KEY_MASK (STATX_TYPE | STATX_SIZE | STATX_INO | STATX_MTIME | STATX_CTIME)
#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U
#endif
/* Asked besides KEY_MASK: the mount's id, never reused where the kernel has STATX_MNT_ID_UNIQUE (Linux 6.8), else the
 * plain one (reused after an unmount). Another file system mounted at the same place (a restored image, the same
 * device attached again) shows the same device, inode and stamps, but a new mount. */
#define ASK_MASK (KEY_MASK | STATX_MNT_ID | STATX_MNT_ID_UNIQUE)

/* The mount part of the key: the unique id, else the plain one (high bit set), else 0. */
static uint64_t mount_of(const struct statx *st) {
  if (st->stx_mask & STATX_MNT_ID_UNIQUE) return st->stx_mnt_id;
  if (st->stx_mask & STATX_MNT_ID) return st->stx_mnt_id | (1ULL << 63);
  return 0;
}

/* 1 when the statx result is a regular file with every key field. */
static int keyed(const struct statx *st) {
  return (st->stx_mask & KEY_MASK) == KEY_MASK && S_ISREG(st->stx_mode);
}

int summary_run_begin(int dirfd, uint32_t search) {
  if (!__atomic_load_n(&enabled, __ATOMIC_RELAXED)) return 0;
  struct statx st;
  if (statx(dirfd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_INO, &st) != 0 || !(st.stx_mask & STATX_INO)) {
    return 0;
  }
  uint64_t dev = makedev(st.stx_dev_major, st.stx_dev_minor), ino = st.stx_ino;
  if (ino == 0) return 0;
  int seen = 0;
  lock();
  if (enabled && allocated()) {
    uint32_t mask = 2 * SUMMARY_MAX_DIRS - 1;
    uint32_t i = (uint32_t)mix(dev, ino) & mask;
    while (dirs[i].ino != 0 && !(dirs[i].dev == dev && dirs[i].ino == ino)) i = (i + 1) & mask;
    if (dirs[i].ino != 0) {
      seen = search == 0 || dirs[i].search != search;
    } else if (n_dirs >= SUMMARY_MAX_DIRS) {
      clear_entries(1);
    } else {
      dirs[i].dev = dev;
      dirs[i].ino = ino;
      dirs[i].search = search;
      n_dirs++;
    }
  }
  unlock();
  return seen;
}

/* A trigram's hash (its three bytes little endian in the low 24 bits of w): BLOOM_LOG bits. */
static inline uint32_t tri_hash(uint32_t w) { return ((w << 8) * 0x9E3779B1u) >> (32 - BLOOM_LOG); }

/* 1 when every trigram of s (n ≥ 3 bytes) is in the bitset of 2^log2 bits; 1 for a string under 3 bytes. */
static int all_present(const unsigned char *bits, unsigned log2, const unsigned char *s, size_t n) {
  uint32_t mask = (1u << log2) - 1;
  for (size_t i = 0; i + 3 <= n; i++) {
    uint32_t h = tri_hash((uint32_t)s[i] | (uint32_t)s[i + 1] << 8 | (uint32_t)s[i + 2] << 16) & mask;
    if (!(bits[h >> 3] & (1u << (h & 7)))) return 0;
  }
  return 1;
}

int summary_query_usable(const struct summary_query *q) {
  if (q->has_needle && q->needle_len >= 3) return 1;
  if (!q->has_set) return 0;
  size_t at = 0;
  while (at + 4 <= q->set_len) {
    uint32_t len = (uint32_t)q->set[at] | (uint32_t)q->set[at + 1] << 8 | (uint32_t)q->set[at + 2] << 16 |
                   (uint32_t)q->set[at + 3] << 24;
    at += 4;
    if (len > q->set_len - at || len < 3) return 0;
    at += len;
  }
  return 1;
}

/* What the bitset proves for the query: 1 when the file may hold the required bytes, 0 when it cannot. */
static int may_hold(const unsigned char *bits, unsigned log2, const struct summary_query *q) {
  if (q->has_needle && !all_present(bits, log2, q->needle, q->needle_len)) return 0;
  if (!q->has_set) return 1;
  size_t at = 0;
  while (at + 4 <= q->set_len) {
    uint32_t len = (uint32_t)q->set[at] | (uint32_t)q->set[at + 1] << 8 | (uint32_t)q->set[at + 2] << 16 |
                   (uint32_t)q->set[at + 3] << 24;
    at += 4;
    if (len > q->set_len - at) return 0;
    if (all_present(bits, log2, q->set + at, len)) return 1;
    at += len;
  }
  return 0;
}

int summary_lookup(int dirfd, const char *name, const struct summary_query *q, int *store) {
  *store = 0;
  struct statx st;
  if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_AS_STAT, ASK_MASK, &st) != 0 ||
      !keyed(&st)) {
    return -1;
  }
  uint64_t dev = makedev(st.stx_dev_major, st.stx_dev_minor);
  int64_t mtime = ns_of(&st.stx_mtime), ctime = ns_of(&st.stx_ctime);
  int code = -1;
  int hit = 0;
  lock();
  if (entries != NULL) {
    uint32_t v = *entry_slot(dev, st.stx_ino);
    const struct sum_entry *e = v ? &entries[v - 1] : NULL;
    if (e != NULL && e->size == st.stx_size && e->mtime == mtime && e->ctime == ctime && e->mnt == mount_of(&st)) {
      hit = 1;
      if ((double)e->size > q->max_bytes) code = SUMMARY_TOO_LARGE;
      else if (e->kind == KIND_BINARY) code = SUMMARY_BINARY;
      else if (e->kind == KIND_BITS && !may_hold(arena + e->off, e->log2, q)) code = SUMMARY_NO_MATCH;
    }
  }
  if (code >= 0) n_skipped++;
  unlock();
  *store = !hit;
  return code;
}

/* The number of bits set in x (SWAR: no call into libgcc, which __builtin_popcount makes without -mpopcnt). */
static inline uint32_t popcount64(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return (uint32_t)((x * 0x0101010101010101ULL) >> 56);
}

/* Marks the trigrams of p[0..n) in `seen` (a byte per bit, 2^log2 of them: one plain store per trigram, no
 * read-modify-write) from offset `from`; the portable loop. */
static void mark_trigrams(const unsigned char *p, size_t n, size_t from, unsigned char *seen, uint32_t mask) {
  size_t i = from;
  for (; i + 4 <= n; i++) {
    uint32_t w;
    memcpy(&w, p + i, 4);
    seen[tri_hash(w & 0xffffff) & mask] = 1;
  }
  for (; i + 3 <= n; i++) seen[tri_hash((uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16) & mask] = 1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* mark_trigrams with AVX2: eight trigram hashes per multiply (the same hashes: test/fs/content-summaries.test.ts
 * compares the verdicts with reads). About 1.6 times faster here; the byte stores are what is left. */
__attribute__((target("avx2"))) static void mark_trigrams_avx2(const unsigned char *p, size_t n, unsigned char *seen,
                                                              uint32_t mask) {
  /* Dword j: bytes j, j + 1, j + 2 of the 16 loaded, in its bytes 1..3 (byte 0 zero: the `w << 8` of tri_hash). */
  const __m256i shuffle = _mm256_setr_epi8(-1, 0, 1, 2, -1, 1, 2, 3, -1, 2, 3, 4, -1, 3, 4, 5, -1, 4, 5, 6, -1, 5, 6,
                                           7, -1, 6, 7, 8, -1, 7, 8, 9);
  const __m256i k = _mm256_set1_epi32((int)0x9E3779B1u);
  const __m256i m = _mm256_set1_epi32((int)mask);
  uint32_t idx[8] __attribute__((aligned(32)));
  size_t i = 0;
  for (; i + 16 <= n; i += 8) {
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p + i)));
    __m256i h = _mm256_srli_epi32(_mm256_mullo_epi32(_mm256_shuffle_epi8(v, shuffle), k), 32 - BLOOM_LOG);
    _mm256_store_si256((__m256i *)idx, _mm256_and_si256(h, m));
    for (int j = 0; j < 8; j++) seen[idx[j]] = 1;
  }
  mark_trigrams(p, n, i, seen, mask);
}
static int has_avx2(void) {
  static int known = -1;
  if (known < 0) {
    __builtin_cpu_init();
    known = __builtin_cpu_supports("avx2") ? 1 : 0;
  }
  return known;
}
#endif

/* The bitset of `bytes` at 2^log2 bits (bit h & (2^log2 - 1) for each trigram hash h: the same bits as building at
 * 2^BLOOM_LOG and folding) into `bits`, through `seen`; returns the number of bits set. */
static uint32_t build_bits(const unsigned char *p, size_t n, unsigned log2, unsigned char *seen, unsigned char *bits) {
  const size_t nbits = (size_t)1 << log2;
  memset(seen, 0, nbits);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (has_avx2()) mark_trigrams_avx2(p, n, seen, (uint32_t)nbits - 1);
  else mark_trigrams(p, n, 0, seen, (uint32_t)nbits - 1);
#else
  mark_trigrams(p, n, 0, seen, (uint32_t)nbits - 1);
#endif
  uint32_t count = 0;
  for (size_t k = 0; k < nbits; k += 16) {
#if defined(__SSE2__)
    int m = _mm_movemask_epi8(_mm_slli_epi16(_mm_loadu_si128((const __m128i *)(seen + k)), 7));
#else
    int m = 0;
    for (int j = 0; j < 16; j++) m |= seen[k + j] << j;
#endif
    bits[k / 8] = (unsigned char)(m & 0xff);
    bits[k / 8 + 1] = (unsigned char)(m >> 8);
  }
  for (size_t k = 0; k < nbits / 8; k += 8) {
    uint64_t w;
    memcpy(&w, bits + k, 8);
    count += popcount64(w);
  }
  return count;
}

/* Folds a bitset of 2^log2 bits into its lower half (bit h of the half: bit h or h + half of the whole); returns the
 * number of bits set in the half. */
static void fold(unsigned char *bits, unsigned log2) {
  size_t half = ((size_t)1 << log2) / 16; /* bytes; a multiple of 8 (log2 > BLOOM_MIN_LOG >= 7) */
  for (size_t k = 0; k < half; k += 8) {
    uint64_t a, b;
    memcpy(&a, bits + k, 8);
    memcpy(&b, bits + k + half, 8);
    a |= b;
    memcpy(bits + k, &a, 8);
  }
}

/* The number of bits set in the lower half of a bitset of 2^log2 bits once folded (`fold`), without folding it. */
static uint32_t folded_count(const unsigned char *bits, unsigned log2) {
  size_t half = ((size_t)1 << log2) / 16;
  uint32_t count = 0;
  for (size_t k = 0; k < half; k += 8) {
    uint64_t a, b;
    memcpy(&a, bits + k, 8);
    memcpy(&b, bits + k + half, 8);
    count += popcount64(a | b);
  }
  return count;
}

void summary_store(int fd, const unsigned char *bytes, size_t n, int binary) {
  struct statx st;
  struct timespec now;
  if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, ASK_MASK, &st) != 0 || !keyed(&st) ||
      st.stx_size != n || clock_gettime(CLOCK_REALTIME, &now) != 0) {
    return;
  }
  int64_t mtime = ns_of(&st.stx_mtime), ctime = ns_of(&st.stx_ctime);
  int64_t limit = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - SUMMARY_RACY_NS;
  if (mtime > limit || ctime > limit) return;
  unsigned char seen[(size_t)1 << BLOOM_LOG];
  unsigned char bits[((size_t)1 << BLOOM_LOG) / 8];
  uint8_t kind = binary ? KIND_BINARY : n > SUMMARY_MAX_FILE ? KIND_NONE : KIND_BITS;
  /* Start at twice as many bits as the file has trigrams (at most half full), BLOOM_MIN_LOG..BLOOM_LOG. */
  unsigned log2 = BLOOM_MIN_LOG;
  while (log2 < BLOOM_LOG && ((size_t)1 << log2) < 2 * n) log2++;
  if (kind == KIND_BITS) {
    uint32_t count = build_bits(bytes, n, log2, seen, bits);
    if ((uint64_t)count * FILL_DEN > ((uint64_t)1 << log2) * FILL_NUM) kind = KIND_NONE;
    while (kind == KIND_BITS && log2 > BLOOM_MIN_LOG) {
      /* A fold that would leave it too full is not made (counted first). */
      uint32_t c = folded_count(bits, log2);
      if ((uint64_t)c * FILL_DEN > ((uint64_t)1 << (log2 - 1)) * FILL_NUM) break;
      fold(bits, log2);
      log2--;
    }
  }
  size_t nbytes = kind == KIND_BITS ? ((size_t)1 << log2) / 8 : 0;
  uint64_t dev = makedev(st.stx_dev_major, st.stx_dev_minor);
  lock();
  if (enabled && allocated()) {
    if (n_entries >= max_entries || arena_used + nbytes > max_arena) clear_entries(0);
    uint32_t *slot = entry_slot(dev, st.stx_ino);
    if (*slot == 0) *slot = ++n_entries;
    struct sum_entry *e = &entries[*slot - 1];
    e->mnt = mount_of(&st);
    e->dev = dev;
    e->ino = st.stx_ino;
    e->size = st.stx_size;
    e->mtime = mtime;
    e->ctime = ctime;
    e->kind = kind;
    e->log2 = (uint8_t)log2;
    e->off = (uint32_t)arena_used;
    if (nbytes > 0) memcpy(arena + arena_used, bits, nbytes);
    arena_used += nbytes;
    n_stored++;
  }
  unlock();
}

/*
 * contentSummaries(op[, entries, bytes]) → [enabled, entries, bytes, directories, skipped, stored, cleared]
 *
 *   op  0: report only; 1: turn summaries on; 2: turn them off (and drop every entry and directory); 3: drop every
 *       entry and directory (summaries stay as they are); 4: set the bounds to at most `entries` entries and `bytes`
 *       of bitsets (each capped at its compiled maximum; for tests) and drop every entry
 *
 * `bytes` is what the table holds: its entries, index and directories as allocated (0 before the first use) and the
 * bitsets' bytes; `skipped` counts the files a summary answered, `stored` the summaries kept, `cleared` the times the
 * table was emptied (by a bound or op 2 and 3), all since the process started.
 */
napi_value content_summaries(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t op = 0;
  double limit_entries = SUMMARY_MAX_ENTRIES, limit_bytes = SUMMARY_ARENA_BYTES;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int32(env, argv[0], &op) != napi_ok || op < 0 || op > 4) {
    return throw_type(env, "contentSummaries: op must be 0 to 4");
  }
  if (op == 4 && (argc < 3 || napi_get_value_double(env, argv[1], &limit_entries) != napi_ok ||
                  napi_get_value_double(env, argv[2], &limit_bytes) != napi_ok || !(limit_entries >= 1) ||
                  !(limit_bytes >= 0))) {
    return throw_type(env, "contentSummaries: op 4 takes entries >= 1 and bytes >= 0");
  }
  double out[7];
  lock();
  if (op == 1) enabled = 1;
  if (op == 2) enabled = 0;
  if (op == 4) {
    max_entries = limit_entries > SUMMARY_MAX_ENTRIES ? SUMMARY_MAX_ENTRIES : (uint32_t)limit_entries;
    max_arena = limit_bytes > SUMMARY_ARENA_BYTES ? SUMMARY_ARENA_BYTES : (size_t)limit_bytes;
  }
  if (op >= 2) clear_entries(1);
  out[0] = enabled;
  out[1] = n_entries;
  out[2] = entries == NULL ? 0
                           : (double)((size_t)n_entries * sizeof(struct sum_entry) +
                                      2 * SUMMARY_MAX_ENTRIES * sizeof(uint32_t) +
                                      2 * SUMMARY_MAX_DIRS * sizeof(struct dir_key) + arena_used);
  out[3] = n_dirs;
  out[4] = n_skipped;
  out[5] = n_stored;
  out[6] = n_cleared;
  unlock();
  napi_value result;
  if (napi_create_array_with_length(env, 7, &result) != napi_ok) return NULL;
  for (uint32_t i = 0; i < 7; i++) {
    napi_value v;
    if (napi_create_double(env, out[i], &v) != napi_ok || napi_set_element(env, result, i, v) != napi_ok) return NULL;
  }
  return result;
}

/*
 * The git view's stat batches of the native addon (src/vcs/git-native-stat.ts): statEntries stamps single entry names
 * of a verified directory descriptor, entryKinds reports the kind of relative paths of entry names under one. Under the
 * rules of fs_tools_native.c's header comment: every name or path is checked before the first statx; nothing is
 * opened or allocated; only types, device and inode numbers and times go back; a thrown message names only the
 * argument that was wrong. statx rather than fstatat: fs_tools_native.c's `regular_size` says why (glibc 2.28).
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "fs_tools_native.h"

/* Kinds statEntries reports (src/vcs/git-objects.ts ENTRY_KINDS). */
enum { KIND_ERROR = 0, KIND_DIRECTORY = 1, KIND_LINK = 2, KIND_OTHER = 3 };

/*
 * statEntries(dirfd, names, out) → count
 *
 *   dirfd  int32 ≥ 0: a verified directory descriptor (the caller's; not closed here)
 *   names  Uint8Array (not shared, sharing no byte with `out`): packed names, each name's UTF-8 bytes followed by one
 *          NUL, every name checked as one directory entry name before anything is asked of the kernel
 *   out    Float64Array, at least 5 × the number of names: per name i, [kind, dev, ino, mtimeMs, ctimeMs] of the entry
 *          `name` of `dirfd`, not following it if it is a link (statx AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT); kind
 *          KIND_ERROR (the other four 0) when it cannot be stat'ed; dev, ino and the times as Node's fs.Stats gives
 *          them (makedev of the device numbers; seconds × 1000 + nanoseconds / 1e6, in doubles)
 *
 * Returns the number of names. Throws TypeError on a malformed argument or a name that is not a single entry name
 * (before any statx). Nothing is opened or allocated; no JavaScript runs between the checks and the last write.
 */
napi_value stat_entries(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) {
    return throw_type(env, "statEntries: 3 arguments expected");
  }
  int dirfd;
  if (napi_get_value_int32(env, argv[0], &dirfd) != napi_ok || dirfd < 0) {
    return throw_type(env, "statEntries: dirfd must be a descriptor");
  }
  unsigned char *packed;
  size_t packed_len;
  if (!unshared_bytes_of(env, argv[1], &packed, &packed_len)) {
    return throw_type(env, "statEntries: names must be packed names (not shared)");
  }
  int64_t count = packed_count(packed, packed_len);
  if (count < 0) return throw_type(env, "statEntries: not a single directory entry name");
  napi_typedarray_type ot;
  size_t out_len;
  void *out_ptr;
  napi_value out_ab;
  size_t out_off;
  if (napi_get_typedarray_info(env, argv[2], &ot, &out_len, &out_ptr, &out_ab, &out_off) != napi_ok ||
      ot != napi_float64_array || (uint64_t)out_len / 5 < (uint64_t)count) {
    return throw_type(env, "statEntries: out must be a Float64Array of 5 per name");
  }
  if (overlaps(packed, packed_len, out_ptr, out_len * sizeof(double))) {
    return throw_type(env, "statEntries: out overlaps the names");
  }
  double *out = (double *)out_ptr;
  size_t at = 0;
  for (int64_t i = 0; i < count; i++) {
    const char *name = (const char *)packed + at;
    at += strlen(name) + 1;
    double *m = out + 5 * (size_t)i;
    struct statx st;
    const unsigned int want = STATX_TYPE | STATX_INO | STATX_MTIME | STATX_CTIME;
    if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_AS_STAT, want, &st) != 0 ||
        (st.stx_mask & want) != want) {
      m[0] = KIND_ERROR;
      m[1] = m[2] = m[3] = m[4] = 0;
      continue;
    }
    m[0] = S_ISDIR(st.stx_mode) ? KIND_DIRECTORY : S_ISLNK(st.stx_mode) ? KIND_LINK : KIND_OTHER;
    m[1] = (double)makedev(st.stx_dev_major, st.stx_dev_minor);
    m[2] = (double)st.stx_ino;
    m[3] = (double)st.stx_mtime.tv_sec * 1000.0 + (double)st.stx_mtime.tv_nsec / 1000000.0;
    m[4] = (double)st.stx_ctime.tv_sec * 1000.0 + (double)st.stx_ctime.tv_nsec / 1000000.0;
  }
  napi_value result;
  if (napi_create_double(env, (double)count, &result) != napi_ok) return NULL;
  return result;
}

/*
 * 1 when `p` (n bytes) is a relative path of single entry names joined by "/": not empty, no leading or trailing "/",
 * no empty, "." or ".." component, no NUL. Resolved relative to a directory descriptor, it never leaves that
 * directory by its own names (a link among its components may, which is what the caller checks).
 */
static int relative_path(const char *p, size_t n) {
  if (n == 0 || memchr(p, '\0', n) != NULL) return 0;
  size_t at = 0;
  while (at <= n) {
    const char *slash = memchr(p + at, '/', n - at);
    size_t len = slash == NULL ? n - at : (size_t)(slash - (p + at));
    if (!entry_name(p + at, len)) return 0;
    at += len + 1;
  }
  return 1;
}

/*
 * entryKinds(dirfd, paths, out) → count
 *
 *   dirfd  int32 ≥ 0: a verified directory descriptor (the caller's; not closed here)
 *   paths  Uint8Array (not shared, sharing no byte with `out`): packed relative paths, each path's bytes followed by
 *          one NUL, every path checked by `relative_path` before anything is asked of the kernel
 *   out    Uint8Array, at least one byte per path: the kind of the entry the path names relative to `dirfd`, its last
 *          component not followed (statx AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT; the components before it are, as
 *          lstat(2) of the joined path would): KIND_ERROR when it cannot be stat'ed, else KIND_DIRECTORY, KIND_LINK or
 *          KIND_OTHER
 *
 * Returns the number of paths. Throws TypeError on a malformed argument or path (before any statx). Nothing is opened
 * or allocated; no JavaScript runs between the checks and the last write.
 */
napi_value entry_kinds(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) {
    return throw_type(env, "entryKinds: 3 arguments expected");
  }
  int dirfd;
  if (napi_get_value_int32(env, argv[0], &dirfd) != napi_ok || dirfd < 0) {
    return throw_type(env, "entryKinds: dirfd must be a descriptor");
  }
  unsigned char *packed, *out;
  size_t packed_len, out_len;
  if (!unshared_bytes_of(env, argv[1], &packed, &packed_len)) {
    return throw_type(env, "entryKinds: paths must be packed paths (not shared)");
  }
  if (!bytes_of(env, argv[2], &out, &out_len)) return throw_type(env, "entryKinds: out must be a Uint8Array");
  if (packed_len > 0 && packed[packed_len - 1] != '\0') return throw_type(env, "entryKinds: not a relative path");
  size_t count = 0;
  for (size_t at = 0; at < packed_len; count++) {
    size_t len = strlen((const char *)packed + at);
    if (!relative_path((const char *)packed + at, len)) return throw_type(env, "entryKinds: not a relative path");
    at += len + 1;
  }
  if (out_len < count) return throw_type(env, "entryKinds: out must hold one byte per path");
  if (overlaps(packed, packed_len, out, out_len)) return throw_type(env, "entryKinds: out overlaps the paths");
  size_t at = 0;
  for (size_t i = 0; i < count; i++) {
    const char *p = (const char *)packed + at;
    at += strlen(p) + 1;
    struct statx st;
    if (statx(dirfd, p, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_AS_STAT, STATX_TYPE, &st) != 0 ||
        (st.stx_mask & STATX_TYPE) == 0) {
      out[i] = KIND_ERROR;
      continue;
    }
    out[i] = S_ISDIR(st.stx_mode) ? KIND_DIRECTORY : S_ISLNK(st.stx_mode) ? KIND_LINK : KIND_OTHER;
  }
  napi_value result;
  if (napi_create_double(env, (double)count, &result) != napi_ok) return NULL;
  return result;
}

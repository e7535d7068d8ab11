/*
 * What native/fs_tools_native.c and native/fs_tools_native_stat.c share: the argument checks of the one addon
 * (fs_tools_native.node; built with -fvisibility=hidden, so none of these is exported from it) and the stat batches'
 * N-API functions. The addon's rules are in fs_tools_native.c's header comment.
 */
#ifndef FS_TOOLS_NATIVE_H
#define FS_TOOLS_NATIVE_H

#include <node_api.h>
#include <stddef.h>
#include <stdint.h>

/* 1 when `name` (n bytes) is one directory entry name: not empty, ".", "..", and no "/" or NUL. */
int entry_name(const char *name, size_t n);
/* 1 when the byte ranges [a, a + an) and [b, b + bn) share a byte. */
int overlaps(const void *a, size_t an, const void *b, size_t bn);
/* Throws a TypeError with `message` (no path, no content); returns NULL. */
napi_value throw_type(napi_env env, const char *message);
/* The bytes of a Uint8Array argument; 0 when it is not one. */
int bytes_of(napi_env env, napi_value v, unsigned char **data, size_t *length);
/* bytes_of, not in a SharedArrayBuffer. */
int unshared_bytes_of(napi_env env, napi_value v, unsigned char **data, size_t *length);
/* The number of names in a packed list (each name and one NUL), or -1 when a name is not one entry name. */
int64_t packed_count(const unsigned char *p, size_t n);

/* statEntries and entryKinds (fs_tools_native_stat.c). */
napi_value stat_entries(napi_env env, napi_callback_info info);
napi_value entry_kinds(napi_env env, napi_callback_info info);

/* Content summaries (fs_tools_native_summary.c). */
/* What a search requires of a file, as readFiles was given it (the needle, the packed set), and its size cap. */
struct summary_query {
  int has_needle;
  const unsigned char *needle;
  size_t needle_len;
  int has_set;
  const unsigned char *set;
  size_t set_len;
  double max_bytes;
};
/* The codes a summary answers with (readFiles' CODE_TOO_LARGE, CODE_BINARY, CODE_NO_MATCH). */
enum { SUMMARY_TOO_LARGE = 2, SUMMARY_BINARY = 3, SUMMARY_NO_MATCH = 4 };
/* 1 when a summary can decide for this query: a needle of at least 3 bytes, or a set whose strings all have 3. */
int summary_query_usable(const struct summary_query *q);
/* Start of a run of search `search` (0: none said) in the directory `dirfd`: 1 when summaries are on and another
 * search read this directory before (its files are then looked up and summarized), else 0 (the directory is
 * remembered for the next search). */
int summary_run_begin(int dirfd, uint32_t search);
/* The code the file `name` of `dirfd` gets from a valid summary, or -1 when it must be read; *store is 1 when no valid
 * summary was found (the read should store one). */
int summary_lookup(int dirfd, const char *name, const struct summary_query *q, int *store);
/* Keeps the summary of the `n` bytes just read through `fd` (binary: their verdict), when the rules allow. */
void summary_store(int fd, const unsigned char *bytes, size_t n, int binary);
/* contentSummaries(op): the N-API function. */
napi_value content_summaries(napi_env env, napi_callback_info info);
/* The git status reuse's watches (fs_tools_watch.c). */
napi_value watch_init(napi_env env, napi_callback_info info);
napi_value watch_directory(napi_env env, napi_callback_info info);
napi_value watch_drain(napi_env env, napi_callback_info info);
napi_value mounts_changed(napi_env env, napi_callback_info info);

#endif

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

/* The git status reuse's watches (fs_tools_watch.c). */
napi_value watch_init(napi_env env, napi_callback_info info);
napi_value watch_directory(napi_env env, napi_callback_info info);
napi_value watch_drain(napi_env env, napi_callback_info info);
napi_value mounts_changed(napi_env env, napi_callback_info info);

#endif

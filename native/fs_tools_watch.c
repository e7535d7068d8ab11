/*
 * The git status reuse's watches (src/vcs/git-status-watch.ts): an inotify instance per repository, a watch per
 * directory added through a directory descriptor the caller opened and proved, and a non-blocking drain that reports
 * how many events arrived and whether any of them changes the set of directories (a directory made, moved or deleted,
 * a watch gone, the queue overflowed). Under the rules of fs_tools_native.c's header comment: no path from JavaScript
 * is resolved here (a watch is added on /proc/self/fd/N of the caller's descriptor), nothing is allocated, only
 * numbers go back, and a thrown message names only the argument that was wrong.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fs_tools_native.h"

/* What a watch reports: every change of an entry's data, metadata or name, and the directory's own end. */
#define WATCH_MASK                                                                                                  \
  (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | \
   IN_MOVE_SELF | IN_ONLYDIR)

/* Longest drain: more events than any queue holds by default (16,384), so a drain ends at EAGAIN or here. */
#define MAX_DRAIN_BYTES (64u << 20)

static int int_arg(napi_env env, napi_value v, int32_t *out) {
  return napi_get_value_int32(env, v, out) == napi_ok;
}

static napi_value number(napi_env env, double v) {
  napi_value r;
  if (napi_create_double(env, v, &r) != napi_ok) return NULL;
  return r;
}

/* watchInit() → an inotify descriptor (IN_NONBLOCK | IN_CLOEXEC), or -errno. The caller closes it. */
napi_value watch_init(napi_env env, napi_callback_info info) {
  (void)info;
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  return number(env, fd < 0 ? -errno : fd);
}

/*
 * watchDirectory(ifd, dirfd, out) → watch descriptor (≥ 1), or -errno
 *
 *   ifd    an inotify descriptor of watchInit
 *   dirfd  a directory descriptor the caller opened and proved (not closed here)
 *   out    Float64Array of at least 1: out[0] the file system's type (statfs f_type) of dirfd
 *
 * The watch is added on /proc/self/fd/<dirfd>, the directory open at dirfd whatever path now leads to it (IN_ONLYDIR:
 * anything else fails ENOTDIR). The type is read before the watch (fstatfs of the same descriptor).
 */
napi_value watch_directory(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  int32_t ifd, dirfd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || !int_arg(env, argv[0], &ifd) ||
      !int_arg(env, argv[1], &dirfd) || ifd < 0 || dirfd < 0) {
    return throw_type(env, "watchDirectory: two descriptors and out expected");
  }
  napi_typedarray_type ot;
  size_t out_len;
  void *out_ptr;
  napi_value out_ab;
  size_t out_off;
  if (napi_get_typedarray_info(env, argv[2], &ot, &out_len, &out_ptr, &out_ab, &out_off) != napi_ok ||
      ot != napi_float64_array || out_len < 1) {
    return throw_type(env, "watchDirectory: out must be a Float64Array of 1");
  }
  struct statfs fs;
  if (fstatfs(dirfd, &fs) != 0) return number(env, -errno);
  ((double *)out_ptr)[0] = (double)(uint64_t)(unsigned long)fs.f_type;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", dirfd);
  int wd = inotify_add_watch(ifd, proc, WATCH_MASK);
  return number(env, wd < 0 ? -errno : wd);
}

/*
 * watchDrain(ifd, out) → 0, or -errno (a read failing other than EAGAIN)
 *
 *   out  Float64Array of at least 2: out[0] the events read, out[1] 1 when one of them changes what the set watches
 *        (a directory made, moved in or out, or deleted; an entry named `.git` made, changed, moved or deleted; a
 *        watched directory deleted or moved; a watch removed; the file system unmounted; the queue overflowed), else 0
 *
 * Reads until the queue is empty (the descriptor is non-blocking); an event is queued inside the syscall that made the
 * change, so a drain sees every change completed before it.
 */
napi_value watch_drain(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t ifd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 || !int_arg(env, argv[0], &ifd) ||
      ifd < 0) {
    return throw_type(env, "watchDrain: a descriptor and out expected");
  }
  napi_typedarray_type ot;
  size_t out_len;
  void *out_ptr;
  napi_value out_ab;
  size_t out_off;
  if (napi_get_typedarray_info(env, argv[1], &ot, &out_len, &out_ptr, &out_ab, &out_off) != napi_ok ||
      ot != napi_float64_array || out_len < 2) {
    return throw_type(env, "watchDrain: out must be a Float64Array of 2");
  }
  double *out = (double *)out_ptr;
  double events = 0;
  int structural = 0;
  size_t total = 0;
  char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
  for (;;) {
    ssize_t n = read(ifd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return number(env, -errno);
    }
    if (n == 0) break;
    total += (size_t)n;
    for (char *p = buf; p < buf + n;) {
      const struct inotify_event *e = (const struct inotify_event *)p;
      events++;
      const uint32_t m = e->mask;
      /* A `.git` made, changed or removed anywhere decides whether the set may be used at all (a nested repository). */
      const int dot_git = e->len > 0 && strcmp(e->name, ".git") == 0;
      if ((m & (IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF)) || dot_git ||
          ((m & IN_ISDIR) && (m & (IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE)))) {
        structural = 1;
      }
      p += sizeof(struct inotify_event) + e->len;
    }
    if (total >= MAX_DRAIN_BYTES) {
      structural = 1; /* more than a default queue holds: treated as an overflow */
      break;
    }
  }
  out[0] = events;
  out[1] = structural;
  return number(env, 0);
}

/*
 * mountsChanged(fd) → 1 when the mount table changed since the last call on `fd` (a descriptor of
 * /proc/self/mountinfo: poll reports POLLPRI | POLLERR once per change), 0 when not, -errno on failure.
 */
napi_value mounts_changed(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || !int_arg(env, argv[0], &fd) ||
      fd < 0) {
    return throw_type(env, "mountsChanged: a descriptor expected");
  }
  struct pollfd p = {.fd = fd, .events = POLLPRI, .revents = 0};
  int r;
  do r = poll(&p, 1, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) return number(env, -errno);
  return number(env, (p.revents & (POLLPRI | POLLERR | POLLNVAL)) ? 1 : 0);
}

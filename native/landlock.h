/*
 * The kernel wall (docs/security.md "The kernel wall"): one function that confines the calling thread — and every
 * thread and process it creates afterwards — to a list of paths with Linux Landlock. Shared by the N-API addon
 * (fs_tools_landlock.c, the server's own ruleset at start-up) and the exec helper (fs_tools_landlock_exec.c, a
 * narrower layer for one child such as git).
 *
 * The three system calls are made directly (glibc has no wrappers). Their numbers are the same on every Linux
 * architecture that has Landlock (the generic system call table).
 */
#ifndef FS_TOOLS_LANDLOCK_H
#define FS_TOOLS_LANDLOCK_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

/* uapi/linux/landlock.h, spelled out so that an older header on the build machine does not matter. */
/* The ABI 6 layout; older kernels accept it while the fields they do not know are zero. */
struct fst_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net; /* ABI 4+ */
  uint64_t scoped;             /* ABI 6+ */
};
#define FST_ACCESS_NET_BIND_TCP (1ULL << 0)
#define FST_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define FST_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define FST_SCOPE_SIGNAL (1ULL << 1)
struct fst_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));
#define FST_CREATE_RULESET_VERSION (1U << 0)
#define FST_RULE_PATH_BENEATH 1

/* The rights that apply to a file (not only to a directory): a rule on a file may hold only these. */
#define FST_ACCESS_EXECUTE (1ULL << 0)
#define FST_ACCESS_WRITE_FILE (1ULL << 1)
#define FST_ACCESS_READ_FILE (1ULL << 2)
#define FST_ACCESS_TRUNCATE (1ULL << 14)
#define FST_ACCESS_IOCTL_DEV (1ULL << 15)
#define FST_FILE_ACCESS \
  (FST_ACCESS_EXECUTE | FST_ACCESS_WRITE_FILE | FST_ACCESS_READ_FILE | FST_ACCESS_TRUNCATE | FST_ACCESS_IOCTL_DEV)

/* The highest Landlock ABI the kernel offers, or -errno (ENOSYS: no Landlock; EOPNOTSUPP: disabled at boot). */
static inline int fst_landlock_abi(void) {
  long v = syscall(__NR_landlock_create_ruleset, NULL, 0, FST_CREATE_RULESET_VERSION);
  return v < 0 ? -errno : (int)v;
}

/*
 * Builds a ruleset: `handled` are the filesystem rights it governs (every right the ABI knows; `handled_net` and
 * `scoped` likewise for network rights and scopes, 0 for none), rule i allows `masks[i]` beneath `paths[i]` (masked
 * to FST_FILE_ACCESS when the path is not a directory). A path that does not exist is skipped (`skipped[i]` = 1 when
 * `skipped` is not NULL). Returns the ruleset's descriptor, or -1 with a message in `err` (the step and errno; never
 * a path). The one builder of both the addon and the exec helper.
 */
static inline int fst_landlock_build(uint64_t handled, uint64_t handled_net, uint64_t scoped, size_t n,
                                     const char *const *paths, const uint64_t *masks, unsigned char *skipped,
                                     char *err, size_t errlen) {
  struct fst_ruleset_attr attr = {.handled_access_fs = handled, .handled_access_net = handled_net, .scoped = scoped};
  int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) {
    snprintf(err, errlen, "landlock_create_ruleset: %s", strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    if (skipped) skipped[i] = 0;
    int fd = open(paths[i], O_PATH | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        if (skipped) skipped[i] = 1;
        continue;
      }
      snprintf(err, errlen, "open of rule %zu: %s", i, strerror(errno));
      close(ruleset);
      return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      snprintf(err, errlen, "fstat of rule %zu: %s", i, strerror(errno));
      close(fd);
      close(ruleset);
      return -1;
    }
    struct fst_path_beneath_attr rule = {.allowed_access = masks[i] & handled, .parent_fd = fd};
    if (!S_ISDIR(st.st_mode)) rule.allowed_access &= FST_FILE_ACCESS;
    long r = rule.allowed_access == 0 ? 0 : syscall(__NR_landlock_add_rule, ruleset, FST_RULE_PATH_BENEATH, &rule, 0);
    int saved = errno;
    close(fd);
    if (r != 0) {
      snprintf(err, errlen, "landlock_add_rule %zu: %s", i, strerror(saved));
      close(ruleset);
      return -1;
    }
  }
  return ruleset;
}

/* Sets no_new_privs (Landlock requires it unprivileged) and confines the calling thread. 0, or -1 + `err`. */
static inline int fst_landlock_apply(int ruleset, char *err, size_t errlen) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    snprintf(err, errlen, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    return -1;
  }
  if (syscall(__NR_landlock_restrict_self, ruleset, 0) != 0) {
    snprintf(err, errlen, "landlock_restrict_self: %s", strerror(errno));
    return -1;
  }
  return 0;
}

/* Builds the ruleset (`fst_landlock_build`) and confines the calling thread with it. 0, or -1 + `err`. */
static inline int fst_landlock_restrict(uint64_t handled, uint64_t handled_net, uint64_t scoped, size_t n,
                                        const char *const *paths, const uint64_t *masks, unsigned char *skipped,
                                        char *err, size_t errlen) {
  int ruleset = fst_landlock_build(handled, handled_net, scoped, n, paths, masks, skipped, err, errlen);
  if (ruleset < 0) return -1;
  int r = fst_landlock_apply(ruleset, err, errlen);
  close(ruleset);
  return r;
}

#endif

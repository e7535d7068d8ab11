/*
 * fs-tools kernel wall, exec helper (docs/security.md "The kernel wall"): adds one narrower Landlock layer to the
 * domain it inherits from the server, then runs the program. The server starts git through it, so that git reaches
 * less than the server itself does — never the forge CLIs' configuration or the private directories that hold gh's
 * token — whatever a repository makes git do.
 *
 *   fs_tools_landlock_exec HANDLED [MASK:PATH ...] -- PROGRAM [ARG ...]
 *
 * HANDLED and each MASK are decimal bit masks of LANDLOCK_ACCESS_FS_*; PROGRAM is an absolute path. A layer can only
 * take rights away: what the server's own ruleset refuses stays refused. The layer is also scoped where the kernel
 * can (ABI 6+: no signals to, and no abstract Unix sockets of, processes outside it — the server among them; Node opens
 * its inspector on SIGUSR1, and code evaluated there would run in the server's wider domain) and refuses TCP (ABI 4+:
 * bind and connect; git's calls here are local). On any failure nothing runs: one line on
 * stderr (the step and errno, no path) and exit status 126.
 */
#include "landlock.h"

#include <stdlib.h>

#define MAX_RULES 256

static int fail(const char *message) {
  fprintf(stderr, "fs_tools_landlock_exec: %s\n", message);
  return 126;
}

int main(int argc, char **argv) {
  if (argc < 4) return fail("usage: HANDLED [MASK:PATH ...] -- PROGRAM [ARG ...]");
  char *end;
  errno = 0;
  unsigned long long handled = strtoull(argv[1], &end, 10);
  if (errno || *end || handled == 0) return fail("HANDLED is not a mask");
  const char *paths[MAX_RULES];
  uint64_t masks[MAX_RULES];
  size_t n = 0;
  int i = 2;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (n == MAX_RULES) return fail("too many rules");
    errno = 0;
    unsigned long long mask = strtoull(argv[i], &end, 10);
    if (errno || *end != ':' || end[1] != '/') return fail("a rule is not MASK:/PATH");
    masks[n] = mask;
    paths[n] = end + 1;
    n++;
  }
  if (i + 1 >= argc || argv[i + 1][0] != '/') return fail("no absolute PROGRAM after --");
  char err[256];
  int abi = fst_landlock_abi();
  uint64_t net = abi >= 4 ? FST_ACCESS_NET_BIND_TCP | FST_ACCESS_NET_CONNECT_TCP : 0;
  uint64_t scoped = abi >= 6 ? FST_SCOPE_ABSTRACT_UNIX_SOCKET | FST_SCOPE_SIGNAL : 0;
  if (fst_landlock_restrict(handled, net, scoped, n, paths, masks, NULL, err, sizeof err) != 0) return fail(err);
  execv(argv[i + 1], argv + i + 1);
  snprintf(err, sizeof err, "execv: %s", strerror(errno));
  return fail(err);
}

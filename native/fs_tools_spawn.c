/*
 * fs-tools kernel wall, starting a child without forking the server (docs/security.md "The kernel wall"; part of the
 * wall's addon, fs_tools_landlock.node). Node's `spawn` starts a child with a plain fork(): the kernel copies the page
 * tables of the whole server (~120 MB) and the server then takes a copy-on-write fault on every page it writes, about
 * 5 ms of its main thread per git call (docs/benchmarks.md "git_status (2026-12-04, session 15)"). glibc's
 * posix_spawn uses clone(CLONE_VM | CLONE_VFORK): the child shares the memory until it execs, nothing is copied.
 *
 *   spawn(file, argv, envp, cwd | null, withStdin, fds) → [pid, stdinFd, stdoutFd, stderrFd] | errno (a number > 0)
 *   waitExit(pid, callback)   callback(code, signal) once the child has exited (then it is reaped)
 *   signal(pid, signo)        kill(2) of a child not yet reaped (its pid cannot have been reused), → errno or 0
 *
 * The child gets connected Unix sockets as fds 0–2 (what libuv gives a child's pipes; stdin /dev/null unless
 * `withStdin`), `fds` as its fds 3, 4, …, and no other descriptor: the server's are close-on-exec (Node and libuv
 * open every descriptor that way), and with glibc 2.34+ every one above those is closed in the child as well (one the
 * server inherited without close-on-exec: Node's `spawn` passes it on); its signal mask is empty and every signal at
 * its default action (as libuv does for its children) but glibc's two internal ones (32 and 33, which posix_spawn
 * leaves ignored; a program of glibc's installs its own handlers for them when it uses them). The parent's ends are close-on-exec and returned to
 * JavaScript, which wraps them in streams. A failure to start (the program, the directory, a descriptor) is returned
 * as the errno, and no process is left behind.
 *
 * Waiting: a small thread per child blocks in waitid(WNOWAIT) — not the libuv pool, so no git ever holds a pool
 * thread — and hands the exit to the event loop through a thread-safe function; the event loop then reaps the child
 * (waitpid), so until that moment its pid stays reserved and `signal` can never reach another process. libuv's own
 * SIGCHLD handler reaps only the children it started itself.
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_FDS 16
/* Strings of argv or of the environment: a bound on what is allocated here, far above what execve takes (ARG_MAX,
   a quarter of the stack limit, counts each string's pointer too: E2BIG long before). Node's spawn has none. */
#define MAX_ARGS (1 << 20)

/* A JavaScript array of strings as a NULL-terminated C array (freed with free_strings); NULL on any failure. */
static char **strings(napi_env env, napi_value array) {
  uint32_t n = 0;
  if (napi_get_array_length(env, array, &n) != napi_ok || n > MAX_ARGS) return NULL;
  char **out = calloc(n + 1, sizeof(char *));
  if (!out) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    size_t len = 0;
    if (napi_get_element(env, array, i, &item) != napi_ok ||
        napi_get_value_string_utf8(env, item, NULL, 0, &len) != napi_ok || !(out[i] = malloc(len + 1)) ||
        napi_get_value_string_utf8(env, item, out[i], len + 1, &len) != napi_ok) {
      for (uint32_t j = 0; j <= i; j++) free(out[j]);
      free(out);
      return NULL;
    }
  }
  return out;
}

static void free_strings(char **list) {
  if (!list) return;
  for (char **p = list; *p; p++) free(*p);
  free(list);
}

static void close_all(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
}

/*
 * posix_spawn of `file` with the stdio and descriptors described above. Returns 0 and fills pid / parent[3] (-1 for
 * no stdin), or an errno (nothing left open, no child).
 */
static int start(const char *file, char **argv, char **envp, const char *cwd, int with_stdin, const int *fds,
                 int nfds, pid_t *pid, int parent[3]) {
  int pipes[6] = {-1, -1, -1, -1, -1, -1}; /* stdin child/parent, stdout parent/child, stderr parent/child */
  int high[MAX_FDS];
  int nhigh = 0;
  int err = 0;
  for (int i = 0; i < 3 && !err; i++) {
    if (i == 0 && !with_stdin) continue;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipes + 2 * i) != 0) err = errno;
  }
  /* The descriptors for fds 3+ are first copied above every target (a source numbered like an earlier target would
     otherwise be overwritten before it is copied); the copies are close-on-exec and closed here afterwards. */
  for (int i = 0; i < nfds && !err; i++) {
    if ((high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3 + nfds)) < 0) err = errno;
    else nhigh++;
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  int have_actions = 0, have_attr = 0;
  if (!err) err = posix_spawn_file_actions_init(&actions);
  if (!err) have_actions = 1;
  if (!err) err = posix_spawnattr_init(&attr);
  if (!err) have_attr = 1;
  if (!err) {
    err = with_stdin ? posix_spawn_file_actions_adddup2(&actions, pipes[0], 0)
                     : posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  if (!err) err = posix_spawn_file_actions_adddup2(&actions, pipes[3], 1);
  if (!err) err = posix_spawn_file_actions_adddup2(&actions, pipes[5], 2);
  for (int i = 0; i < nfds && !err; i++) err = posix_spawn_file_actions_adddup2(&actions, high[i], 3 + i);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
  /* And nothing else, not even a descriptor the server inherited without close-on-exec (close_range). */
  if (!err) err = posix_spawn_file_actions_addclosefrom_np(&actions, 3 + nfds);
#endif
  if (!err && cwd) err = posix_spawn_file_actions_addchdir_np(&actions, cwd);
  if (!err) {
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    err = posix_spawnattr_setsigmask(&attr, &none);
    if (!err) err = posix_spawnattr_setsigdefault(&attr, &all);
    if (!err) err = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  }
  if (!err) err = posix_spawn(pid, file, &actions, &attr, argv, envp);
  if (have_actions) posix_spawn_file_actions_destroy(&actions);
  if (have_attr) posix_spawnattr_destroy(&attr);
  close_all(high, nhigh);
  /* The child's ends are closed here either way; the parent's ends are returned only on success. */
  int child_ends[3] = {pipes[0], pipes[3], pipes[5]};
  close_all(child_ends, 3);
  parent[0] = pipes[1];
  parent[1] = pipes[2];
  parent[2] = pipes[4];
  if (err) {
    close_all(parent, 3);
    parent[0] = parent[1] = parent[2] = -1;
  }
  return err;
}

static napi_value number(napi_env env, double value) {
  napi_value out = NULL;
  napi_create_double(env, value, &out);
  return out;
}

/* spawn(file, argv, envp, cwd | null, withStdin, fds) → [pid, stdinFd, stdoutFd, stderrFd] or an errno. */
static napi_value spawn_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value args[6];
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 6) {
    napi_throw_type_error(env, NULL, "spawn(file, argv, envp, cwd, withStdin, fds)");
    return NULL;
  }
  size_t len = 0;
  char file[4096], cwd[4096];
  napi_valuetype cwd_type;
  bool with_stdin = false;
  uint32_t nfds = 0;
  int fds[MAX_FDS];
  size_t cwd_len = 0;
  int ok = napi_get_value_string_utf8(env, args[0], file, sizeof file, &len) == napi_ok &&
           napi_typeof(env, args[3], &cwd_type) == napi_ok && napi_get_value_bool(env, args[4], &with_stdin) == napi_ok &&
           napi_get_array_length(env, args[5], &nfds) == napi_ok && nfds <= MAX_FDS;
  if (ok && cwd_type == napi_string)
    ok = napi_get_value_string_utf8(env, args[3], cwd, sizeof cwd, &cwd_len) == napi_ok;
  /* A path that does not fit (PATH_MAX) is what execve or chdir would refuse: the same errno as Node's spawn. */
  if (ok && (len >= sizeof file - 1 || cwd_len >= sizeof cwd - 1)) return number(env, ENAMETOOLONG);
  for (uint32_t i = 0; ok && i < nfds; i++) {
    napi_value item;
    ok = napi_get_element(env, args[5], i, &item) == napi_ok && napi_get_value_int32(env, item, &fds[i]) == napi_ok &&
         fds[i] >= 0;
  }
  char **argv = ok ? strings(env, args[1]) : NULL;
  char **envp = argv ? strings(env, args[2]) : NULL;
  if (!argv || !envp) {
    free_strings(argv);
    napi_throw_type_error(env, NULL, "spawn: bad arguments");
    return NULL;
  }
  pid_t pid = 0;
  int parent[3];
  int err = start(file, argv, envp, cwd_type == napi_string ? cwd : NULL, with_stdin, fds, (int)nfds, &pid, parent);
  free_strings(argv);
  free_strings(envp);
  if (err) return number(env, err);
  napi_value out;
  if (napi_create_array_with_length(env, 4, &out) != napi_ok) return NULL;
  napi_set_element(env, out, 0, number(env, pid));
  for (int i = 0; i < 3; i++) napi_set_element(env, out, i + 1, number(env, parent[i]));
  return out;
}

/*
 * One child being waited for: its pid, the thread-safe function that takes its exit to the event loop, and what the
 * waiter thread and that function share. Node deletes the function when its environment is torn down (a worker thread
 * ending, the process's own teardown) even while a thread still holds it: its finalizer marks it `gone` under `lock`,
 * and the waiter thread touches it only under `lock` while it is not gone (it then reaps the child itself). `refs`:
 * the waiter thread (then the exit it queued, which call_js takes) and the function's finalizer; the last one frees
 * the struct (Node may run the finalizer before call_js of an exit still queued at the teardown).
 */
typedef struct {
  pid_t pid;
  napi_threadsafe_function tsfn;
  pthread_mutex_t lock;
  int gone;
  int refs;
} waiter_t;

/* Drops one of `w`'s two references (under its lock); frees it with the last. */
static void waiter_unref(waiter_t *w) {
  pthread_mutex_lock(&w->lock);
  int last = --w->refs == 0;
  pthread_mutex_unlock(&w->lock);
  if (last) {
    pthread_mutex_destroy(&w->lock);
    free(w);
  }
}

/* Reaps `pid` (already exited) into `status`; the pid, or -1. */
static pid_t reap(pid_t pid, int *status) {
  pid_t got;
  while ((got = waitpid(pid, status, WNOHANG)) < 0 && errno == EINTR) {
  }
  return got;
}

/* The waiter thread: blocks until the child has exited (without reaping it), then hands it to the event loop. */
static void *wait_thread(void *data) {
  waiter_t *w = data;
  siginfo_t si;
  while (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&w->lock);
  int queued = !w->gone && napi_call_threadsafe_function(w->tsfn, w, napi_tsfn_blocking) == napi_ok;
  /* After napi_closing the thread no longer holds the function (Node counted it out): no release then. */
  if (queued) napi_release_threadsafe_function(w->tsfn, napi_tsfn_release);
  pthread_mutex_unlock(&w->lock);
  if (queued) return NULL; /* the thread's reference goes with the exit to call_js */
  /* No event loop will take the exit: nobody else reaps the child. */
  int status = 0;
  reap(w->pid, &status);
  waiter_unref(w);
  return NULL;
}

/* The function's finalizer (on the event loop, also at its environment's teardown): the thread must not use it. */
static void waiter_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  waiter_t *w = data;
  pthread_mutex_lock(&w->lock);
  w->gone = 1;
  pthread_mutex_unlock(&w->lock);
  waiter_unref(w);
}

/* On the event loop: reaps the child and calls back with (exit code | null, signal number | null). */
static void call_js(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  waiter_t *w = data;
  int status = 0;
  pid_t got = reap(w->pid, &status);
  /* The reference the thread handed over (Node runs this with no environment for an exit still queued at its
     environment's teardown, after the finalizer). */
  waiter_unref(w);
  if (!env) return;
  napi_value args[2], undefined, ignored;
  napi_get_null(env, &args[0]);
  napi_get_null(env, &args[1]);
  if (got > 0 && WIFEXITED(status)) args[0] = number(env, WEXITSTATUS(status));
  if (got > 0 && WIFSIGNALED(status)) args[1] = number(env, WTERMSIG(status));
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, callback, 2, args, &ignored);
}

/* No waiter could be started for `pid`: the child is stopped and reaped here (after SIGKILL the wait is short), so it
 * neither runs on unwatched nor stays a zombie, and its pid cannot be reused under a later signal. */
static void stop_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* waitExit(pid, callback): calls back once the child has exited; if no waiter could be started, stops and reaps the
 * child, then throws. */
static napi_value wait_exit_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2], name;
  int32_t pid = 0;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_int32(env, args[0], &pid) != napi_ok || pid <= 0) {
    napi_throw_type_error(env, NULL, "waitExit(pid, callback)");
    return NULL;
  }
  waiter_t *w = calloc(1, sizeof *w);
  if (!w) {
    stop_and_reap(pid);
    napi_throw_error(env, NULL, "waitExit: out of memory");
    return NULL;
  }
  w->pid = pid;
  w->refs = 2;
  pthread_mutex_init(&w->lock, NULL);
  napi_create_string_utf8(env, "fs-tools:child", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, args[1], NULL, name, 0, 1, w, waiter_finalize, NULL, call_js, &w->tsfn) !=
      napi_ok) {
    pthread_mutex_destroy(&w->lock);
    free(w);
    stop_and_reap(pid);
    napi_throw_error(env, NULL, "waitExit: no thread-safe function");
    return NULL;
  }
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  /* The waiter takes no signal meant for the process (it inherits the mask it is created with). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&thread, &attr, wait_thread, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  if (err) {
    /* The finalizer drops the function's reference; this drops the thread's that never ran. */
    napi_release_threadsafe_function(w->tsfn, napi_tsfn_abort);
    waiter_unref(w);
    stop_and_reap(pid);
    napi_throw_error(env, NULL, "waitExit: no thread");
    return NULL;
  }
  return NULL;
}

/* signal(pid, signo) → 0 or the errno of kill(2). Only for a child whose exit has not been called back yet. */
static napi_value signal_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value args[2];
  int32_t pid = 0, signo = 0;
  if (napi_get_cb_info(env, info, &argc, args, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_int32(env, args[0], &pid) != napi_ok || napi_get_value_int32(env, args[1], &signo) != napi_ok ||
      pid <= 0) {
    napi_throw_type_error(env, NULL, "signal(pid, signo)");
    return NULL;
  }
  return number(env, kill(pid, signo) == 0 ? 0 : errno);
}

/* Adds spawn, waitExit and signal to the addon's exports. */
napi_status fst_spawn_define(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"spawn", NULL, spawn_js, NULL, NULL, NULL, napi_enumerable, NULL},
      {"waitExit", NULL, wait_exit_js, NULL, NULL, NULL, napi_enumerable, NULL},
      {"signal", NULL, signal_js, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  return napi_define_properties(env, exports, 3, props);
}

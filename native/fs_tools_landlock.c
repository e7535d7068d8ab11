/*
 * fs-tools kernel wall, N-API side (docs/security.md "The kernel wall"): `abi()`, `poolThreads()` and
 * `confineProcess(handled, rules) → Promise<boolean[]>`.
 *
 * Landlock confines the calling thread and what it creates afterwards. When the CLI's code first runs, Node has
 * already started the libuv pool (the ES module loader reads the entry file with it), and those threads do every
 * asynchronous file operation. So the ruleset is applied to each pool thread as well: `poolThreads` work items (the
 * pool's size, UV_THREADPOOL_SIZE as libuv reads it) are queued at once and wait at a barrier until all of them run —
 * one per thread, since a thread runs one item at a time — and only then each applies the ruleset; the main thread
 * applies it last. The pool's size is computed here with libuv's own arithmetic (pool_threads below), not parsed in
 * JavaScript: `UV_THREADPOOL_SIZE=-1` is 1024 threads to libuv (atoi into an unsigned count), and confining fewer
 * threads than libuv started would leave the rest free while the wall says "enforced". If the barrier is not met within 5 s (a pool thread busy elsewhere), no thread is confined and
 * the promise rejects. Threads and processes created afterwards (worker threads, git, gh, glab) inherit the domain,
 * and no later call can widen it. Errors carry the step and errno, never a path.
 */
#include "landlock.h"

#define NAPI_VERSION 8
#include <node_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define MAX_RULES 256
#define PATH_BUF 4096

/* native/fs_tools_spawn.c: spawn, waitExit and signal (a child started without forking the server). */
napi_status fst_spawn_define(napi_env env, napi_value exports);

static napi_value throw_error(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* abi() → the highest Landlock ABI of this kernel, or a negative errno (no Landlock). */
static napi_value abi_js(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  if (napi_create_int32(env, fst_landlock_abi(), &out) != napi_ok) return NULL;
  return out;
}

/*
 * The libuv pool's size exactly as libuv 1.x computes it when the pool starts (src/threadpool.c init_threads):
 * 4 without UV_THREADPOOL_SIZE, else atoi() of it stored in an unsigned int, 0 → 1, above 1024 → 1024. The same
 * libc atoi on the same string gives the same count (e.g. "-1" → 1024, "" and "abc" → 1).
 */
static uint32_t pool_threads(void) {
  unsigned int n = 4;
  const char *val = getenv("UV_THREADPOOL_SIZE");
  if (val != NULL) n = (unsigned int)atoi(val);
  if (n == 0) n = 1;
  if (n > 1024) n = 1024;
  return n;
}

/* poolThreads() → the libuv pool's size as libuv computes it (pool_threads). */
static napi_value pool_threads_js(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value out;
  if (napi_create_uint32(env, pool_threads(), &out) != napi_ok) return NULL;
  return out;
}

/* One confinement in progress: the ruleset, the pool barrier, the promise. */
struct confine {
  int ruleset;
  uint32_t threads;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t arrived;
  int go;        /* every item reached the barrier: each applies the ruleset */
  int abandoned; /* the barrier timed out: none applies it */
  uint32_t failed;
  uint32_t finished;
  char err[256];
  napi_deferred deferred;
  napi_async_work *works;
  unsigned char *skipped;
  uint32_t rules;
};

/* On a pool thread: wait until every item runs, then confine this thread. */
static void pool_execute(napi_env env, void *data) {
  (void)env;
  struct confine *c = data;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 5;
  pthread_mutex_lock(&c->mu);
  c->arrived++;
  if (c->arrived == c->threads && !c->abandoned) {
    c->go = 1;
    pthread_cond_broadcast(&c->cv);
  }
  while (!c->go && !c->abandoned) {
    if (pthread_cond_timedwait(&c->cv, &c->mu, &deadline) == ETIMEDOUT && !c->go) {
      c->abandoned = 1;
      snprintf(c->err, sizeof c->err, "the libuv pool did not run %u items at once within 5 s", c->threads);
      pthread_cond_broadcast(&c->cv);
    }
  }
  int go = c->go;
  pthread_mutex_unlock(&c->mu);
  if (!go) return;
  char err[200];
  if (fst_landlock_apply(c->ruleset, err, sizeof err) != 0) {
    pthread_mutex_lock(&c->mu);
    c->failed++;
    snprintf(c->err, sizeof c->err, "pool thread: %s", err);
    pthread_mutex_unlock(&c->mu);
  }
}

/* On the main thread, once per item: after the last one, confine the main thread and settle the promise. */
static void pool_complete(napi_env env, napi_status status, void *data) {
  struct confine *c = data;
  if (status != napi_ok && c->err[0] == 0) snprintf(c->err, sizeof c->err, "a pool item was cancelled");
  if (status != napi_ok) c->failed++;
  if (++c->finished < c->threads) return;
  int ok = c->go && !c->failed;
  if (ok && fst_landlock_apply(c->ruleset, c->err, sizeof c->err) != 0) ok = 0;
  close(c->ruleset);
  for (uint32_t i = 0; i < c->threads; i++) napi_delete_async_work(env, c->works[i]);
  napi_value value = NULL;
  if (ok && napi_create_array_with_length(env, c->rules, &value) == napi_ok) {
    for (uint32_t i = 0; i < c->rules; i++) {
      napi_value b;
      napi_get_boolean(env, c->skipped[i] != 0, &b);
      napi_set_element(env, value, i, b);
    }
    napi_resolve_deferred(env, c->deferred, value);
  } else {
    napi_value message, error;
    napi_create_string_utf8(env, c->err[0] ? c->err : "confinement failed", NAPI_AUTO_LENGTH, &message);
    napi_create_error(env, NULL, message, &error);
    napi_reject_deferred(env, c->deferred, error);
  }
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->works);
  free(c->skipped);
  free(c);
}


/*
 * confineProcess(handled: number, rules: Array<[path: string, access: number]>)
 *   → Promise<boolean[]> (true: that path did not exist and was skipped)
 * `handled` and each access are bit masks of LANDLOCK_ACCESS_FS_* (below 2^53); the pool's size is pool_threads().
 * Throws synchronously for malformed arguments or a ruleset that cannot be built (nothing confined);
 * the promise rejects when the pool barrier or a restrict fails (see the module comment).
 */
static napi_value confine_process_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) {
    return throw_error(env, "confineProcess: 2 arguments expected");
  }
  double handled_d;
  uint32_t n, threads;
  if (napi_get_value_double(env, argv[0], &handled_d) != napi_ok || handled_d < 0) {
    return throw_error(env, "confineProcess: handled must be a number");
  }
  if (napi_get_array_length(env, argv[1], &n) != napi_ok || n > MAX_RULES) {
    return throw_error(env, "confineProcess: rules must be an array of at most 256");
  }
  threads = pool_threads();
  char **paths = calloc(n ? n : 1, sizeof(char *));
  uint64_t *masks = calloc(n ? n : 1, sizeof(uint64_t));
  unsigned char *skipped = calloc(n ? n : 1, 1);
  char err[256] = "confineProcess: a rule must be [string, number]";
  int ok = paths && masks && skipped;
  for (uint32_t i = 0; ok && i < n; i++) {
    napi_value rule, p, m;
    size_t len;
    double mask;
    ok = napi_get_element(env, argv[1], i, &rule) == napi_ok && napi_get_element(env, rule, 0, &p) == napi_ok &&
         napi_get_element(env, rule, 1, &m) == napi_ok && napi_get_value_double(env, m, &mask) == napi_ok &&
         mask >= 0 && napi_get_value_string_utf8(env, p, NULL, 0, &len) == napi_ok && len > 0 && len < PATH_BUF;
    if (!ok) break;
    paths[i] = malloc(len + 1);
    ok = paths[i] && napi_get_value_string_utf8(env, p, paths[i], len + 1, &len) == napi_ok &&
         strlen(paths[i]) == len;
    masks[i] = (uint64_t)mask;
  }
  int ruleset = -1;
  if (ok) {
    ruleset = fst_landlock_build((uint64_t)handled_d, 0, 0, n, (const char *const *)paths, masks, skipped, err, sizeof err);
    ok = ruleset >= 0;
  }
  for (uint32_t i = 0; paths && i < n; i++) free(paths[i]);
  free(paths);
  free(masks);
  if (!ok) {
    free(skipped);
    return throw_error(env, err);
  }
  struct confine *c = calloc(1, sizeof *c);
  napi_value promise = NULL;
  if (!c || !(c->works = calloc(threads, sizeof(napi_async_work)))) {
    free(c);
    free(skipped);
    close(ruleset);
    return throw_error(env, "confineProcess: out of memory");
  }
  c->ruleset = ruleset;
  c->threads = threads;
  c->skipped = skipped;
  c->rules = n;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  napi_value name;
  napi_create_string_utf8(env, "fs-tools:confine", NAPI_AUTO_LENGTH, &name);
  if (napi_create_promise(env, &c->deferred, &promise) != napi_ok) return throw_error(env, "confineProcess: promise");
  for (uint32_t i = 0; i < threads; i++) {
    if (napi_create_async_work(env, NULL, name, pool_execute, pool_complete, c, &c->works[i]) != napi_ok ||
        napi_queue_async_work(env, c->works[i]) != napi_ok) {
      /* Cannot happen short of memory exhaustion; the items already queued time out at the barrier. */
      pthread_mutex_lock(&c->mu);
      c->abandoned = 1;
      snprintf(c->err, sizeof c->err, "could not queue pool item %u", i);
      pthread_cond_broadcast(&c->cv);
      pthread_mutex_unlock(&c->mu);
      c->threads = i;
      if (i == 0) return throw_error(env, "confineProcess: could not queue");
      break;
    }
  }
  return promise;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"abi", NULL, abi_js, NULL, NULL, NULL, napi_enumerable, NULL},
      {"poolThreads", NULL, pool_threads_js, NULL, NULL, NULL, napi_enumerable, NULL},
      {"confineProcess", NULL, confine_process_js, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  if (napi_define_properties(env, exports, 3, props) != napi_ok) return NULL;
  if (fst_spawn_define(env, exports) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

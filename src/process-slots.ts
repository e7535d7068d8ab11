/**
 * The process's state below the server: one registry, created once when the process loads its code, that owns every
 * value a module keeps between calls (caches, pools, held descriptors, lock chains, the heavy-call queue, the hooks
 * start-up installs). The server's `ProcessState` (src/server/process-state.ts) holds what a call is handed (config,
 * roots, hashes, budget, audit log); the primitives below it cannot import the server, so their state lives here,
 * each module's in one named slot that the module claims once at load and keeps a reference to.
 *
 * `SLOT_NAMES` is the one list of that state: a module that keeps anything between calls claims a slot named for it
 * (`processSlot`), and test/architecture.test.ts fails on module-level mutable state declared anywhere else in src/
 * (its allow list names the few exceptions: side tables keyed by an object, memos of pure functions, lazy constants).
 * Worker threads load their own copy of the modules they run, so each thread has its own registry.
 *
 * Reset for tests: none for the whole registry (a slot's value is kept by reference in its module). Where a test needs
 * a cache emptied, the module that owns the slot says how: `clearListingCache` (src/fs/listing-cache.ts),
 * `clearViewCaches` (src/vcs/git-view-cache.ts), `clearGitDirCache` (src/policy/git-dirs-state.ts), `releaseHeldDirs`
 * (src/fs/held-dirs.ts).
 */

/** Every slot, named for the module that owns it (relative to src/, without `.ts`). */
export const SLOT_NAMES = [
  'errors/redact', // the secret values learned at start-up, redacted from every message
  'errors/to-envelope', // the incident logger and the EACCES/EPERM classifier start-up installs
  'fs/atomic-write', // the write-fault injector (test builds only)
  'fs/content-cache', // facts of file contents read, keyed by identity and stamps
  'fs/glob/gitignore', // compiled .gitignore rules, keyed by their full text
  'fs/hash', // the small buffers hashed last, with their hashes (compared in full before reuse)
  'fs/held-dirs', // verified directories held open between calls, and their idle timer
  'fs/history', // the last undo record id's milliseconds (ids stay increasing)
  'fs/history-prune', // the undo history's queued prunes and meta.json updates, the records' sizes seen
  'fs/listing-cache', // directory listings, keyed by identity and stamps
  'fs/native-load', // the native addon the main thread loaded at start-up (the git view's stat batches)
  'fs/lock-site', // the lock scopes (the roots) registered by each ProcessState
  'fs/own-files', // the in-flight register of the server's own files
  'fs/owned-temp', // the private temporary directories alive, and the exit hook's flag
  'fs/path-lock', // the in-process lock chains, the locks held and their heartbeat, the stale time
  'fs/search-reader', // the one pool of reader threads
  'mutation/copy-write', // the copy fault (seams build only)
  'patch/transaction', // the kill-at step and its counter (seams build only)
  'policy/git-dirs-state', // the git-directory guard's caches
  'policy/near-listings', // the near-path search's directory listings, keyed by identity and stamps
  'server/process-state', // the policy-only roots of the broken-containment test build
  'server/shutdown', // the shutdown grace (shorter only in the seams build)
  'tools/heavy-calls', // the heavy-call queue and its counters
  'tools/list-memo', // list_directory's pages, keyed by their arguments, policy, directory identity and .gitignore texts
  'vcs/git-locate', // git's global safe.directory list, read once
  'vcs/git-materialize', // the pool of private git directories and the bases swept
  'vcs/git-status-watch', // git_status' watch sets (inotify descriptors) and kept answers, the mount table's descriptor
  'vcs/git-view-cache', // what a git call may take over from an earlier one
  'vcs/run-command', // the child wall start-up installs
] as const;

/** The name of one slot. */
export type SlotName = (typeof SLOT_NAMES)[number];

/** The registry: each claimed slot's value by name. The one module-level mutable value outside a slot. */
const slots = new Map<SlotName, object>();

/**
 * Claims slot `name` for the calling module and returns its value, built by `create` (called once, now). A module
 * calls this once at load, at module level, and keeps the returned object: its state is that object's fields (or the
 * object itself, for a collection).
 * @throws Error when `name` was claimed already in this thread (two copies of a module would mean two copies of
 *   state that must be one: two lock chains, two queues)
 */
export function processSlot<T extends object>(name: SlotName, create: () => T): T {
  if (slots.has(name)) throw new Error(`process slot ${name} claimed twice`);
  const value = create();
  slots.set(name, value);
  return value;
}

/** The slots claimed so far in this thread, in claim order (tests: every listed slot has its owner). */
export function claimedSlots(): SlotName[] {
  return [...slots.keys()];
}

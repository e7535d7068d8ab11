/**
 * Process-wide state, built once in cli.ts and shared by every server instance the stdio factory creates (the
 * factory may run twice). Holds the roots, the remembered hashes, the mutation budget and the audit log. What the
 * modules below the server keep between calls (caches, pools, locks, the heavy-call queue) is in src/process-slots.ts.
 */
import type { WallState } from '../fs/kernel-wall.js';
import type { NativeReadsState } from '../fs/native-load.js';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { AuditLog } from '../audit/audit-log.js';
import { registerLockScope } from '../fs/path-lock.js';
import { guardedPaths, type GuardedPath } from '../policy/builtin-guards.js';
import { findContainingRoot, isInsideRoots } from '../policy/containment.js';
import { MutationBudget } from '../policy/gates.js';
import { HashMemory } from '../policy/occ.js';
import { RootSet } from '../policy/roots.js';
import { CallTracker } from './shutdown.js';
import type { ToolEntry } from '../tools/tool-index.js';
import { processSlot } from '../process-slots.js';

/** Everything a call needs besides its arguments. */
export interface ProcessState {
  config: Config;
  /** The tools of this process, in registry order: definitions, or index entries loaded at their first call. */
  tools: readonly ToolEntry[];
  roots: RootSet;
  hashes: HashMemory;
  budget: MutationBudget;
  audit: AuditLog;
  version: string;
  recoveredTransactions: unknown[];
  /** The state directory and the audit log, in every spelling: never reachable through the file tools. */
  guarded: readonly GuardedPath[];
  /** The kernel wall in force (set by the CLI at start-up; off for a state made elsewhere, e.g. in tests). */
  kernelWall: WallState;
  /** Whether content search reads through the native addon (set by the CLI at start-up; off for a state made elsewhere). */
  nativeReads: NativeReadsState;
  /** The calls in flight (graceful shutdown: src/server/shutdown.ts). */
  calls: CallTracker;
}

/**
 * The kernel wall's test build (scripts/bundle.mjs --broken-containment, docs/security.md "The kernel wall"): the
 * policy layer then takes `/` for one more root, and each directory named by leading `--broken-root=DIR` arguments
 * too (`takeBrokenRoots`), so that the suite can show the kernel refusing what a broken policy lets through — at the
 * outside directory itself, not only at `/`. A build-time constant: the production bundle folds it to false.
 */
declare const FS_TOOLS_BROKEN_CONTAINMENT: boolean | undefined;
const BROKEN_CONTAINMENT = typeof FS_TOOLS_BROKEN_CONTAINMENT !== 'undefined' && FS_TOOLS_BROKEN_CONTAINMENT === true;
/** The policy-only roots of that build (src/process-slots.ts). */
const brokenRoots = processSlot('server/process-state', (): string[] => ['/']);

/**
 * In the test build only: removes leading `--broken-root=DIR` arguments (absolute real paths), remembering them as
 * policy-only roots. In any other build it returns `argv` unchanged.
 */
export function takeBrokenRoots(argv: string[]): string[] {
  if (!BROKEN_CONTAINMENT) return argv;
  let i = 0;
  for (; i < argv.length && argv[i].startsWith('--broken-root='); i++) brokenRoots.push(argv[i].slice(14));
  return argv.slice(i);
}

/** Builds the state of one process from its configuration and tool registry. */
export function createProcessState(config: Config, tools: readonly ToolEntry[], version: string): ProcessState {
  const roots = new RootSet(
    BROKEN_CONTAINMENT
      ? [...config.roots, ...brokenRoots.map((r) => ({ given: r, real: r, source: 'cli' as const }))]
      : config.roots,
    config.clientRoots,
    config.rootsFromCommandLine,
    config.rejectedRoots,
  );
  const audit = new AuditLog(config.auditLog);
  // Lock files are created only inside the roots in force (src/fs/path-lock.ts).
  registerLockScope(
    (p) => isInsideRoots(roots.current(), p),
    (p) => findContainingRoot(roots.current(), p)?.real,
  );
  return {
    config,
    tools,
    roots,
    hashes: new HashMemory(),
    budget: new MutationBudget(config.mutationBudget),
    audit,
    version,
    recoveredTransactions: [],
    kernelWall: { enforced: false, reason: 'not started by the command line' },
    nativeReads: { inUse: false, reason: 'not started by the command line' },
    calls: new CallTracker(),
    guarded: guardedPaths({
      stateDir: [config.stateDir, realSpelling(config.stateDir)],
      auditLog: config.auditLog ? [config.auditLog, realSpelling(config.auditLog), ...audit.realPaths()] : [],
    }),
  };
}

/** The real path of `p`, or of its nearest existing ancestor joined with the rest (it may not exist yet). */
function realSpelling(p: string): string {
  const rest: string[] = [];
  for (let d = path.resolve(p); ; d = path.dirname(d)) {
    try {
      return path.join(realpathSync.native(d), ...rest);
    } catch {
      if (d === path.dirname(d)) return path.resolve(p);
      rest.unshift(path.basename(d));
    }
  }
}

/**
 * What a tool handler (and the mutation pipeline it calls) may use for one call. It lives below src/tools so the
 * mutation layer can take it without importing the tools layer; src/tools/define-tool.ts re-exports it.
 */
import type { Config } from '../config.js';
import type { PolicyContext } from '../policy/authorize.js';
import type { MutationBudget } from '../policy/gates.js';
import type { HashMemory } from '../policy/occ.js';
import type { RootSet } from '../policy/roots.js';
import type { WallState } from '../fs/kernel-wall.js';
import type { NativeReadsState } from '../fs/native-load.js';

/** What a handler may use. Built per call by src/server/call-tool.ts. */
export interface ToolContext {
  config: Config;
  roots: RootSet;
  /** The policy inputs in force for this call (roots snapshot, secrets flag, policy rules). */
  policy: PolicyContext;
  hashes: HashMemory;
  budget: MutationBudget;
  /** Aborted when the client cancels the request. */
  signal: AbortSignal;
  /** Process facts for list_allowed_directories. */
  process: {
    version: string;
    recoveredTransactions: readonly unknown[];
    kernelWall: WallState;
    nativeReads: NativeReadsState;
  };
}

/**
 * Process-wide state, built once in cli.ts and shared by every server instance the stdio factory creates (the
 * factory may run twice: STYLE §4.3). Holds the roots, the remembered hashes, the mutation budget and the audit log.
 */
import type { Config } from '../config.js';
import { AuditLog } from '../audit/audit-log.js';
import { MutationBudget } from '../policy/gates.js';
import { HashMemory } from '../policy/occ.js';
import { RootSet } from '../policy/roots.js';
import type { AnyTool } from '../tools/define-tool.js';

/** Everything a call needs besides its arguments. */
export interface ProcessState {
  config: Config;
  tools: readonly AnyTool[];
  roots: RootSet;
  hashes: HashMemory;
  budget: MutationBudget;
  audit: AuditLog;
  version: string;
  recoveredTransactions: unknown[];
}

/** Builds the state of one process from its configuration and tool registry. */
export function createProcessState(config: Config, tools: readonly AnyTool[], version: string): ProcessState {
  return {
    config,
    tools,
    roots: new RootSet(config.roots, config.clientRoots, config.rootsFromCommandLine),
    hashes: new HashMemory(),
    budget: new MutationBudget(config.mutationBudget),
    audit: new AuditLog(config.auditLog),
    version,
    recoveredTransactions: [],
  };
}

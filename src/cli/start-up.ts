/**
 * What every mode that runs tools does before the first request is read (docs/security.md "The server's own code and
 * token files", "The kernel wall", "Locks, temporaries and shutdown"), in this order: the state directory checked and
 * the native addon loaded (src/server/startup-files.ts), the process state built, the kernel wall raised, the leftovers
 * of a killed process swept, the own-files register configured, and the journals of an interrupted transaction rolled
 * back. `tools` (the tool list) builds the state only.
 */
import type { Config } from '../config.js';
import { UsageError } from '../errors/usage-error.js';
import { setDenialSource } from '../errors/to-envelope.js';
import { describeWall } from '../fs/kernel-wall.js';
import type { NativeReadsState } from '../fs/native-load.js';
import { configureOwnFiles, removeOwnFilesOnExit, sweepOwnLeftovers } from '../fs/own-files.js';
import { isWithin } from '../fs/path-within.js';
import { recoverJournals } from '../patch/transaction.js';
import { recoveryRefusal } from '../policy/authorize.js';
import { isInsideRoots } from '../policy/containment.js';
import { createProcessState, type ProcessState } from '../server/process-state.js';
import { prepareStartupFiles } from '../server/startup-files.js';
import type { ToolEntry } from '../tools/tool-index.js';
import { raiseKernelWall } from './kernel-wall.js';

/** A line to stderr (start-up notes; stdout carries the protocol or the command's output). */
const note = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/**
 * Prepares the process for `mode`: returns its state, or the exit status when start-up refused (2: a state directory
 * that fails its checks, or `--sandbox=require` without the wall; its line is on stderr).
 */
export async function startUp(
  config: Config,
  tools: readonly ToolEntry[],
  version: string,
): Promise<ProcessState | number> {
  const mode = config.mode;
  // The server's own files: state directory checked, leftovers swept, native addon loaded — before any request is read.
  let nativeReads: NativeReadsState | null = null;
  if (mode.kind !== 'tools') {
    try {
      nativeReads = prepareStartupFiles(config, note);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      note(`fs-tools: ${error.message}`);
      return error.exitCode;
    }
  }
  const state = createProcessState(config, tools, version);
  if (nativeReads) state.nativeReads = nativeReads;
  if (mode.kind === 'tools') return state;
  // The kernel wall, before any request is read and before the journal is touched: from here on the process and
  // everything it starts reach only what src/cli/kernel-wall.ts lists.
  state.kernelWall = await raiseKernelWall(config);
  if (config.sandbox === 'require' && !state.kernelWall.enforced) {
    note(`fs-tools: --sandbox=require: ${describeWall(state.kernelWall)}`);
    return 2;
  }
  if (state.kernelWall.enforced) {
    const writable = config.roots.map((r) => r.real);
    setDenialSource((p) => (p !== null && writable.some((r) => isWithin(r, p)) ? 'os' : 'kernel'));
  }
  if (mode.kind === 'serve') note(`fs-tools: ${describeWall(state.kernelWall)}`);
  await sweepLeftovers(config, state);
  configureOwnFiles(config.stateDir);
  process.once('exit', removeOwnFilesOnExit);
  await recoverTransactions(config, state);
  return state;
}

/**
 * The server's own leftovers (temporaries, copy trees, locks) that a killed process noted in its in-flight register:
 * removed inside the roots before serving; one stderr line says what was removed and what was left.
 */
async function sweepLeftovers(config: Config, state: ProcessState): Promise<void> {
  const isInside = (p: string) => isInsideRoots(state.roots.current(), p);
  const swept = await sweepOwnLeftovers(config.stateDir, isInside, { readonly: config.readonly });
  if (swept.length === 0) return;
  const removed = swept.filter((f) => f.outcome === 'removed');
  note(
    `fs-tools: start-up sweep: ${removed.length} leftover(s) of a killed fs-tools process removed` +
      `${swept.length > removed.length ? `, ${swept.length - removed.length} left${config.readonly ? ' (--readonly)' : ''}` : ''}:` +
      ` ${swept.map((f) => `${f.kind} ${f.path} (${f.outcome})`).join(', ')}`,
  );
}

/**
 * Rolls back what a process that died mid-transaction left behind (docs/tools.md), before serving anything. Each
 * journaled file is authorized as a live write would be; under --readonly nothing is applied.
 */
async function recoverTransactions(config: Config, state: ProcessState): Promise<void> {
  const policy = {
    roots: state.roots.current(),
    allowSecrets: config.allowSecrets,
    allowExecConfig: config.allowExecConfig,
    policy: config.policy,
    guarded: state.guarded,
  };
  state.recoveredTransactions.push(
    ...(await recoverJournals(config.stateDir, (p) => isInsideRoots(state.roots.current(), p), note, {
      readonly: config.readonly,
      authorize: (file) => recoveryRefusal(file, policy),
    })),
  );
}

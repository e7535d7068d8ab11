/**
 * One tool call, read as the data flow (docs/errors.md "Order of checks" steps 1–3, then the handler):
 *   lookup (unknown → UnknownToolError; disabled → TOOL_UNAVAILABLE) → validateArguments (VALIDATION)
 *   → gates for mutating calls (READONLY, then BUDGET_EXCEEDED) → wait for client roots → wait for the call's
 *   heavy-call slots (src/tools/heavy-calls.ts: busy, cancelled) → tool handler (policy steps 4–10 happen inside it)
 *   → budget spend → audit line.
 * Every throw goes through the one mapper, `toEnvelope`. Used by both the MCP server and `fs-tools call`.
 */
import { toEnvelope, type ErrorEnvelope } from '../errors/to-envelope.js';
import { ToolError } from '../errors/tool-error.js';
import { assertWritable, type BudgetTicket } from '../policy/gates.js';
import type { AnyTool, AuditFacts, MediaBlock, ToolContext, ToolOutcome } from '../tools/define-tool.js';
import { runHeavy } from '../tools/heavy-calls.js';
import { toolDefinition } from '../tools/tool-index.js';
import type { ProcessState } from './process-state.js';
import { validateArguments } from './validate-arguments.js';

/** Thrown for a tool name that does not exist (the MCP wiring answers JSON-RPC -32602). */
export class UnknownToolError extends Error {
  override readonly name = 'UnknownToolError';
  constructor(readonly tool: string) {
    super(`Unknown tool: ${tool}`);
  }
}

/** The outcome of one call: a success (structured + text) or an envelope. */
export type CallOutcome =
  | { ok: true; structured: Record<string, unknown>; text: string[]; media?: MediaBlock }
  | { ok: false; envelope: ErrorEnvelope };

/** True when `--tools` enables this tool (by name or group). */
export function isEnabled(tool: Pick<AnyTool, 'name' | 'group'>, state: Pick<ProcessState, 'config'>): boolean {
  const enabled = state.config.tools;
  return enabled === null || enabled.has(tool.name) || enabled.has(tool.group);
}

/** True when the tool mutates for every call (and so is left out of tools/list under --readonly). */
export function isAlwaysMutating(tool: Pick<AnyTool, 'mutating'>): boolean {
  return tool.mutating === true;
}

/**
 * The tools listed in this process, in registry order (docs/cli.md: --tools filters; --readonly drops always-mutating
 * file tools, while the issue tools stay and refuse their write actions). Takes the tools or their index entries
 * (src/tools/tool-index.ts), which carry the same name, group and always-mutating flag.
 */
export function listedTools<T extends Pick<AnyTool, 'name' | 'group' | 'mutating'>>(state: {
  config: ProcessState['config'];
  tools: readonly T[];
}): T[] {
  return state.tools.filter((t) => isEnabled(t, state) && !(state.config.readonly && isAlwaysMutating(t)));
}

/**
 * Runs one call, tracked for the graceful shutdown (src/server/shutdown.ts): once the process is closing, a call is
 * answered with IO_ERROR reason `shutting_down` and nothing runs; a call still running after the shutdown grace sees
 * its `signal` fire. `signal` is the request's AbortSignal, or a function that gives it (asked only if the call makes its
 * own signal: CallTracker.run).
 * @throws UnknownToolError for a name no tool has (a protocol error, not a tool result)
 */
export async function callTool(
  state: ProcessState,
  name: string,
  rawArgs: unknown,
  signal: AbortSignal | (() => AbortSignal),
): Promise<CallOutcome> {
  const entry = state.tools.find((t) => t.name === name);
  if (!entry) throw new UnknownToolError(name);
  if (state.calls.closing) {
    const refused = new ToolError('IO_ERROR', 'The server is shutting down; the call was not run.', {
      details: { reason: 'shutting_down' },
      suggestion: 'Start the server again and repeat the call.',
    });
    return { ok: false, envelope: toEnvelope(refused) };
  }
  // A server evaluates a tool's module at its first call (src/cli.ts), inside the tracked call.
  return await state.calls.run(signal, async (callSignal) =>
    runCall(state, await toolDefinition(entry), name, rawArgs, callSignal),
  );
}

async function runCall(
  state: ProcessState,
  tool: AnyTool,
  name: string,
  rawArgs: unknown,
  signal: () => AbortSignal,
): Promise<CallOutcome> {
  const started = performance.now();
  const run: CallRun = { args: undefined, audit: {}, ticket: undefined };
  let outcome: CallOutcome;
  try {
    const result = await executeTool(state, tool, name, rawArgs, signal, run);
    run.ticket?.spend();
    run.audit = result.audit ?? {};
    const ok: CallOutcome = {
      ok: true,
      structured: result.structured as Record<string, unknown>,
      text: Array.isArray(result.text) ? result.text : [result.text],
    };
    if (result.media) ok.media = result.media; // set, not spread: no object per call for the common case
    outcome = ok;
  } catch (error) {
    outcome = { ok: false, envelope: toEnvelope(error) };
    // A mutation that happened is charged even when the call then failed (src/mutation/pipeline.ts).
    if (mutationHappened(outcome.envelope.error)) run.ticket?.spend();
  }
  run.ticket?.release(); // a failed call gives its unit back (no-op after spend)
  if (!state.audit.enabled) return outcome; // no --audit-log (or it failed): no line to build
  recordAudit(state, tool, name, rawArgs, run, outcome, started);
  return outcome;
}

/** What one call gathered on its way, for the budget and the audit line (filled in as the steps pass). */
interface CallRun {
  /** The validated arguments; undefined when validation did not pass. */
  args: unknown;
  audit: AuditFacts;
  /** The mutation budget unit reserved for a mutating call (not for a dry run). */
  ticket: BudgetTicket | undefined;
}

/**
 * The steps of one call in their order: the tool enabled (TOOL_UNAVAILABLE), the arguments validated (VALIDATION),
 * the read-only gate and the mutation budget for a mutating call, the roots ready, then the handler in its heavy-call
 * slots (src/tools/heavy-calls.ts). Records the validated arguments and the budget ticket in `run` as it goes.
 * `signal` makes the call's AbortSignal on first use (CallTracker.run): the heavy-call wait and the tool's
 * `ctx.signal` ask for it; a call that needs neither makes none.
 * @throws whatever a step or the handler throws (the caller maps it to the one envelope)
 */
async function executeTool(
  state: ProcessState,
  tool: AnyTool,
  name: string,
  rawArgs: unknown,
  signal: () => AbortSignal,
  run: CallRun,
): Promise<ToolOutcome<unknown>> {
  if (!isEnabled(tool, state)) {
    throw new ToolError('TOOL_UNAVAILABLE', `${name} is disabled in this process (--tools).`, {
      details: { tool: name },
    });
  }
  const args = validateArguments(tool, rawArgs);
  run.args = args;
  tool.validate?.(args);
  const mutating = typeof tool.mutating === 'function' ? tool.mutating(args) : tool.mutating;
  const dryRun = tool.isDryRun?.(args) ?? false;
  if (mutating) {
    assertWritable(state.config.readonly, name, actionOf(args));
    if (!dryRun) run.ticket = await state.budget.reserve();
  }
  await state.roots.ready();
  // A heavy call waits here for its slots; the roots in force are taken once it starts.
  const classes = tool.heavy?.(args) ?? [];
  // A call of no heavy class starts at once (runHeavy would call it directly): one async frame less per small call.
  if (classes.length === 0) return await tool.run(args, toolContext(state, signal));
  return await runHeavy(classes, signal(), () => tool.run(args, toolContext(state, signal)), args);
}

/**
 * The ToolContext of one call: the process's state, with the policy inputs (roots snapshot) taken now; `signal` is
 * made when the tool first reads it (CallTracker.run), and `process` is built when read (list_allowed_directories).
 * A class whose getters live on its prototype: an object literal with a getter was a runtime call per call
 * (defining the accessor), about 2 % of a small read's CPU.
 */
class CallContext implements ToolContext {
  readonly config: ToolContext['config'];
  readonly roots: ToolContext['roots'];
  readonly policy: ToolContext['policy'];
  readonly hashes: ToolContext['hashes'];
  readonly budget: ToolContext['budget'];

  constructor(
    private readonly state: ProcessState,
    private readonly makeSignal: () => AbortSignal,
  ) {
    this.config = state.config;
    this.roots = state.roots;
    this.policy = {
      roots: state.roots.current(),
      allowSecrets: state.config.allowSecrets,
      allowExecConfig: state.config.allowExecConfig,
      policy: state.config.policy,
      guarded: state.guarded,
    };
    this.hashes = state.hashes;
    this.budget = state.budget;
  }

  get signal(): AbortSignal {
    return this.makeSignal();
  }

  get process(): ToolContext['process'] {
    const state = this.state;
    return {
      version: state.version,
      recoveredTransactions: state.recoveredTransactions,
      kernelWall: state.kernelWall,
      nativeReads: state.nativeReads,
    };
  }
}

/** The ToolContext of one call (see CallContext). */
function toolContext(state: ProcessState, signal: () => AbortSignal): ToolContext {
  return new CallContext(state, signal);
}

/** Writes the call's audit line (docs/security.md, audit log): facts only, never content. */
function recordAudit(
  state: ProcessState,
  tool: AnyTool,
  name: string,
  rawArgs: unknown,
  run: CallRun,
  outcome: CallOutcome,
  started: number,
): void {
  const { args, audit } = run;
  state.audit.record({
    time: new Date().toISOString(),
    tool: name,
    action: audit.action ?? actionOf(args ?? rawArgs),
    paths: audit.paths ?? pathsOf(tool, args, rawArgs),
    outcome: outcome.ok ? 'ok' : outcome.envelope.error.code,
    ...(audit.hash_before !== undefined ? { hash_before: audit.hash_before } : {}),
    ...(audit.hash_after !== undefined ? { hash_after: audit.hash_after } : {}),
    ...(audit.bytes !== undefined ? { bytes: audit.bytes } : {}),
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
  });
}

/**
 * True when a failed call's envelope says it changed something, or may have: an effect that failed part-way, a
 * partial rollback, an issue write sent whose outcome is unknown (recovery check_already_applied).
 */
function mutationHappened(error: { code: string; details: Record<string, unknown>; recovery: string }): boolean {
  return (
    error.details.mutation_applied === true ||
    error.code === 'ROLLBACK_PARTIAL' ||
    error.code === 'ROLLBACK_FAILED' ||
    error.recovery === 'check_already_applied'
  );
}

function actionOf(args: unknown): string | undefined {
  const action = (args as { action?: unknown } | undefined)?.action;
  return typeof action === 'string' ? action : undefined;
}

/** Path-like argument values, for the audit log when the handler did not report its own. */
function pathsOf(tool: AnyTool, args: unknown, rawArgs: unknown): string[] {
  if (args !== undefined && tool.pathsOf) {
    try {
      return tool.pathsOf(args);
    } catch {
      /* fall through */
    }
  }
  const out: string[] = [];
  const raw = rawArgs as Record<string, unknown> | undefined;
  if (raw && typeof raw === 'object') {
    for (const key of ['path', 'source', 'destination']) {
      if (typeof raw[key] === 'string') out.push(raw[key]);
    }
    if (Array.isArray(raw.paths)) for (const p of raw.paths) if (typeof p === 'string') out.push(p);
  }
  return out.slice(0, 100);
}

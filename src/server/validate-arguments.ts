/**
 * Argument validation (SPEC §2, §3.3 step 2): the tool's zod schema decides; every problem becomes a VALIDATION
 * envelope naming the field, what was expected and what was received, and for an unknown parameter the closest
 * valid name. The SDK's bare text never reaches the caller. Argument values are never echoed (they may be content).
 */
import type { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import type { AnyTool } from '../tools/define-tool.js';

/**
 * Control parameters that real clients inject into EVERY tool call's arguments, whatever the tool's input schema
 * says (SPEC §2: accepted and ignored, as a documented list; README "Clients"). Each entry: name → who sends it.
 * Only top-level keys that the tool itself does not declare are dropped; anything else unknown stays VALIDATION.
 */
export const CLIENT_CONTROL_PARAMETERS: Readonly<Record<string, string>> = Object.freeze({
  // Gemini CLI (packages/core/src/tools/tools.ts addWaitForPreviousParameter) adds this boolean to every tool's
  // parameters, the model sets it to sequence calls, and the CLI forwards it unchanged in tools/call.
  wait_for_previous: 'Gemini CLI: run this call after the previous ones of the turn',
});

/** The arguments without the client-injected control parameters the tool does not declare itself. */
function withoutClientControls(tool: AnyTool, args: Record<string, unknown>): Record<string, unknown> {
  const shape = tool.input.shape as Record<string, unknown>;
  let out = args;
  for (const key of Object.keys(CLIENT_CONTROL_PARAMETERS)) {
    if (Object.hasOwn(args, key) && !Object.hasOwn(shape, key)) {
      if (out === args) out = { ...args };
      delete out[key];
    }
  }
  return out;
}

/**
 * Parses raw arguments with the tool's input schema (after dropping CLIENT_CONTROL_PARAMETERS).
 * @returns the validated arguments (defaults applied)
 * @throws ToolError VALIDATION
 */
export function validateArguments(tool: AnyTool, raw: unknown): unknown {
  const args = raw === undefined || raw === null ? {} : raw;
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new ToolError('VALIDATION', `Arguments of ${tool.name} must be a JSON object, got ${typeOf(args)}.`, {
      details: { reason: 'wrong_type', field: null, expected: 'object', received: typeOf(args) },
    });
  }
  const own = withoutClientControls(tool, args as Record<string, unknown>);
  const parsed = tool.input.safeParse(own);
  if (parsed.success) return parsed.data;
  throw toValidationError(tool, own, parsed.error);
}

function toValidationError(tool: AnyTool, args: Record<string, unknown>, error: z.ZodError): ToolError {
  // An unknown key explains a "missing" one (file_path sent for path): report it first.
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0];
  const known = Object.keys(tool.input.shape as Record<string, unknown>);
  const field = issue.path.map(String).join('.') || null;
  const problems = error.issues.map((i) => ({ field: i.path.map(String).join('.') || null, code: i.code }));

  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0];
    const closest = closestName(key, known);
    const prefix = issue.path.length ? `${issue.path.join('.')}.` : '';
    return new ToolError('VALIDATION',
      `Unknown parameter '${prefix}${key}' for ${tool.name}${closest ? `; did you mean '${closest}'?` : '.'}`, {
        details: { reason: 'unknown_parameter', field: `${prefix}${key}`, closest, valid: known },
        suggestion: closest ? `Rename '${key}' to '${closest}'.` : `Valid parameters: ${known.join(', ')}.`,
      });
  }
  const received = valueAt(args, issue.path);
  if (issue.code === 'invalid_type' && received === undefined) {
    return new ToolError('VALIDATION', `Missing required parameter '${field}' for ${tool.name}.`, {
      details: { reason: 'missing_field', field, expected: issue.expected },
      suggestion: `Pass '${field}' (${issue.expected}).`,
    });
  }
  if (issue.code === 'invalid_type') {
    return new ToolError('VALIDATION',
      `Parameter '${field}' of ${tool.name} must be ${issue.expected}, got ${typeOf(received)}.`, {
        details: { reason: 'wrong_type', field, expected: issue.expected, received: typeOf(received) },
      });
  }
  return new ToolError('VALIDATION', `Parameter '${field ?? '(arguments)'}' of ${tool.name} is invalid: ${issue.message}.`, {
    details: { reason: 'invalid_value', field, problem: issue.code, issues: problems.slice(0, 10) },
  });
}

function valueAt(args: Record<string, unknown>, path: readonly PropertyKey[]): unknown {
  let v: unknown = args;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number' && Number.isInteger(v)) return 'integer';
  return typeof v;
}

/** The valid name closest to `name` (case-insensitive edit distance ≤ max(2, len/3)), or null. */
export function closestName(name: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  const lower = name.toLowerCase();
  for (const c of candidates) {
    const cl = c.toLowerCase();
    let d = editDistance(lower, cl);
    // file_path → path, filePath → path: a candidate contained in the name is a strong hint.
    if (lower.includes(cl) || cl.includes(lower)) d = Math.min(d, Math.abs(lower.length - cl.length) / 2);
    if (lower.replace(/[_-]/g, '') === cl.replace(/[_-]/g, '')) d = 0;
    if (d < bestDistance) { bestDistance = d; best = c; }
  }
  return best !== null && bestDistance <= Math.max(2, Math.ceil(name.length / 3)) ? best : null;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}

/**
 * Argument validation (docs/tools.md step 2): the tool's zod schema decides; every problem becomes a VALIDATION
 * envelope naming the field, what was expected and what was received, and for an unknown parameter the closest
 * valid name. The SDK's bare text never reaches the caller. Argument values are never echoed (they may be content).
 */
import type { z } from 'zod';
import { ToolError } from '../errors/tool-error.js';
import type { AnyTool } from '../tools/define-tool.js';

/**
 * Control parameters that real clients inject into EVERY tool call's arguments, whatever the tool's input schema
 * says (docs/tools.md: accepted and ignored, as a documented list; README "Clients"). Each entry: name → who sends it.
 * Only top-level keys that the tool itself does not declare are dropped; anything else unknown stays VALIDATION.
 */
export const CLIENT_CONTROL_PARAMETERS: Readonly<Record<string, string>> = Object.freeze({
  // Gemini CLI (packages/core/src/tools/tools.ts addWaitForPreviousParameter) adds this boolean to every tool's
  // parameters, the model sets it to sequence calls, and the CLI forwards it unchanged in tools/call.
  wait_for_previous: 'Gemini CLI: run this call after the previous ones of the turn',
});

/** The arguments without the client-injected control parameters the tool does not declare itself. */
function withoutClientControls(tool: AnyTool, args: Record<string, unknown>): Record<string, unknown> {
  const shape: Record<string, unknown> = (tool.input as z.ZodObject).shape;
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
  if (raw instanceof RefusedArguments) throw raw.error;
  const args = raw === undefined || raw === null ? {} : raw;
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new ToolError('VALIDATION', `Arguments of ${tool.name} must be a JSON object, got ${typeOf(args)}.`, {
      details: { reason: 'wrong_type', field: null, expected: 'object', received: typeOf(args) },
    });
  }
  const shape = argumentShapeError(tool.name, args);
  if (shape) throw shape;
  const own = withoutClientControls(tool, args as Record<string, unknown>);
  const parsed = (tool.input as z.ZodObject).safeParse(own);
  if (parsed.success) return parsed.data;
  throw toValidationError(tool, own, parsed.error);
}

/**
 * How deep an argument value may nest (objects and arrays; the arguments object is level 1). The deepest schema of any
 * tool is a few levels (edits[].old_text, expected_hashes{}); docs/security.md "Bounded work".
 */
export const MAX_ARGUMENT_DEPTH = 64;
/** Most object keys in one call's arguments, at every depth together (docs/security.md "Bounded work"). */
export const MAX_ARGUMENT_KEYS = 10_000;
/** Unknown parameters given a closest valid name (each costs an edit-distance search); the rest get none. */
const MAX_NAMED_UNKNOWN = 20;

/**
 * Refuses arguments nested deeper than MAX_ARGUMENT_DEPTH or holding more than MAX_ARGUMENT_KEYS object keys, before
 * anything recursive (schema parsing, cloning, the closest-name search) touches them: one iterative pass with an
 * explicit stack that stops at the first excess, so its cost is bounded by the line the value came from (at most the
 * stdio guard's line limit) and nothing can overflow the call stack (docs/security.md "Bounded work").
 * @throws ToolError VALIDATION reason too_deep (details.limit, details.field: the path to the first too-deep value,
 *   cut to 10 segments) or too_many_keys (details.limit)
 */
export function argumentShapeError(toolName: string, args: unknown): ToolError | null {
  if (args === null || typeof args !== 'object') return null;
  try {
    assertBoundedShape(toolName, args);
    return null;
  } catch (error) {
    if (error instanceof ToolError) return error;
    throw error;
  }
}

/**
 * Arguments refused by `argumentShapeError` before the protocol layer looked at them (src/server/create-server.ts
 * replaces such a call's arguments with this): `validateArguments` throws the error it carries, at the step where it
 * would have found it itself (after tool lookup).
 */
export class RefusedArguments {
  constructor(readonly error: ToolError) {}
}

function assertBoundedShape(toolName: string, args: object): void {
  // Each pending value with its depth and the top-level parameter it sits under (named in a too_deep envelope).
  const stack: Array<{ value: object; depth: number; field: string }> = [];
  let keys = 0;
  const visit = (value: object, depth: number, field: string | null): void => {
    if (Array.isArray(value)) {
      for (const child of value as unknown[]) push(child, depth, field ?? '');
      return;
    }
    const names = Object.keys(value);
    keys += names.length;
    if (keys > MAX_ARGUMENT_KEYS) {
      throw new ToolError(
        'VALIDATION',
        `Arguments of ${toolName} hold more than ${MAX_ARGUMENT_KEYS} object keys; nothing was done.`,
        {
          details: { reason: 'too_many_keys', field: null, limit: MAX_ARGUMENT_KEYS },
          suggestion: `Send only the parameters ${toolName} declares (see its input schema).`,
        },
      );
    }
    for (const name of names) push((value as Record<string, unknown>)[name], depth, field ?? name);
  };
  const push = (child: unknown, depth: number, field: string): void => {
    if (child === null || typeof child !== 'object') return;
    if (depth + 1 > MAX_ARGUMENT_DEPTH) {
      throw new ToolError(
        'VALIDATION',
        `Parameter '${field.slice(0, 64)}' of ${toolName} nests deeper than ${MAX_ARGUMENT_DEPTH} levels; nothing was done.`,
        {
          details: { reason: 'too_deep', field: field.slice(0, 64), limit: MAX_ARGUMENT_DEPTH },
          suggestion: `Pass '${field.slice(0, 64)}' as ${toolName}'s input schema declares it.`,
        },
      );
    }
    stack.push({ value: child, depth: depth + 1, field });
  };
  visit(args, 1, null);
  while (stack.length > 0) {
    const { value, depth, field } = stack.pop()!;
    visit(value, depth, field);
  }
}

function toValidationError(tool: AnyTool, args: Record<string, unknown>, error: z.ZodError): ToolError {
  const unknown = unknownParameters(tool, args, error);
  // An unknown key explains a "missing" one (file_path sent for path): unknown keys are reported first, all of them.
  if (unknown.length > 0) {
    const first = unknown[0];
    const listed = unknown.slice(0, MAX_NAMED_UNKNOWN);
    const more =
      unknown.length > 1
        ? ` (and ${unknown.length - 1} more unknown: ${listed
            .slice(1)
            .map((u) => `'${u.field}'`)
            .join(', ')}${unknown.length > listed.length ? ', …' : ''})`
        : '';
    const renames = unknown.filter((u) => u.closest !== null).map((u) => `'${u.field}' to '${u.closest}'`);
    return new ToolError(
      'VALIDATION',
      `Unknown parameter '${first.field}' for ${tool.name}${first.closest ? `; did you mean '${first.closest}'?` : '.'}${more}`,
      {
        details: {
          reason: 'unknown_parameter',
          field: first.field,
          closest: first.closest,
          valid: first.valid,
          ...(unknown.length > 1 ? { unknown: listed.map(({ field, closest }) => ({ field, closest })) } : {}),
          ...(unknown.length > listed.length ? { unknown_count: unknown.length } : {}),
        },
        suggestion:
          renames.length > 0
            ? `Rename ${renames.join(', ')}${unknown.length > renames.length ? '; remove the other unknown parameters' : ''}.`
            : `Remove ${listed.map((u) => `'${u.field}'`).join(', ')}${unknown.length > listed.length ? ' and the other unknown parameters' : ''}; valid parameters here: ${first.valid.join(', ')}.`,
      },
    );
  }
  const issue = error.issues[0];
  const field = issue.path.map(String).join('.') || null;
  const problems = error.issues.map((i) => ({ field: i.path.map(String).join('.') || null, code: i.code }));
  const received = valueAt(args, issue.path);
  if (issue.code === 'invalid_type' && received === undefined) {
    return new ToolError('VALIDATION', `Missing required parameter '${field}' for ${tool.name}.`, {
      details: { reason: 'missing_field', field, expected: issue.expected },
      suggestion: `Pass '${field}' (${issue.expected}).`,
    });
  }
  if (issue.code === 'invalid_type') {
    return new ToolError(
      'VALIDATION',
      `Parameter '${field}' of ${tool.name} must be ${issue.expected}, got ${typeOf(received)}.`,
      {
        details: { reason: 'wrong_type', field, expected: issue.expected, received: typeOf(received) },
      },
    );
  }
  return new ToolError(
    'VALIDATION',
    `Parameter '${field ?? '(arguments)'}' of ${tool.name} is invalid: ${issue.message}.`,
    {
      details: { reason: 'invalid_value', field, problem: issue.code, issues: problems.slice(0, 10) },
    },
  );
}

/** One unknown parameter: its dotted path, the name to use instead (or null), and the valid names at its depth. */
interface UnknownParameter {
  field: string;
  closest: string | null;
  valid: string[];
}

/**
 * Every unknown parameter at every depth (top level, inside `edits[]`, …), in the order zod reports them, each with
 * the closest valid name at its own depth: from PARAMETER_ALIASES first, then by edit distance. A suggestion is kept
 * only when following it cannot fail again on that name: the name is not already given, no other unknown key claims
 * it, and the arguments with every suggested rename applied pass the schema at that field.
 */
function unknownParameters(tool: AnyTool, args: Record<string, unknown>, error: z.ZodError): UnknownParameter[] {
  const found: Array<UnknownParameter & { at: PropertyKey[]; key: string }> = [];
  for (const issue of error.issues) {
    if (issue.code !== 'unrecognized_keys') continue;
    const valid = objectKeysAt(tool.input as z.ZodObject, issue.path);
    const present = valueAt(args, issue.path) as Record<string, unknown> | undefined;
    const claimed = new Set<string>();
    for (const key of issue.keys) {
      const prefix = issue.path.length ? `${issue.path.map(String).join('.')}.` : '';
      // Bounded: a closest name only for the first MAX_NAMED_UNKNOWN unknown keys of the call.
      let closest = found.length < MAX_NAMED_UNKNOWN ? closestName(key, valid) : null;
      if (closest !== null && (Object.hasOwn(present ?? {}, closest) || claimed.has(closest))) closest = null;
      if (closest !== null) claimed.add(closest);
      found.push({ field: `${prefix}${key}`, closest, valid, at: [...issue.path], key });
    }
  }
  // Apply every suggested rename and parse again: a rename whose field still fails (a wrong type, a value out of
  // range) is not offered, so following the envelope never leads to another VALIDATION on the same name.
  const renamed = structuredClone(args);
  for (const u of found) {
    const holder = valueAt(renamed, u.at) as Record<string, unknown> | undefined;
    if (!holder || typeof holder !== 'object') continue;
    if (u.closest !== null) holder[u.closest] = holder[u.key];
    delete holder[u.key];
  }
  const trial = (tool.input as z.ZodObject).safeParse(renamed);
  if (!trial.success) {
    const failing: string[] = trial.error.issues.map((i) => i.path.map(String).join('.'));
    for (const u of found) {
      if (u.closest === null) continue;
      const target = [...u.at.map(String), u.closest].join('.');
      if (failing.some((f) => f === target || f.startsWith(`${target}.`))) u.closest = null;
    }
  }
  return found.map(({ field, closest, valid }) => ({ field, closest, valid }));
}

/** The property names of the object schema at `path` inside `schema` (through arrays, optionals and defaults). */
function objectKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let node: unknown = schema;
  const unwrap = () => {
    for (let guard = 0; guard < 10; guard++) {
      const n = node as { unwrap?: () => unknown; def?: { type?: string; innerType?: unknown } };
      if (
        n.def?.type === 'optional' ||
        n.def?.type === 'nullable' ||
        n.def?.type === 'default' ||
        n.def?.type === 'prefault'
      ) {
        node = n.def.innerType ?? n.unwrap?.();
      } else return;
    }
  };
  for (const segment of path) {
    unwrap();
    const n = node as {
      shape?: Record<string, unknown>;
      element?: unknown;
      def?: { type?: string; valueType?: unknown };
    };
    if (typeof segment === 'number' && n.element !== undefined) node = n.element;
    else if (n.shape && typeof segment === 'string' && segment in n.shape) node = n.shape[segment];
    else if (n.def?.type === 'record') node = n.def.valueType;
    else return [];
  }
  unwrap();
  const shape = (node as { shape?: Record<string, unknown> }).shape;
  return shape ? Object.keys(shape) : [];
}

/**
 * Names agents send for fs-tools' parameters (from other servers' and clients' tools: Claude Code's Read/Edit/Write,
 * Codex, the official filesystem server, editors' tool sets), checked before edit distance. Each maps to our name
 * where that name is valid at the same depth; an alias that is itself a valid name there is never renamed.
 */
export const PARAMETER_ALIASES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  path: [
    'file',
    'filepath',
    'file_path',
    'filename',
    'file_name',
    'target_file',
    'absolute_path',
    'dir',
    'directory',
    'dir_path',
    'directory_path',
    'folder',
  ],
  paths: ['files', 'file_paths', 'filepaths', 'filenames'],
  old_text: ['old_string', 'oldtext', 'old_str', 'oldstring', 'search', 'find', 'original', 'old'],
  new_text: ['new_string', 'newtext', 'new_str', 'newstring', 'replace', 'replacement', 'new'],
  replace_all: ['replaceall', 'all', 'global', 'all_occurrences'],
  source: ['from', 'src', 'source_path', 'old_path', 'oldpath'],
  destination: ['to', 'dest', 'dst', 'target', 'destination_path', 'target_path', 'new_path', 'newpath'],
  start_line: ['line', 'start', 'from_line', 'line_start', 'startline', 'line_number', 'first_line'],
  end_line: ['end', 'to_line', 'line_end', 'endline', 'last_line', 'stop'],
  content: ['text', 'contents', 'file_text', 'filetext', 'data'],
  patch: ['diff', 'unified_diff', 'patch_text'],
  expected_hash: ['hash', 'sha', 'sha256', 'content_hash', 'base_hash', 'if_match'],
  expected_hashes: ['hashes', 'content_hashes'],
  context_lines: ['context', 'context_line_count'],
  max_results: ['max_count', 'max_matches', 'head_limit'],
  create_dirs: ['mkdir', 'parents', 'create_parents', 'create_directories', 'mkdirs'],
  overwrite: ['force', 'replace_existing', 'clobber'],
  dry_run: ['dryrun', 'preview', 'check'],
});

/** Alias (lower-case, `-`/`_` insensitive) → our name. */
const ALIAS_INDEX: ReadonlyMap<string, string> = new Map(
  Object.entries(PARAMETER_ALIASES).flatMap(([name, aliases]) => aliases.map((a) => [normalizeName(a), name] as const)),
);

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '');
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

/**
 * The valid name closest to `name`, or null: a known alias of a candidate first (PARAMETER_ALIASES), else the
 * candidate at the smallest case-insensitive edit distance, when that is ≤ max(2, len/3).
 */
export function closestName(name: string, candidates: readonly string[]): string | null {
  const aliased = ALIAS_INDEX.get(normalizeName(name));
  if (aliased !== undefined && candidates.includes(aliased)) return aliased;
  let best: string | null = null;
  let bestDistance = Infinity;
  const lower = name.toLowerCase();
  for (const c of candidates) {
    const cl = c.toLowerCase();
    let d = editDistance(lower, cl);
    // file_path → path, filePath → path: a candidate contained in the name is a strong hint.
    if (lower.includes(cl) || cl.includes(lower)) d = Math.min(d, Math.abs(lower.length - cl.length) / 2);
    if (lower.replace(/[_-]/g, '') === cl.replace(/[_-]/g, '')) d = 0;
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
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

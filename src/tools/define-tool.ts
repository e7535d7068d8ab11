/**
 * The shape of one tool: contract on top (schemas, description, annotations), handler below. One zod
 * schema gives the advertised JSON Schema, the validation and the handler's argument types. Handlers get validated
 * arguments and a ToolContext and return `{ structured, text }`; they throw ToolError (or let Node errors bubble)
 * and never build an envelope.
 */
import type { z } from 'zod';
import type { ToolGroup } from '../config.js';
import type { ToolContext } from '../mutation/context.js';
import type { HeavyClass } from './heavy-calls.js';

export type { ToolContext } from '../mutation/context.js';

/** MCP tool annotations; must be honest: each hint reflects the most dangerous action (test/e2e/protocol.test.ts holds an independent table). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** Facts a handler reports for the audit log (docs/security.md). Never content. */
export interface AuditFacts {
  paths?: string[];
  action?: string;
  hash_before?: string | null;
  hash_after?: string | null;
  bytes?: number;
}

/** A successful handler result. `text` is what a model reads; `structured` satisfies the output schema. */
export interface ToolOutcome<O> {
  structured: O;
  /** Text content blocks; the first holds the main text (raw file content for reads). */
  text: string | string[];
  /** An image or audio content block (base64 `data`), sent after the text blocks (read_media). */
  media?: MediaBlock;
  audit?: AuditFacts;
}

/** An MCP image or audio content block. */
export interface MediaBlock {
  type: 'image' | 'audio';
  /** The file's bytes, base64. */
  data: string;
  mimeType: string;
}

/** One tool. `I` and `O` are zod object schemas. */
export interface ToolDefinition<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  /** Wire name, snake_case. */
  name: string;
  title: string;
  /** What it does, its limits and how it fails (the only documentation a model sees besides field descriptions). */
  description: string;
  group: ToolGroup;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** True (or true for these arguments) when the call mutates files or issues; gates READONLY and the budget. */
  mutating: boolean | ((args: z.output<I>) => boolean);
  /**
   * Tool-specific argument checks that belong to docs/errors.md "Order of checks" step 2 (after the schema, before the gates), e.g.
   * apply_patch's BEGIN_PATCH and unparseable-diff checks. Throws ToolError.
   */
  validate?: (args: z.output<I>) => void;
  /** True when a successful call with these arguments should not count against the budget (dry runs). */
  isDryRun?: (args: z.output<I>) => boolean;
  /**
   * The heavy-call classes a call with these arguments holds while it runs (src/tools/heavy-calls.ts): `walk` when it
   * walks a tree, `git` when it starts git, `forge` when it talks to a forge. The server takes the slots before `run`
   * and frees them after (src/server/call-tool.ts); absent or empty: the call never waits.
   */
  heavy?: (args: z.output<I>) => readonly HeavyClass[];
  /** Requested paths named by these arguments (audit log). */
  pathsOf?: (args: z.output<I>) => string[];
  run(args: z.output<I>, ctx: ToolContext): Promise<ToolOutcome<z.output<O>>>;
}

/** Identity helper that keeps the schema types attached to the handler. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  def: ToolDefinition<I, O>,
): ToolDefinition<I, O> {
  return def;
}

/**
 * Erased tool type for registries. `any` is deliberate: a handler's parameters are contravariant, so tools with
 * different input schemas share no common non-`any` supertype. It is safe because arguments reach `run`, `validate`,
 * `mutating` and `pathsOf` only after `validateArguments` (src/server/validate-arguments.ts) parsed them with that same
 * tool's `input` schema; code that reads `input`/`output` of an AnyTool widens them to `z.ZodObject` first.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- justified above (contravariant handler parameters)
export type AnyTool = ToolDefinition<any, any>;

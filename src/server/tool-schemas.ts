/**
 * The advertised form of each tool (docs/tools.md): name, title, description, JSON Schemas generated from the same zod
 * schemas that validate, and annotations. Deterministic: registry order, stable key order. The build generates every
 * tool's entry once with this module (scripts/advertised-tools.mjs) and embeds them, so the program returns them
 * instead of generating them at each process's first tools/list (docs/benchmarks.md "Server start-up").
 */
import { z } from 'zod';
import { EnvelopeErrorSchema } from '../errors/envelope-schema.js';
import type { AnyTool } from '../tools/define-tool.js';
import { toolDefinition, type ToolEntry } from '../tools/tool-index.js';

/** One entry of tools/list. */
export interface AdvertisedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  outputSchema: { type: 'object'; [key: string]: unknown };
  annotations: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
}

// Not process state (test/architecture.test.ts allow list): a memo of each tool's declaration (immutable input).
const cache = new WeakMap<AnyTool, AdvertisedTool>();

/**
 * Every tool's entry as this build generated it from the same declarations (scripts/advertised-tools.mjs), JSON by
 * tool name; undefined where src/ runs unbundled (the unit tests), which generate them.
 */
declare const FS_TOOLS_ADVERTISED: string | undefined;

/**
 * The built entries, parsed on first use. Not process state (test/architecture.test.ts allow list): a lazy constant.
 */
let builtEntries: Readonly<Record<string, AdvertisedTool>> | undefined;

/** The entry the build generated for a tool of this name, if any. */
function builtEntry(name: string): AdvertisedTool | undefined {
  if (typeof FS_TOOLS_ADVERTISED === 'undefined') return undefined;
  builtEntries ??= JSON.parse(FS_TOOLS_ADVERTISED) as Record<string, AdvertisedTool>;
  return Object.hasOwn(builtEntries, name) ? builtEntries[name] : undefined;
}

/**
 * JSON Schema for a zod schema, in the subset that means the same in draft-07 and 2020-12 and without `$schema`, so
 * every client's validator accepts it: a schema without `$schema` is 2020-12 for a 2026-07-28 client and draft-07 for
 * a 1.x SDK client's Ajv.
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = fullJsonSchema(schema, io);
  return io === 'input' ? (advertisedInput(out) as Record<string, unknown>) : out;
}

/** The portable JSON Schema of a zod schema with every keyword kept (defaults, bounds), before advertisedInput. */
function fullJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return portable(neutralizeTuples(json)) as Record<string, unknown>;
}

/**
 * A tool's input schema as the server enforces it: the advertised one plus the keywords tools/list leaves out
 * (defaults, bounds, patterns: UNADVERTISED_INPUT_KEYWORDS). The source of docs/tools.md and `fs-tools help TOOL`.
 */
export function documentedInputSchema(tool: AnyTool): { type: 'object'; [key: string]: unknown } {
  return { type: 'object', ...fullJsonSchema(tool.input as z.ZodObject, 'input') };
}

/**
 * Rebuilds a JSON Schema tree bottom-up: every object node is copied with its children rewritten first, then handed
 * to `rewrite`, which may change the copy in place (arrays are mapped, other values kept).
 */
function rewriteSchemaNodes(node: unknown, rewrite: (out: Record<string, unknown>) => void): unknown {
  if (Array.isArray(node)) return node.map((n) => rewriteSchemaNodes(n, rewrite));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = rewriteSchemaNodes(value, rewrite);
  rewrite(out);
  return out;
}

/**
 * Spellings every client's schema handling takes the same way (MCP Inspector `--strict` portability lint, Gemini's
 * single-`type` function declarations, Codex's schema sanitizer):
 *   - `type: [a, b]` (zod's nullable primitives) becomes `anyOf: [{type: a}, {type: b}]`, the same contract;
 *   - zod's implicit safe-integer bounds (±2^53-1) are dropped: they constrain nothing a JSON number can carry and
 *     cost 50 bytes per integer field in every declaration;
 *   - an empty schema as `additionalProperties` (a free-form record) becomes `true`, the same contract.
 */
function portable(node: unknown): unknown {
  return rewriteSchemaNodes(node, (out) => {
    if (Array.isArray(out.type)) {
      const types = out.type as string[];
      delete out.type;
      out.anyOf = types.map((type) => ({ type }));
    }
    if (out.minimum === -Number.MAX_SAFE_INTEGER) delete out.minimum;
    if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
    const extra = out.additionalProperties;
    if (extra !== null && typeof extra === 'object' && Object.keys(extra).length === 0) out.additionalProperties = true;
  });
}

/**
 * Keywords an input schema does not advertise. Codex drops exactly these before its model sees a schema,
 * so a model there never sees them anyway; every one that matters to a model (a default, a count or size limit, a
 * format) is in the field's description instead (test/server/declarations.test.ts checks the defaults), and the
 * server still enforces all of them (the zod schema validates every call: VALIDATION). Advertising them twice, once
 * as keywords and once in words, cost a quarter of the declarations' bytes on every turn. `additionalProperties:
 * false` goes too: an unknown parameter is still VALIDATION with the closest name, which tells a model more.
 */
const UNADVERTISED_INPUT_KEYWORDS = new Set([
  'default',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'propertyNames',
  'additionalProperties',
]);

function advertisedInput(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(advertisedInput);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'properties' && value && typeof value === 'object') {
      // Property NAMES are kept whatever they are; only their schemas are trimmed.
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, advertisedInput(v)]),
      );
    } else if (key === 'items' && value && typeof value === 'object' && !Array.isArray(value)) {
      // An array's own description says what its items are.
      const { description: _d, ...item } = value as Record<string, unknown>;
      out[key] = advertisedInput(item);
    } else if (!UNADVERTISED_INPUT_KEYWORDS.has(key)) {
      out[key] = advertisedInput(value);
    }
  }
  return out;
}

/**
 * The envelope's `error` member as JSON Schema (docs/errors.md), for output schemas that admit the envelope. Not
 * process state (test/architecture.test.ts allow list): a lazy constant.
 */
let envelopeErrorJson: Record<string, unknown> | undefined;

/**
 * A tool's output schema that admits both its success shape and the error envelope (docs/tools.md). A
 * text-only client (Gemini CLI) parses the first text block of a result without structuredContent (every isError
 * result) as JSON and validates it against the output schema, so a schema that admits only successes turns every
 * envelope into "-32602 Structured content does not match". Spelled without duplicating the success properties:
 * `error` is one more property, and `anyOf` requires either every required success field or `error`.
 */
export function outputSchemaOf(tool: AnyTool): { type: 'object'; [key: string]: unknown } {
  envelopeErrorJson ??= toJsonSchema(EnvelopeErrorSchema, 'output');
  const { type: _type, required, properties, ...rest } = toJsonSchema(tool.output as z.ZodObject, 'output');
  return {
    type: 'object',
    properties: { ...(properties as Record<string, unknown>), error: envelopeErrorJson },
    ...rest,
    anyOf: [{ required: (required as string[] | undefined) ?? [] }, { required: ['error'] }],
  };
}

/**
 * Rewrites draft-07 tuple arrays (`items: [a, b]` + `additionalItems`), which 2020-12 rejects ("items must be an
 * object or boolean"), as `items: a` (or `anyOf` of the distinct positions) with the length kept in
 * minItems/maxItems. Identical positions (e.g. `[int, int]` ranges) lose nothing.
 */
function neutralizeTuples(node: unknown): unknown {
  return rewriteSchemaNodes(node, (out) => {
    if (Array.isArray(out.items)) {
      const positions = out.items as unknown[];
      const rest = out.additionalItems;
      delete out.additionalItems;
      const variants = [...positions, ...(rest !== undefined && rest !== false ? [rest === true ? {} : rest] : [])];
      const distinct = [...new Map(variants.map((v) => [JSON.stringify(v), v])).values()];
      out.items = distinct.length === 1 ? distinct[0] : { anyOf: distinct };
      if (rest === false && out.maxItems === undefined) out.maxItems = positions.length;
      if (out.minItems === undefined) out.minItems = positions.length;
    }
  });
}

/** The tools/list entry of a tool. */
export function advertise(tool: AnyTool): AdvertisedTool {
  let entry = cache.get(tool);
  if (!entry) {
    entry = builtEntry(tool.name) ?? {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: { type: 'object', ...toJsonSchema(tool.input as z.ZodObject, 'input') },
      outputSchema: outputSchemaOf(tool),
      annotations: { title: tool.title, ...tool.annotations },
    };
    cache.set(tool, entry);
  }
  return entry;
}

/**
 * The tools/list entry of a tool as a process holds it: the build's entry by name when there is one, so a server lists
 * its tools without evaluating their modules (src/cli.ts); otherwise `advertise` of its definition.
 */
export async function advertiseEntry(entry: ToolEntry): Promise<AdvertisedTool> {
  return ('load' in entry ? builtEntry(entry.name) : undefined) ?? advertise(await toolDefinition(entry));
}

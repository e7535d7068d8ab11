/**
 * The advertised form of each tool (SPEC §2): name, title, description, JSON Schemas generated from the same zod
 * schemas that validate, and annotations. Deterministic: registry order, stable key order.
 */
import { z } from 'zod';
import type { AnyTool } from '../tools/define-tool.js';

/** One entry of tools/list. */
export interface AdvertisedTool {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  outputSchema: { type: 'object'; [key: string]: unknown };
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

const cache = new WeakMap<AnyTool, AdvertisedTool>();

/**
 * JSON Schema for a zod schema, in the subset that means the same in draft-07 and 2020-12 and without `$schema`, so
 * every client's validator accepts it: a schema without `$schema` is 2020-12 for a 2026-07-28 client and draft-07 for
 * a 1.x SDK client's Ajv.
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return neutralizeTuples(json) as Record<string, unknown>;
}

/**
 * Rewrites draft-07 tuple arrays (`items: [a, b]` + `additionalItems`), which 2020-12 rejects ("items must be an
 * object or boolean"), as `items: a` (or `anyOf` of the distinct positions) with the length kept in
 * minItems/maxItems. Identical positions (e.g. `[int, int]` ranges) lose nothing.
 */
function neutralizeTuples(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(neutralizeTuples);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) out[key] = neutralizeTuples(value);
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
  return out;
}

/** The tools/list entry of a tool. */
export function advertise(tool: AnyTool): AdvertisedTool {
  let entry = cache.get(tool);
  if (!entry) {
    entry = {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: { type: 'object', ...toJsonSchema(tool.input, 'input') },
      outputSchema: { type: 'object', ...toJsonSchema(tool.output, 'output') },
      annotations: { title: tool.title, ...tool.annotations },
    };
    cache.set(tool, entry);
  }
  return entry;
}

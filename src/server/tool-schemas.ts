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

/** JSON Schema (draft-07, without `$schema`, so every client's validator accepts it) for a zod schema. */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
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

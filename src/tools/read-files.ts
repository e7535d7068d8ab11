/**
 * read_files (docs/tools.md): several reads in one call; each path gets its result or its own envelope (built by the one
 * mapper), so one bad path never hides the others.
 */
import { z } from 'zod';
import { toEnvelope } from '../errors/to-envelope.js';
import { EnvelopeErrorSchema } from '../errors/envelope-schema.js';
import { PathArg, ReadOptionsShape } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { compactRead, factsNote, ReadResultShape } from './read-file.js';
import { readOne } from './read-one.js';
import { jsonBytes, jsonStringBytes, ResponseBudget } from './response-budget.js';
import { quoteName } from './text-safe.js';

/** Most paths per call. */
export const MAX_READ_FILES = 100;

export const ReadFilesInput = z.strictObject({
  paths: z.array(PathArg).min(1).max(MAX_READ_FILES), // the description says "up to 100"
  ...ReadOptionsShape,
});

export const ReadFilesOutput = z.object({
  results: z.array(
    z.union([
      z.object({ path: z.string().describe('As requested'), ok: z.literal(true), result: z.object(ReadResultShape) }),
      z.object({ path: z.string().describe('As requested'), ok: z.literal(false), error: EnvelopeErrorSchema }),
    ]),
  ),
  succeeded: z.number().int(),
  failed: z.number().int(),
  truncated: z.boolean().describe('True when the response budget left paths unread: see remaining_paths'),
  remaining_paths: z
    .array(z.string())
    .describe('Paths not read in this call (response budget); pass them as paths to continue'),
});

export const readFiles = defineTool({
  name: 'read_files',
  title: 'Read several files',
  description:
    `Read up to ${MAX_READ_FILES} files with read_file's options: each result {ok, result} or {ok: false, error} ` +
    "(that path's envelope); fails only on bad arguments. Past 3 MiB: the rest in remaining_paths (truncated).",
  group: 'fs-read',
  input: ReadFilesInput,
  output: ReadFilesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => a.paths,
  // A heavy call: the server runs it through the heavy-call queue (src/tools/heavy-calls.ts).
  heavy: () => ['walk'],
  async run(args, ctx) {
    const { paths, ...options } = args;
    const results: z.infer<typeof ReadFilesOutput>['results'] = [];
    const text: string[] = [];
    // The response budget (docs/tools.md) is charged entry by entry (structured entry + its text, serialized). An entry
    // that does not fit is left for the next call (remaining_paths), except the first, which is cut to fit (its own
    // truncated + continuation), so every call makes progress.
    const budget = new ResponseBudget();
    budget.charge(2048 + jsonBytes(paths) / 2); // the fixed fields and the trailing note
    let stop = paths.length;
    for (let i = 0; i < paths.length; i++) {
      const requested = paths[i];
      let entry: (typeof results)[number];
      let piece: string;
      const within = {
        maxCost: Math.max(0, budget.remaining - 2 * jsonStringBytes(requested) - 1024),
        cutByBudget: false,
        probeOnly: results.length > 0,
      };
      try {
        const result = await readOne(requested, options, ctx, within);
        entry = { path: requested, ok: true, result: compactRead(result) };
        piece = `==> ${quoteName(requested)} <==\n${result.content}\n${factsNote(result)}`;
      } catch (error) {
        const envelope = toEnvelope(error);
        entry = { path: requested, ok: false, error: envelope.error };
        piece = `==> ${quoteName(requested)} <==\n${JSON.stringify(envelope)}`;
      }
      const cost = jsonBytes(entry) + jsonStringBytes(piece) + 2;
      if (results.length > 0 && (within.cutByBudget || !budget.take(cost))) {
        stop = i;
        break;
      }
      budget.charge(cost);
      results.push(entry);
      text.push(piece);
    }
    const remaining = paths.slice(stop);
    if (remaining.length > 0) {
      text.push(
        `[fs-tools: response budget reached after ${results.length} of ${paths.length} paths; ` +
          `call read_files again with paths = remaining_paths (${remaining.length})]`,
      );
    }
    const succeeded = results.filter((r) => r.ok).length;
    return {
      structured: {
        results,
        succeeded,
        failed: results.length - succeeded,
        truncated: remaining.length > 0,
        remaining_paths: remaining,
      },
      text: text.join('\n'),
      audit: { paths },
    };
  },
});

/**
 * read_files (SPEC §6): several reads in one call; each path gets its result or its own envelope (built by the one
 * mapper), so one bad path never hides the others.
 */
import { z } from 'zod';
import { toEnvelope } from '../errors/to-envelope.js';
import { EnvelopeErrorSchema } from '../errors/envelope-schema.js';
import { PathArg, ReadOptionsShape } from './common-schemas.js';
import { defineTool } from './define-tool.js';
import { readOne, ReadResultShape, factsNote } from './read-file.js';

/** Most paths per call. */
export const MAX_READ_FILES = 100;

export const ReadFilesInput = z.strictObject({
  paths: z.array(PathArg).min(1).max(MAX_READ_FILES).describe(`1-${MAX_READ_FILES} paths`),
  ...ReadOptionsShape,
});

export const ReadFilesOutput = z.object({
  results: z.array(z.union([
    z.object({ path: z.string().describe('As requested'), ok: z.literal(true), result: z.object(ReadResultShape) }),
    z.object({ path: z.string().describe('As requested'), ok: z.literal(false), error: EnvelopeErrorSchema }),
  ])),
  succeeded: z.number().int(),
  failed: z.number().int(),
});

export const readFiles = defineTool({
  name: 'read_files',
  title: 'Read several files',
  description: `Read up to ${MAX_READ_FILES} files with read_file\'s options. Each result is {ok, result} or {ok: false, `
    + 'error} (that path\'s envelope); the call fails only for bad arguments.',
  group: 'fs-read',
  input: ReadFilesInput,
  output: ReadFilesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  pathsOf: (a) => a.paths,
  async run(args, ctx) {
    const { paths, ...options } = args;
    const results: z.infer<typeof ReadFilesOutput>['results'] = [];
    const text: string[] = [];
    for (const requested of paths) {
      try {
        const result = await readOne(requested, options, ctx);
        results.push({ path: requested, ok: true, result });
        text.push(`==> ${requested} <==\n${result.content}\n${factsNote(result)}`);
      } catch (error) {
        const envelope = toEnvelope(error);
        results.push({ path: requested, ok: false, error: envelope.error });
        text.push(`==> ${requested} <==\n${JSON.stringify(envelope)}`);
      }
    }
    const succeeded = results.filter((r) => r.ok).length;
    return {
      structured: { results, succeeded, failed: results.length - succeeded },
      text: text.join('\n'),
      audit: { paths },
    };
  },
});

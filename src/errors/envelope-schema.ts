/**
 * The envelope as a zod schema (docs/errors.md), for output schemas that embed per-item envelopes (read_files) and for
 * tests that check every failure against the contract.
 */
import { z } from 'zod';
import { ALL_ERROR_CODES, ALL_RECOVERIES, type ErrorCode, type Recovery } from './codes.js';

export const EnvelopeErrorSchema = z.object({
  code: z.enum(ALL_ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  path: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  suggestion: z.string(),
  retryable: z.boolean(),
  recovery: z.enum(ALL_RECOVERIES as [Recovery, ...Recovery[]]),
  expected_hash: z.string().optional(),
  current_hash: z.string().nullable().optional(),
  conflict: z
    .object({
      reason: z.enum(['modified', 'deleted', 'created', 'overlapping']),
      changed_ranges: z.array(z.tuple([z.number().int(), z.number().int()])).optional(),
      bytes_delta: z.number().int().optional(),
      overlapping: z
        .array(
          z.object({
            base: z.tuple([z.number().int(), z.number().int()]),
            theirs: z.tuple([z.number().int(), z.number().int()]),
            ours: z.tuple([z.number().int(), z.number().int()]),
          }),
        )
        .optional(),
      note: z.string().optional(),
    })
    .optional(),
});

/** `{ error: … }` and nothing else. */
export const ErrorEnvelopeSchema = z.strictObject({ error: EnvelopeErrorSchema });

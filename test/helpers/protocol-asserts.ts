/**
 * Assertions shared by the protocol-surface e2e tests: a failure result is exactly one SPEC §3 envelope and nothing
 * else; a protocol error is a JSON-RPC error with a given code (under either client era's error class).
 */
import { expect } from 'vitest';
import { ErrorEnvelopeSchema } from '../../src/errors/envelope-schema.js';
import type { CallResult } from './server.js';

/** A parsed envelope (the `error` object typed loosely for assertions). */
export interface Envelope {
  error: {
    code: string;
    message: string;
    path: string | null;
    details: Record<string, any>;
    suggestion: string;
    retryable: boolean;
    recovery: string;
    [key: string]: unknown;
  };
}

/**
 * Checks that `result` is an isError result whose only content is one text block holding exactly one envelope
 * (SPEC §3: "serialized as the text of the result (and nothing else in that text)"), and returns it.
 */
export function envelopeOf(result: CallResult): Envelope {
  expect(result.isError, `expected an error result, got ${JSON.stringify(result.structuredContent)}`).toBe(true);
  expect(result.content).toHaveLength(1);
  expect(result.content[0].type).toBe('text');
  const text = result.content[0].text!;
  let parsed: unknown;
  expect(() => {
    parsed = JSON.parse(text);
  }, `not one JSON value: ${text}`).not.toThrow();
  // Exactly one JSON object and nothing else: the text is the canonical serialization of what it parses to.
  expect(JSON.stringify(parsed)).toBe(text);
  const checked = ErrorEnvelopeSchema.safeParse(parsed);
  expect(checked.success, checked.success ? '' : `envelope schema: ${checked.error.message}\n${text}`).toBe(true);
  return parsed as Envelope;
}

/** envelopeOf plus the expected code. */
export function expectCode(result: CallResult, code: string): Envelope {
  const envelope = envelopeOf(result);
  expect(envelope.error.code, envelope.error.message).toBe(code);
  return envelope;
}

/** Awaits `promise`, expecting a JSON-RPC error; returns its numeric code and message. */
export async function protocolError(promise: Promise<unknown>): Promise<{ code: number; message: string }> {
  let caught: unknown;
  try {
    const value = await promise;
    throw new Error(`expected a JSON-RPC error, got a result: ${JSON.stringify(value).slice(0, 300)}`);
  } catch (error) {
    caught = error;
  }
  const e = caught as { code?: unknown; message?: string };
  expect(typeof e.code, `not a protocol error: ${String(caught)}`).toBe('number');
  return { code: e.code as number, message: e.message ?? '' };
}

/** Polls `check` until it returns true or `ms` elapse. */
export async function waitFor(check: () => boolean, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

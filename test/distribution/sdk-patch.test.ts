/**
 * The upstream-style changes to the MCP SDK (scripts/sdk-patch.mjs): the message hook of `Protocol.connect`
 * classifies requests first, the common request by its plain shape before the zod parse, the stdio connection channel
 * notes an answered request by the answer's shape, and notes an inbound request by its plain shape before the zod
 * parse (the same test under its own name); a request's AbortController is made on first use. Pins:
 *  - the installed SDK still holds each original text exactly once (an SDK upgrade that rewrites one fails here
 *    and at build time, so the patch is revisited, never silently lost or misapplied);
 *  - dist/main.js (the program, built by the global setup) carries each patched text and no original;
 *  - reordering cannot change a dispatch: no message passes the request schema and a response schema both
 *    (a property over arbitrary objects built from the members those schemas name);
 *  - the plain request test answers "request" only for messages the request schema passes;
 *  - the shape test settles every message with an id that the response schemas pass, and no request or notification;
 *  - the lazy request controller answers as an AbortController does, whatever the order of reads, listeners and aborts;
 *  - src/ reaches into no private SDK member.
 */
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
} from '@modelcontextprotocol/server';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  FS_TOOLS_LAZY_ABORT_CONTROLLER,
  FS_TOOLS_PLAIN_CHANNEL_REQUEST,
  FS_TOOLS_PLAIN_REQUEST,
  SDK_PATCHES,
} from '../../scripts/sdk-patch.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SDK_DIST = path.join(ROOT, 'node_modules/@modelcontextprotocol/server/dist');

/** The second patch's test, compiled from the text dist/main.js carries (scripts/sdk-patch.mjs PATCHED_SETTLE). */
const answerShaped = (() => {
  const settle = SDK_PATCHES[1].patched;
  const condition = /^\s*if \((.*)\) \{$/m.exec(settle)?.[1];
  if (condition === undefined) throw new Error('the settle patch has no condition');
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the patch's own text, under test
  return new Function('message', `return ${condition};`) as (message: Record<string, unknown>) => boolean;
})();

/** The third patch's plain request test, compiled from the text the build appends to the SDK module. */
const plainRequest = (() => {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the patch's own text, under test
  return new Function(`${FS_TOOLS_PLAIN_REQUEST}\nreturn fsToolsPlainRequest;`)() as (message: unknown) => boolean;
})();

/** What the fifth patch needs of an AbortController. */
interface RequestController {
  readonly signal: AbortSignal;
  readonly aborted?: boolean;
  abort(reason?: unknown): void;
}

/** The fifth patch's lazy controller, compiled from the text the build appends to the SDK module. */
const LazyController = (() => {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the patch's own text, under test
  return new Function(
    `${FS_TOOLS_LAZY_ABORT_CONTROLLER}\nreturn FsToolsLazyAbortController;`,
  )() as new () => RequestController;
})();

/** How often `needle` occurs in `text`. */
const count = (text: string, needle: string): number => text.split(needle).length - 1;

describe('the SDK patch', () => {
  it('finds each original text exactly once in the installed SDK', () => {
    for (const patch of SDK_PATCHES) {
      const hits = readdirSync(SDK_DIST)
        .filter((f) => f.endsWith('.mjs'))
        .map((f) => count(readFileSync(path.join(SDK_DIST, f), 'utf8'), patch.original));
      expect(
        hits.reduce((a, b) => a + b, 0),
        patch.name,
      ).toBe(1);
    }
  });

  it('is applied in dist/main.js', () => {
    // esbuild re-indents: compare with runs of white space as one space.
    const flat = (text: string) => text.replace(/\s+/g, ' ').trim();
    const bundle = flat(readFileSync(path.join(ROOT, 'dist/main.js'), 'utf8'));
    for (const patch of SDK_PATCHES) {
      expect(count(bundle, flat(patch.patched)), patch.name).toBe(1);
      expect(count(bundle, flat(patch.original)), patch.name).toBe(0);
    }
  });

  it('cannot change a dispatch: no message is both a request and a response', () => {
    // A valid message of each kind, with members of the others mixed in (or taken out) at random.
    const base = fc.constantFrom<Record<string, unknown>>(
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file' } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'a', result: { content: [] } },
      { jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'x' } },
    );
    const mixIn = fc.record(
      {
        jsonrpc: fc.constantFrom('2.0', '1.0'),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 3 }), fc.constant(null)),
        method: fc.constantFrom('ping', 'tools/call'),
        params: fc.constantFrom({}, { _meta: {} }),
        result: fc.constantFrom({}, { content: [] }),
        error: fc.constantFrom({ code: -32600, message: 'x' }, { code: 1.5, message: 'x' }),
        extra: fc.constant(1),
      },
      { requiredKeys: [] },
    );
    const drop = fc.subarray(['jsonrpc', 'id', 'method', 'params', 'result', 'error']);
    const member = fc.tuple(base, fc.option(mixIn, { freq: 2 }), drop).map(([b, extra, gone]) => {
      const message: Record<string, unknown> = { ...b, ...(extra ?? {}) };
      for (const key of gone.slice(0, 1)) delete message[key];
      return message;
    });
    const seen = { request: 0, response: 0 };
    fc.assert(
      fc.property(member, (message) => {
        const request = isJSONRPCRequest(message);
        const response = isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
        seen.request += request ? 1 : 0;
        seen.response += response ? 1 : 0;
        expect(request && response).toBe(false);
        // And the order of the two never decides what a notification is (the hook asks that last either way).
        if (isJSONRPCNotification(message)) expect(request || response).toBe(false);
        // The channel's shape test (the second patch) settles every response the schemas pass, never a request or a
        // notification.
        const settled = answerShaped(message) && message.id !== undefined;
        if (response && message.id !== undefined) expect(settled).toBe(true); // the SDK settles those with an id
        if (request || isJSONRPCNotification(message)) expect(settled).toBe(false);
      }),
      { numRuns: 2000 },
    );
    // The property saw both kinds (it is not vacuous).
    expect(seen.request).toBeGreaterThan(10);
    expect(seen.response).toBeGreaterThan(10);
  });

  it('calls a message a request by its plain shape only when the request schema passes it', () => {
    const id = fc.oneof(
      fc.integer(),
      fc.string({ maxLength: 3 }),
      fc.constantFrom(2 ** 53 - 1, 2 ** 53, 1.5, -0, null, true),
    );
    const params = fc.oneof(
      fc.constant(undefined),
      fc.dictionary(fc.constantFrom('name', 'arguments', '_meta', '__proto__', 'x'), fc.jsonValue({ maxDepth: 1 }), {
        maxKeys: 3,
      }),
      fc.jsonValue({ maxDepth: 1 }),
    );
    // A plain request, with members of other shapes mixed in at random (two times in three).
    const request = fc.record(
      { jsonrpc: fc.constant('2.0'), id: fc.oneof(fc.integer(), fc.string({ maxLength: 3 })), method: fc.string() },
      { requiredKeys: ['jsonrpc', 'id', 'method'] },
    );
    const mixIn = fc.record(
      {
        jsonrpc: fc.constantFrom('2.0', '1.0'),
        id,
        method: fc.oneof(fc.constantFrom('tools/call', 'ping'), fc.integer()),
        params,
        result: fc.constant({}),
        extra: fc.constant(1),
      },
      { requiredKeys: [] },
    );
    const message = fc
      .tuple(request, fc.option(mixIn, { freq: 2 }), params)
      .map(([r, extra, p]) => ({ ...r, ...(p === undefined ? {} : { params: p }), ...(extra ?? {}) }));
    let plain = 0;
    fc.assert(
      fc.property(message, (m) => {
        const value: unknown = JSON.parse(JSON.stringify(m));
        if (!plainRequest(value)) return;
        plain++;
        expect(isJSONRPCRequest(value)).toBe(true);
      }),
      { numRuns: 3000 },
    );
    expect(plain).toBeGreaterThan(200);
    // The bundle carries the test where the hook can call it.
    const bundle = readFileSync(path.join(ROOT, 'dist/main.js'), 'utf8');
    expect(count(bundle, 'function fsToolsPlainRequest(message)')).toBe(1);
    // The channel's copy (the fourth patch) is the same test under its own name, where the channel can call it.
    expect(FS_TOOLS_PLAIN_CHANNEL_REQUEST.replace('fsToolsPlainChannelRequest', 'fsToolsPlainRequest')).toBe(
      FS_TOOLS_PLAIN_REQUEST,
    );
    expect(count(bundle, 'function fsToolsPlainChannelRequest(message)')).toBe(1);
    // And the common tools/call request is one (else the patch saves nothing).
    expect(plainRequest({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'x', arguments: {} } })).toBe(
      true,
    );
  });

  it('the lazy request controller answers as an AbortController: abort before or after the signal, listeners, reasons', () => {
    // Each script: the steps taken on a fresh controller; both kinds must end in the same observable state.
    type Step = 'signal' | 'listen' | 'abort' | 'abortDefault';
    const run = (make: () => RequestController, steps: Step[]) => {
      const c = make();
      const heard: unknown[] = [];
      const reasons = [new Error('first'), new Error('second')];
      let next = 0;
      for (const step of steps) {
        if (step === 'signal') void c.signal;
        else if (step === 'listen') c.signal.addEventListener('abort', () => heard.push(c.signal.reason));
        else if (step === 'abort') c.abort(reasons[next++ % 2]);
        else c.abort();
      }
      const reason: unknown = c.signal.reason;
      return {
        aborted: c.signal.aborted,
        reason: reason instanceof DOMException ? `DOMException ${reason.name}` : reason,
        heard: heard.map((r) => (r instanceof DOMException ? `DOMException ${r.name}` : r)),
        sameSignal: c.signal === c.signal,
      };
    };
    const step = fc.constantFrom<Step>('signal', 'listen', 'abort', 'abortDefault');
    let aborted = 0;
    fc.assert(
      fc.property(fc.array(step, { maxLength: 6 }), (steps) => {
        const lazy = run(() => new LazyController(), steps);
        expect(lazy).toEqual(run(() => new AbortController(), steps));
        if (lazy.aborted) aborted++;
      }),
      { numRuns: 500 },
    );
    expect(aborted).toBeGreaterThan(50);
    // `aborted` says it without making the signal.
    const c = new LazyController();
    expect(c.aborted).toBe(false);
    c.abort('gone');
    expect(c.aborted).toBe(true);
    expect((c as unknown as { _controller: unknown })._controller).toBeUndefined();
    expect(c.signal.reason).toBe('gone');
  });

  it('src/ uses no private member of the SDK', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts') && /\b_on(request|response|notification|close)\b/.test(readFileSync(p, 'utf8'))) {
          offenders.push(path.relative(ROOT, p));
        }
      }
    };
    walk(path.join(ROOT, 'src'));
    expect(offenders).toEqual([]);
  });
});

/**
 * Sealed results: a tool result whose structured part is deep-frozen and registered here, with the text that goes
 * with it, and both serialized once, so that whoever sends it may reuse those bytes while it sends the very same object
 * again (src/server/stdio-transport.ts `serializeMessage`; src/tools/list-memo.ts hands out one sealed page to every
 * call whose inputs are unchanged). Frozen, the object and everything in it can never change, so its JSON cannot
 * either: the kept bytes are exactly what JSON.stringify gives it. This file changes when what may be sealed changes.
 */

/** A sealed structured result's text and both parts' JSON, UTF-8 encoded (what the transport writes). */
export class SealedParts {
  constructor(
    /** The text block sent with the structured object (compared before `textBytes` is reused). */
    readonly text: string,
    /** JSON.stringify(text), UTF-8. */
    readonly textBytes: Buffer,
    /** JSON.stringify of the structured object, UTF-8. */
    readonly structuredBytes: Buffer,
  ) {}
}

/** Side table (WeakMap) keyed by a sealed structured result: its parts, gone with it. */
const sealed = new WeakMap<object, SealedParts>();

/**
 * Deep-freezes `value` (plain objects and arrays, recursively; strings, numbers, booleans and null as they are).
 * @throws TypeError for anything else (a function, a class instance, a BigInt…): such a value is not sealed
 */
function deepFreeze(value: unknown): void {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return;
  if (Array.isArray(value)) {
    if (Object.getPrototypeOf(value) !== Array.prototype) throw new TypeError('not a plain array');
    for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
    Object.freeze(value);
    return;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype && !('toJSON' in value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
    return;
  }
  throw new TypeError('not a JSON value');
}

/**
 * Seals `structured` with its `text`: deep-freezes it (it must be a JSON value of plain objects, arrays and primitives
 * with no `undefined` member), serializes both once (JSON.stringify, UTF-8) and registers them. Sealing the same
 * object again returns its first parts.
 * @throws TypeError when `structured` is not such a value (nothing is registered; parts may be frozen already)
 */
export function sealResult(structured: Record<string, unknown>, text: string): SealedParts {
  const known = sealed.get(structured);
  if (known !== undefined) return known;
  deepFreeze(structured);
  const parts = new SealedParts(
    text,
    Buffer.from(JSON.stringify(text), 'utf8'),
    Buffer.from(JSON.stringify(structured), 'utf8'),
  );
  sealed.set(structured, parts);
  return parts;
}

/** The parts of a sealed structured result, or undefined for an object never sealed. */
export function sealedPartsOf(structured: object): SealedParts | undefined {
  return sealed.get(structured);
}

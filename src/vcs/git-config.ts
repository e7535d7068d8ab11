/**
 * A reader for git's config file syntax (git-config(1) "CONFIGURATION FILE"), so the sanitized view (git-view.ts) can
 * pick the few data-only keys it carries over without running git on a hostile file. Pure; no includes are followed
 * (`include.*` and `includeIf.*` are returned as ordinary keys, and the view ignores them).
 *
 * Keys come out as git prints them with `--list`: section and variable names lower-cased, a `[section "sub"]`
 * subsection as written (the deprecated `[section.sub]` form lower-cased). A variable without `=` is `true`.
 */

import type { Slicer } from './slicer.js';

/** Key → values in file order (a multi-valued key has several). */
export type ConfigList = Map<string, string[]>;

const isAlpha = (c: string) => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isAlnum = (c: string) => isAlpha(c) || (c >= '0' && c <= '9');

/**
 * Parses config text. Returns null when git would refuse it (a "bad config line"): the caller fails closed.
 * @example parseGitConfig('[core]\n\tfilemode = false\n').get('core.filemode') // ['false']
 */
export function parseGitConfig(input: string): ConfigList | null {
  const steps = configSteps(input);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * `parseGitConfig` in slices: the parse yields to the event loop whenever `slicer`'s slice is used up (a 4 MiB config
 * takes a few hundred ms in all). Every line is parsed; only the keys of sections whose lower-cased name (before any
 * subsection; '' before the first section) `keep` accepts are returned, so a caller that reads a few sections does
 * not hold a huge config's other values.
 */
export async function parseGitConfigSliced(
  input: Buffer,
  slicer: Slicer,
  keep: (section: string) => boolean = () => true,
): Promise<ConfigList | null> {
  // Decoded (UTF-8, as git reads it) and its CRLFs folded in 256 KiB pieces, a slice check after each.
  if (input.includes(0)) return null;
  const decoder = new TextDecoder('utf-8');
  const pieces: string[] = [];
  let carry = '';
  for (let at = 0; at < input.length; at += 1 << 18) {
    const end = Math.min(input.length, at + (1 << 18));
    let piece = carry + decoder.decode(input.subarray(at, end), { stream: end < input.length });
    carry = '';
    if (piece.endsWith('\r') && end < input.length) {
      carry = '\r';
      piece = piece.slice(0, -1);
    }
    pieces.push(piece.replace(/\r\n/g, '\n'));
    const wait = slicer.check();
    if (wait) await wait;
  }
  const steps = configSteps(pieces.join('') + carry, keep, true);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    const wait = slicer.check();
    if (wait) await wait;
  }
}

/**
 * The parser, pausing (yield) every few hundred statements so a caller can slice it. `normalized`: the caller already
 * refused NUL and folded CRLF into LF.
 */
function* configSteps(
  input: string,
  keep: (section: string) => boolean = () => true,
  normalized = false,
): Generator<void, ConfigList | null, void> {
  let text = input.startsWith('\ufeff') ? input.slice(1) : input;
  if (!normalized) {
    if (text.includes('\0')) return null;
    text = text.replace(/\r\n/g, '\n');
  }
  const out: ConfigList = new Map();
  const add = (k: string, v: string) => {
    if (!kept) return;
    const values = out.get(k);
    if (values) values.push(v);
    else out.set(k, [v]);
  };
  let section: string | null = null;
  /** Whether the current section's keys are returned (`keep` of its name, before any subsection). */
  let kept = keep('');
  let i = 0;
  const n = text.length;
  const skipLine = () => {
    while (i < n && text[i] !== '\n') i++;
  };
  let statements = 0;
  while (i < n) {
    if ((++statements & 0xff) === 0) yield;
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') {
      i++;
      continue;
    }
    if (c === '#' || c === ';') {
      skipLine();
      continue;
    }
    if (c === '[') {
      i++;
      let name = '';
      while (i < n && (isAlnum(text[i]) || text[i] === '-' || text[i] === '.')) name += text[i++];
      if (name === '') return null;
      if (text[i] === ']') {
        i++;
        section = name.toLowerCase();
        kept = keep(section.split('.')[0]);
        continue;
      }
      if (text[i] !== ' ' && text[i] !== '\t') return null;
      while (text[i] === ' ' || text[i] === '\t') i++;
      if (text[i] !== '"') return null;
      i++;
      let sub = '';
      for (;;) {
        if (i >= n || text[i] === '\n') return null;
        const d = text[i++];
        if (d === '"') break;
        if (d === '\\') {
          if (i >= n || text[i] === '\n') return null;
          sub += text[i++];
        } else sub += d;
      }
      if (text[i] !== ']') return null;
      i++;
      section = `${name.toLowerCase()}.${sub}`;
      kept = keep(name.toLowerCase());
      continue;
    }
    if (!isAlpha(c)) return null;
    let name = '';
    while (i < n && (isAlnum(text[i]) || text[i] === '-')) name += text[i++];
    while (text[i] === ' ' || text[i] === '\t') i++;
    // Before any section git lists the bare name (no section); the view looks such a key up nowhere.
    const key = !kept ? '' : section === null ? name.toLowerCase() : `${section}.${name.toLowerCase()}`;
    if (i >= n || text[i] === '\n') {
      add(key, 'true');
      continue;
    }
    if (text[i] !== '=') return null;
    i++;
    const value = parseValue();
    if (value === null) return null;
    add(key, value);
  }
  return out;

  /** A value after `=`, up to its end of line (quotes, escapes, continuation lines, comments). */
  function parseValue(): string | null {
    let quoted = false;
    let value = '';
    let spaces = 0;
    while (text[i] === ' ' || text[i] === '\t') i++;
    for (;;) {
      if (i >= n) return quoted ? null : value;
      const c = text[i++];
      if (c === '\n') {
        if (quoted) return null;
        return value;
      }
      if (!quoted && (c === ';' || c === '#')) {
        i--;
        skipLine();
        return value;
      }
      if (!quoted && (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v')) {
        if (value.length > 0) spaces++;
        continue;
      }
      if (spaces > 0) {
        value += ' '.repeat(spaces);
        spaces = 0;
      }
      if (c === '\\') {
        if (i >= n) return null;
        const e = text[i++];
        if (e === '\n') continue;
        if (e === 'n') value += '\n';
        else if (e === 't') value += '\t';
        else if (e === 'b') value += '\b';
        else if (e === '\\' || e === '"') value += e;
        else return null;
        continue;
      }
      if (c === '"') {
        quoted = !quoted;
        continue;
      }
      value += c;
    }
  }
}

/**
 * The literal prefilter of content search (docs/tools.md, search_files): a string every match of a regular
 * expression contains, so files and lines without it are skipped before the expression runs (as ripgrep's literal
 * extraction does). Pure: no I/O, no state.
 */

/** Shortest literal worth a prefilter (a 1–2 character needle occurs in nearly every file). */
const MIN_REQUIRED_LITERAL = 3;

/**
 * Longest pattern whose literals are worked out, UTF-16 code units: the scans run on the main thread when a query is
 * compiled, so a longer one (a message may hold megabytes) gets no prefilter rather than a stall (docs/security.md
 * "Bounded work"; the set's scan costs about a microsecond per character here).
 */
const MAX_PATTERN_CHARS = 8192;

/** The scan of `requiredLiteral`: the pattern, where it is, and the runs of literals found so far. */
interface Scan {
  source: string;
  i: number;
  runs: string[];
  run: string;
  /** Code-point length of the last atom appended to `run` (0: the last atom was not a literal). */
  lastLiteral: number;
}

/** Ends the current run of literals. */
function endRun(s: Scan): void {
  if (s.run) s.runs.push(s.run);
  s.run = '';
  s.lastLiteral = 0;
}

/** Appends the literal code point at `at` to the current run and moves past it (`skip` characters before it). */
function appendLiteral(s: Scan, at: number, skip: number): void {
  const cp = String.fromCodePoint(s.source.codePointAt(at)!);
  s.run += cp;
  s.lastLiteral = cp.length;
  s.i += skip + cp.length;
}

/** Skips from an opening `(` to just past its match (classes and escapes inside honoured); false when unbalanced. */
function skipGroup(s: Scan): boolean {
  let depth = 0;
  let inClass = false;
  for (; s.i < s.source.length; s.i++) {
    const c = s.source[s.i];
    if (c === '\\') {
      s.i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      inClass = true;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth === 0) {
        s.i++;
        return true;
      }
    }
  }
  return false;
}

/** Skips from an opening `[` to just past its `]`; false when unbalanced. */
function skipClass(s: Scan): boolean {
  for (s.i++; s.i < s.source.length; s.i++) {
    if (s.source[s.i] === '\\') {
      s.i++;
      continue;
    }
    if (s.source[s.i] === ']') {
      s.i++;
      return true;
    }
  }
  return false;
}

/**
 * The quantifier at `source[i]` (`*`, `?`, `+`, `{n}`, `{n,}`, `{n,m}`, lazy or not): its least count and the index
 * past it (and past a lazy `?`). Null for a `{` that is no quantifier. Shared by both scans.
 */
function readQuantifier(source: string, i: number): { min: number; end: number } | null {
  const c = source[i];
  let min = c === '+' ? 1 : 0;
  let end = i + 1;
  if (c === '{') {
    const m = /^\{(\d+)(,\d*)?\}/.exec(source.slice(i));
    if (!m) return null;
    min = Number(m[1]);
    end = i + m[0].length;
  }
  if (source[end] === '?') end++; // lazy
  return { min, end };
}

/**
 * A quantifier at `s.i` (`*`, `?`, `+`, `{n}`, `{n,}`, `{n,m}`, lazy or not): moves past it, drops the quantified
 * character from the run when it may be absent, and ends the run. False for a `{` that is no quantifier.
 */
function quantifier(s: Scan): boolean {
  const q = readQuantifier(s.source, s.i);
  if (q === null) return false;
  const min = q.min;
  s.i = q.end;
  if (s.lastLiteral > 0 && min === 0) s.run = s.run.slice(0, s.run.length - s.lastLiteral); // the character is optional
  endRun(s);
  return true;
}

/** Moves past `s.source[from..]` up to and including `close`; false when it is missing. */
function skipPast(s: Scan, from: number, close: string): boolean {
  const at = s.source.indexOf(close, from);
  if (at < 0) return false;
  s.i = at + 1;
  return true;
}

/**
 * An escape at `s.i` (`\` then `e`): an escaped punctuation character is a literal; a letter or digit escape (a
 * class, an assertion, a back reference, a code escape) is not one we can vouch for and ends the run. False when
 * malformed.
 */
function escape(s: Scan): boolean {
  const e = s.source[s.i + 1];
  if (e === undefined) return false;
  if (!/[0-9A-Za-z]/.test(e)) {
    appendLiteral(s, s.i + 1, 1);
    return true;
  }
  endRun(s);
  s.i += 2;
  const next = s.source[s.i];
  if (e === 'u' && next === '{') return skipPast(s, s.i, '}');
  if (e === 'u') s.i += 4;
  else if (e === 'x') s.i += 2;
  else if (e === 'c') s.i += 1;
  else if ((e === 'p' || e === 'P') && next === '{') return skipPast(s, s.i, '}');
  else if (e === 'k' && next === '<') return skipPast(s, s.i, '>');
  else if (/[0-9]/.test(e)) while (/[0-9]/.test(s.source[s.i] ?? '')) s.i++;
  return true;
}

/**
 * One atom of the top-level sequence at `s.i`: moves past it, extending or ending the current run of literals.
 * False when no literal can be proven at all (a top-level `|`, something unbalanced or malformed).
 */
function atom(s: Scan): boolean {
  const c = s.source[s.i];
  if (c === '*' || c === '?' || c === '+' || c === '{') return quantifier(s);
  if (c === '|') return false;
  if (c === '(' || c === '[') {
    endRun(s);
    return c === '(' ? skipGroup(s) : skipClass(s);
  }
  if (c === ')' || c === ']' || c === '}') return false; // unbalanced (does not compile with the u flag)
  if (c === '.' || c === '^' || c === '$') {
    endRun(s);
    s.i++;
    return true;
  }
  if (c === '\\') return escape(s);
  appendLiteral(s, s.i, 0);
  return true;
}

/**
 * A string that every match of the regular expression `source` (with `flags`) contains, or null when none can be
 * proven. Conservative by construction: only literal characters in the top-level sequence count (a group, a class, an
 * escape class, `.`, an anchor or an optional quantifier ends a run of literals, and a top-level `|` gives up); a
 * case-insensitive (`i`) or `v`-mode expression, or one longer than 8,192 characters, gives up. Returns the longest run
 * of at least 3 characters.
 * Used to skip files that cannot match before running the expression (as ripgrep's literal extraction does).
 */
export function requiredLiteral(source: string, flags: string): string | null {
  if (flags.includes('i') || flags.includes('v') || source.length > MAX_PATTERN_CHARS) return null;
  const s: Scan = { source, i: 0, runs: [], run: '', lastLiteral: 0 };
  while (s.i < source.length) if (!atom(s)) return null;
  endRun(s);
  let best: string | null = null;
  for (const r of s.runs) if (r.length >= MIN_REQUIRED_LITERAL && (best === null || r.length > best.length)) best = r;
  return best;
}

/** Most strings a required set may hold (each is one more scan of a candidate's bytes). */
const MAX_SET = 16;

/**
 * The scan of `requiredLiteralSet`: like `Scan`, but the run being built is a set of alternatives (`cur`: every match
 * of what was scanned since the run began ends with one of them), and each finished run is such a set.
 */
interface SetScan {
  source: string;
  i: number;
  /** Finished runs: every match contains one string of each. */
  sets: string[][];
  cur: string[];
  /** What `cur` was before the last atom, for a quantifier that makes that atom optional. */
  before: string[];
}

/** Ends the current run. */
function endSet(s: SetScan): void {
  if (s.cur.some((x) => x !== '')) s.sets.push(s.cur);
  s.cur = [''];
  s.before = [''];
}

/** Appends each of `alternatives` to the current run (a new run starts with them when the product would be too big). */
function appendAlternatives(s: SetScan, alternatives: string[]): void {
  if (s.cur.length * alternatives.length > MAX_SET) endSet(s);
  s.before = s.cur;
  s.cur = s.cur.flatMap((x) => alternatives.map((a) => x + a));
}

/** Splits `body` at its top-level `|` (groups, classes and escapes honoured). */
function splitAlternatives(body: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inClass = false;
  let from = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === '\\') i++;
    else if (inClass) inClass = c !== ']';
    else if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === '|' && depth === 0) {
      out.push(body.slice(from, i));
      from = i + 1;
    }
  }
  out.push(body.slice(from));
  return out;
}

/**
 * The exact text `alternative` matches when it is a sequence of literal characters only (plain characters and escaped
 * punctuation; no class, group, quantifier, anchor or letter escape), else null.
 */
function literalText(alternative: string): string | null {
  let out = '';
  for (let i = 0; i < alternative.length; i++) {
    const c = alternative[i];
    if (c === '\\') {
      const e = alternative[i + 1];
      if (e === undefined || /[0-9A-Za-z]/.test(e)) return null;
      out += e;
      i++;
    } else if ('.^$*+?()[]{}|'.includes(c)) return null;
    else out += c;
  }
  return out;
}

/**
 * A group at `s.i` (an opening `(`): a capturing, named or non-capturing group whose alternatives are all literal text
 * extends the run by each of them; any other group (a lookaround, a group holding classes, quantifiers or groups) ends
 * the run. False when unbalanced.
 */
function groupAtom(s: SetScan): boolean {
  const open = s.i;
  const inner: Scan = { source: s.source, i: s.i, runs: [], run: '', lastLiteral: 0 };
  if (!skipGroup(inner)) return false;
  s.i = inner.i;
  let body = s.source.slice(open + 1, s.i - 1);
  if (body.startsWith('?:')) body = body.slice(2);
  else if (/^\?<[^=!]/.test(body)) body = body.slice(body.indexOf('>') + 1);
  else if (body.startsWith('?')) body = '('; // a lookaround: not literal text
  const texts = splitAlternatives(body).map(literalText);
  if (texts.some((t) => t === null) || texts.length > MAX_SET) {
    endSet(s);
    return true;
  }
  appendAlternatives(s, texts as string[]);
  return true;
}

/** A quantifier at `s.i` after an atom that extended the run: drops that atom when it may be absent; ends the run. */
function setQuantifier(s: SetScan): boolean {
  const q = readQuantifier(s.source, s.i);
  if (q === null) return false;
  s.i = q.end;
  if (q.min === 0) s.cur = s.before;
  endSet(s);
  return true;
}

/** One atom of a branch at `s.i` (see `atom`; a group of literal alternatives extends the run). False: give up. */
function setAtom(s: SetScan): boolean {
  const c = s.source[s.i];
  if (c === '*' || c === '?' || c === '+' || c === '{') return setQuantifier(s);
  if (c === '(') return groupAtom(s);
  if (c === '[') {
    endSet(s);
    const inner: Scan = { source: s.source, i: s.i, runs: [], run: '', lastLiteral: 0 };
    if (!skipClass(inner)) return false;
    s.i = inner.i;
    return true;
  }
  if (c === '|' || c === ')' || c === ']' || c === '}') return false;
  if (c === '.' || c === '^' || c === '$') {
    endSet(s);
    s.i++;
    return true;
  }
  if (c === '\\') {
    const e = s.source[s.i + 1];
    if (e === undefined) return false;
    if (!/[0-9A-Za-z]/.test(e)) {
      appendAlternatives(s, [e]);
      s.i += 2;
      return true;
    }
    // A letter or digit escape: not a literal; `escape` knows how far it reaches.
    const inner: Scan = { source: s.source, i: s.i, runs: [], run: '', lastLiteral: 0 };
    if (!escape(inner)) return false;
    endSet(s);
    s.i = inner.i;
    return true;
  }
  const cp = String.fromCodePoint(s.source.codePointAt(s.i)!);
  appendAlternatives(s, [cp]);
  s.i += cp.length;
  return true;
}

/**
 * Of `sets`, the one most likely to rule a file out: the longest shortest string, then the fewest strings. Each set's
 * shortest length is counted once (linear in the pattern: counting the best one again for every set was quadratic, a
 * main-thread stall of seconds for a 40,000-character pattern; docs/security.md "Bounded work").
 */
function bestSet(sets: string[][]): string[] | null {
  let best: string[] | null = null;
  let bestShortest = 0;
  for (const set of sets) {
    const shortest = Math.min(...set.map((x) => [...x].length));
    if (shortest < MIN_REQUIRED_LITERAL) continue;
    if (best === null || shortest > bestShortest || (shortest === bestShortest && set.length < best.length)) {
      best = set;
      bestShortest = shortest;
    }
  }
  return best;
}

/**
 * A set of strings of which every match of the regular expression `source` (with `flags`) contains at least one,
 * or null when none can be proven: the prefilter for expressions `requiredLiteral` has no single literal for, or only a
 * common one (`\bTODO\((alice|bob)\):` → `TODO(alice):`, `TODO(bob):` where `requiredLiteral` gives `TODO(`;
 * `foo|barbaz` → `foo`, `barbaz`). Conservative by construction, as `requiredLiteral`: in each top-level branch only
 * literal characters and groups whose alternatives are all literal text count (such a group extends the run by each
 * alternative; anything else ends it; an optional atom is dropped), each branch contributes its best run, and a branch
 * without one, a case-insensitive or `v`-mode expression, one longer than 8,192 characters, or more than 16 strings
 * gives up. Every string has at least 3 characters. Deduplicated, sorted.
 */
export function requiredLiteralSet(source: string, flags: string): string[] | null {
  if (flags.includes('i') || flags.includes('v') || source.length > MAX_PATTERN_CHARS) return null;
  const out = new Set<string>();
  for (const branch of splitAlternatives(source)) {
    const s: SetScan = { source: branch, i: 0, sets: [], cur: [''], before: [''] };
    while (s.i < branch.length) if (!setAtom(s)) return null;
    endSet(s);
    const best = bestSet(s.sets);
    if (best === null) return null;
    for (const x of best) out.add(x);
    if (out.size > MAX_SET) return null;
  }
  return [...out].sort();
}

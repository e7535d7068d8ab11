/**
 * The literal prefilter of content search (docs/tools.md, search_files): a string every match of a regular
 * expression contains, so files and lines without it are skipped before the expression runs (as ripgrep's literal
 * extraction does). Pure: no I/O, no state.
 */

/** Shortest literal worth a prefilter (a 1–2 character needle occurs in nearly every file). */
const MIN_REQUIRED_LITERAL = 3;

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
 * A quantifier at `s.i` (`*`, `?`, `+`, `{n}`, `{n,}`, `{n,m}`, lazy or not): moves past it, drops the quantified
 * character from the run when it may be absent, and ends the run. False for a `{` that is no quantifier.
 */
function quantifier(s: Scan): boolean {
  const c = s.source[s.i];
  let min = c === '+' ? 1 : 0;
  if (c === '{') {
    const m = /^\{(\d+)(,\d*)?\}/.exec(s.source.slice(s.i));
    if (!m) return false;
    min = Number(m[1]);
    s.i += m[0].length;
  } else {
    s.i++;
  }
  if (s.source[s.i] === '?') s.i++; // lazy
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
 * case-insensitive (`i`) or `v`-mode expression gives up. Returns the longest run of at least 3 characters.
 * Used to skip files that cannot match before running the expression (as ripgrep's literal extraction does).
 */
export function requiredLiteral(source: string, flags: string): string | null {
  if (flags.includes('i') || flags.includes('v')) return null;
  const s: Scan = { source, i: 0, runs: [], run: '', lastLiteral: 0 };
  while (s.i < source.length) if (!atom(s)) return null;
  endRun(s);
  let best: string | null = null;
  for (const r of s.runs) if (r.length >= MIN_REQUIRED_LITERAL && (best === null || r.length > best.length)) best = r;
  return best;
}

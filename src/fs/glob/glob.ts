/**
 * Globs in the micromatch dialect fs-tools has always documented (`glob`, `include`/`exclude`, --policy rules, the
 * secret rules), compiled once to the linear-time engine (./engine.ts) instead of micromatch's backtracking regular
 * expressions. Options are the ones fs-tools passed to micromatch: `dot: true` (a `*` matches dotfiles), `nocase`, and
 * `basename` (a glob without `/` is tested against the last path component).
 *
 * Syntax: `*` any run of characters but `/`; `?` one character but `/`; `**` as a whole path segment any number of
 * segments (`a/**` matches `a` and everything below it, `**`/`x` matches `x` at any depth, `a/**`/`b` matches `a/b`); `**`
 * inside a segment is `*`; `[abc]`, `[a-z]`, `[!a]`/`[^a]` (never `/`), POSIX classes `[[:alpha:]]`; `{a,b}`
 * alternatives (nestable) and `{1..5}`/`{a..e}` ranges; extglobs `@(a|b)`, `?(…)`, `*(…)`, `+(…)` and plain `(a|b)`;
 * `\x` is a literal x; a leading `!` negates the whole glob; a leading `./` is dropped. Not supported: the negated
 * extglob `!(…)`, which micromatch implements with a lookahead no linear engine runs (refused as too complex).
 */
import { ToolError } from '../../errors/tool-error.js';
import { ast, compile, LIMITS, PatternTooComplexError, type CharSet, type Node } from './engine.js';

/** Options of compileGlob (micromatch's, with `dot: true` always). */
export interface GlobOptions {
  nocase?: boolean;
  /** Test a glob without `/` against the last path component (micromatch `basename`). Default: false. */
  basename?: boolean;
}

/** A compiled glob: a pure predicate over `/`-separated paths, with its automaton size (`states`). */
export type GlobPredicate = ((path: string) => boolean) & { readonly states: number };

const POSIX_CLASSES: Record<string, number[]> = {
  alnum: [0x30, 0x39, 0x41, 0x5a, 0x61, 0x7a],
  alpha: [0x41, 0x5a, 0x61, 0x7a],
  ascii: [0x00, 0x7f],
  blank: [0x09, 0x09, 0x20, 0x20],
  cntrl: [0x00, 0x1f, 0x7f, 0x7f],
  digit: [0x30, 0x39],
  graph: [0x21, 0x7e],
  lower: [0x61, 0x7a],
  print: [0x20, 0x7e],
  punct: [0x21, 0x2f, 0x3a, 0x40, 0x5b, 0x60, 0x7b, 0x7e],
  space: [0x09, 0x0d, 0x20, 0x20],
  upper: [0x41, 0x5a],
  word: [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a],
  xdigit: [0x30, 0x39, 0x41, 0x46, 0x61, 0x66],
};

/**
 * Compiles a glob once. Cost of a call of the returned predicate: O(path length × pattern size), whatever the glob.
 * @throws PatternTooComplexError over LIMITS (length, automaton size, nesting, range expansion) or for `!(…)`
 */
export function compileGlob(glob: string, options: GlobOptions = {}): GlobPredicate {
  if (glob.length > LIMITS.patternLength) {
    throw new PatternTooComplexError(
      'pattern_length',
      LIMITS.patternLength,
      `the pattern is longer than ${LIMITS.patternLength} characters`,
    );
  }
  let i = 0;
  let negated = false;
  while (glob[i] === '!' && glob[i + 1] !== '(') {
    negated = !negated;
    i++;
  }
  let body = glob.slice(i);
  while (body.startsWith('./')) body = body.slice(2);
  const nocase = options.nocase ?? false;
  const node = new GlobParser(body, nocase).parse();
  const matcher = compile(node);
  const base = (options.basename ?? false) && !glob.includes('/');
  let predicate: (p: string) => boolean;
  if (base) {
    predicate = negated
      ? (p) => !matcher.test(p, p.lastIndexOf('/') + 1)
      : (p) => matcher.test(p, p.lastIndexOf('/') + 1);
  } else {
    predicate = negated ? (p) => !matcher.test(p) : (p) => matcher.test(p);
  }
  return Object.assign(predicate, { states: matcher.size });
}

/** What is left of a call's pattern budget (LIMITS.callStates), shared by the globs of one call. */
export interface PatternBudget {
  states: number;
}

/** A fresh budget for one call's globs. */
export function patternBudget(): PatternBudget {
  return { states: LIMITS.callStates };
}

/** Whether a node can match the empty string, as micromatch's regular expression for it can. */
function canBeEmpty(node: Node): boolean {
  switch (node.t) {
    case 'set':
      return false;
    case 'seq':
      return node.items.every(canBeEmpty);
    case 'alt':
      return node.items.some(canBeEmpty);
    case 'rep':
      return node.min === 0 ? !node.nonEmpty : canBeEmpty(node.item);
  }
}

/** Where a sub-sequence ends: at the end of the glob, or at a closing delimiter of an enclosing construct. */
type Stop = 'end' | 'brace' | 'group';

class GlobParser {
  private i = 0;
  private depth = 0;
  private expanded = 0;

  constructor(
    private readonly p: string,
    private readonly nocase: boolean,
  ) {}

  parse(): Node {
    return this.sequence('end');
  }

  private enter(): void {
    if (++this.depth > LIMITS.nesting) {
      throw new PatternTooComplexError(
        'nesting',
        LIMITS.nesting,
        `the pattern nests more than ${LIMITS.nesting} levels`,
      );
    }
  }

  /** True when position j ends a path segment in the current context. */
  private segmentEnd(j: number, stop: Stop): boolean {
    const c = this.p[j];
    return (
      j >= this.p.length ||
      c === '/' ||
      (stop === 'brace' && (c === ',' || c === '}')) ||
      (stop === 'group' && (c === '|' || c === ')'))
    );
  }

  /** Parses until the end (stop 'end'), a `,`/`}` (stop 'brace') or a `|`/`)` (stop 'group'); does not consume it. */
  private sequence(stop: Stop): Node {
    const p = this.p;
    const items: Node[] = [];
    const start = this.i;
    // Indexes of the `/` before each `/**/` in items.
    const globstars: number[] = [];
    // What the last item was: micromatch reads `/**` and `**` differently after a `*` and after a group.
    let last: 'star' | 'group' | 'other' = 'other';
    while (this.i < p.length) {
      const c = p[this.i];
      const prev = last;
      last = 'other';
      if (stop === 'brace' && (c === ',' || c === '}')) break;
      if (stop === 'group' && (c === '|' || c === ')')) break;
      const segStart = this.i === start || p[this.i - 1] === '/';
      if (c === '/' && p.startsWith('**', this.i + 1) && this.segmentEnd(this.i + 3, stop) && p[this.i + 3] !== '/') {
        // `a/**` at the end: `a` itself or anything below it (after a `*`, as micromatch has it, only below it).
        const below = ast.seq(ast.lit('/', false), ast.star(ast.any()));
        items.push(prev === 'star' ? below : ast.opt(below));
        this.i += 3;
        continue;
      }
      if (c === '*' && p[this.i + 1] === '*' && segStart && this.segmentEnd(this.i + 2, stop)) {
        if (p[this.i + 2] === '/') {
          // `**/`: zero or more whole segments.
          if (this.i > start && p[this.i - 1] === '/' && items.length > 1) globstars.push(items.length - 1);
          items.push(ast.opt(ast.seq(ast.star(ast.any()), ast.lit('/', false))));
          this.i += 3;
        } else {
          items.push(ast.star(ast.any()));
          this.i += 2;
        }
        continue;
      }
      const beforeGroup = p[this.i + 2] === '{' || (p[this.i + 2] === '@' && p[this.i + 3] === '(');
      if (
        c === '*' &&
        p[this.i + 1] === '*' &&
        p[this.i + 2] !== '*' &&
        ((prev === 'group' && (this.i + 2 >= p.length || p[this.i + 2] === '/' || beforeGroup)) ||
          (segStart && beforeGroup))
      ) {
        // micromatch: `**` right after a group at the end of a segment, or at the start of a segment right before
        // `@(…)` or `{…}`, crosses `/` (`@(a|b)**/x` matches `a/b/x`, `x/**{a,b}` matches `x/y/a`).
        items.push(ast.star(ast.any()));
        this.i += 2;
        continue;
      }
      if ((c === '?' || c === '*' || c === '+' || c === '@') && p[this.i + 1] === '(') {
        const before = this.i;
        items.push(this.extglob(c));
        if (this.p[this.i - 1] === ')' && this.i - before > 2) last = 'group';
        continue;
      }
      if (c === '!' && p[this.i + 1] === '(') {
        throw new PatternTooComplexError(
          'negated_extglob',
          0,
          'the negated extglob !(…) needs a lookahead, which the linear-time matcher does not run',
        );
      }
      if (c === '(') {
        const before = this.i;
        items.push(this.extglob('@', 0));
        if (this.p[this.i - 1] === ')' && this.i - before > 1) last = 'group';
        continue;
      }
      if (c === '*') {
        // A run of `*` is one `*`; a `*` right before `(` starts an extglob `*(…)` instead.
        const runStart = this.i;
        this.i++;
        while (p[this.i] === '*' && p[this.i + 1] !== '(') this.i++;
        // micromatch: a single final `*` in a segment `*.*` or `.*` must not end the input empty (`*.*` does not
        // match `a.`; `a.*`, `a*.*` and `*.**` do).
        const segment = p.slice(Math.max(start, p.lastIndexOf('/', runStart - 1) + 1), runStart);
        if (stop === 'end' && this.i >= p.length && this.i - runStart === 1 && (segment === '*.' || segment === '.')) {
          items.push(ast.plus(ast.notSlash()));
          last = 'star';
          continue;
        }
        // (micromatch puts a lookahead `(?=.)` before it: it never lets `a/**/` end the input, see below.)
        items.push({ t: 'rep', item: ast.notSlash(), min: 0, max: Infinity, nonEmpty: true });
        last = 'star';
        continue;
      }
      if (c === '?') {
        items.push(ast.notSlash());
        this.i++;
        continue;
      }
      if (c === '[') {
        const cls = this.charClass();
        if (cls) {
          items.push(cls);
          continue;
        }
      }
      if (c === '{') {
        const brace = this.brace();
        if (brace) {
          items.push(brace);
          continue;
        }
      }
      if (c === '\\' && this.i + 1 < p.length) {
        items.push(ast.lit(p[this.i + 1], this.nocase));
        this.i += 2;
        continue;
      }
      items.push(ast.lit(c, this.nocase));
      this.i++;
    }
    // micromatch lets `x/**/` also match the end of the input right after `x` (`(?:\/…\/|\/|$)`): `a/**/?(b)`
    // matches `a`. That happens when what follows can match nothing.
    const alts = [ast.seq(...items)];
    for (const k of globstars) {
      // (Not when nothing follows: `a/**/` has no such alternative there.)
      if (items.length > k + 2 && items.slice(k + 2).every(canBeEmpty)) alts.push(ast.seq(...items.slice(0, k)));
    }
    return ast.alt(...alts);
  }

  /** `X(a|b)` at this.i (prefix length `skip`, 1 for `@(`, 0 for a plain group); a `(` without `)` is literal. */
  private extglob(op: string, skip = 1): Node {
    const save = this.i;
    this.enter();
    this.i += skip + 1;
    const alts: Node[] = [];
    for (;;) {
      alts.push(this.sequence('group'));
      if (this.i >= this.p.length) {
        // Unclosed: the characters are literal.
        this.depth--;
        this.i = save + 1;
        return ast.lit(this.p[save], this.nocase);
      }
      const c = this.p[this.i++];
      if (c === ')') break;
    }
    this.depth--;
    const body = ast.alt(...alts);
    switch (op) {
      case '?':
        return ast.opt(body);
      case '*':
        return ast.star(body);
      case '+':
        return ast.plus(body);
      default:
        return body;
    }
  }

  /** `[...]` at this.i; null (nothing consumed) when it does not close, so the `[` is literal. */
  private charClass(): Node | null {
    const p = this.p;
    let j = this.i + 1;
    let negate = false;
    // micromatch 4 reads `[!…]` as "the text `[!…]`, or one of `!` and the listed characters" (not a negation);
    // kept as it was. `[^…]` negates.
    const bang = p[j] === '!';
    if (p[j] === '^') {
      negate = true;
      j++;
    }
    const ranges: number[] = [];
    let first = true;
    while (j < p.length && (p[j] !== ']' || first)) {
      first = false;
      if (p[j] === '[' && p[j + 1] === ':') {
        const end = p.indexOf(':]', j + 2);
        const name = end > 0 ? p.slice(j + 2, end) : '';
        if (POSIX_CLASSES[name]) {
          ranges.push(...POSIX_CLASSES[name]);
          j = end + 2;
          continue;
        }
      }
      let lo: number;
      if (p[j] === '\\' && j + 1 < p.length) {
        lo = p.charCodeAt(j + 1);
        j += 2;
      } else {
        lo = p.charCodeAt(j);
        j++;
      }
      if (p[j] === '-' && j + 1 < p.length && p[j + 1] !== ']') {
        let hi: number;
        if (p[j + 1] === '\\' && j + 2 < p.length) {
          hi = p.charCodeAt(j + 2);
          j += 3;
        } else {
          hi = p.charCodeAt(j + 1);
          j += 2;
        }
        if (lo <= hi) ranges.push(lo, hi);
        continue;
      }
      ranges.push(lo, lo);
    }
    if (j >= p.length) return null;
    const raw = p.slice(this.i, j + 1);
    this.i = j + 1;
    const set: CharSet = { ranges, negate, noSlash: negate, nocase: this.nocase };
    return bang ? ast.alt(ast.lit(raw, this.nocase), { t: 'set', set }) : { t: 'set', set };
  }

  /** `{a,b}` or `{x..y}` at this.i; null (nothing consumed) when it is literal (no `,`, no range, unclosed). */
  private brace(): Node | null {
    const p = this.p;
    // Find the matching `}` and whether there is a top-level `,`.
    let depth = 0;
    let comma = false;
    let end = -1;
    for (let j = this.i; j < p.length; j++) {
      const c = p[j];
      if (c === '\\') {
        j++;
        continue;
      }
      if (c === '{') depth++;
      else if (c === '}') {
        if (--depth === 0) {
          end = j;
          break;
        }
      } else if (c === ',' && depth === 1) comma = true;
    }
    if (end < 0) return null;
    if (!comma) {
      const range = this.range(p.slice(this.i + 1, end));
      if (!range) return null;
      this.i = end + 1;
      return range;
    }
    const save = this.i;
    this.enter();
    this.i++;
    const alts: Node[] = [];
    for (;;) {
      alts.push(this.sequence('brace'));
      if (this.i >= p.length) {
        this.depth--;
        this.i = save;
        return null;
      }
      if (p[this.i++] === '}') break;
    }
    this.depth--;
    return ast.alt(...alts);
  }

  /** `x..y` or `x..y..step` (integers or single letters) as alternatives; null when it is not a range. */
  private range(inner: string): Node | null {
    const m = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$/.exec(inner);
    if (!m) return null;
    const numeric = /\d/.test(m[1]);
    if (numeric !== /\d/.test(m[2])) return null;
    const a = numeric ? Number(m[1]) : m[1].charCodeAt(0);
    const b = numeric ? Number(m[2]) : m[2].charCodeAt(0);
    const step = Math.abs(Number(m[3] ?? 1)) || 1;
    const count = Math.floor(Math.abs(b - a) / step) + 1;
    this.expanded += count;
    // (Not finite: endpoints too large to be numbers, e.g. {1..1e400}.)
    if (!Number.isFinite(this.expanded) || this.expanded > LIMITS.braceExpansion) {
      throw new PatternTooComplexError(
        'brace_expansion',
        LIMITS.braceExpansion,
        `the pattern's {x..y} ranges expand to more than ${LIMITS.braceExpansion} alternatives`,
      );
    }
    const alts: Node[] = [];
    for (let k = 0, v = a; k < count; k++, v += a <= b ? step : -step) {
      alts.push(ast.lit(numeric ? String(v) : String.fromCharCode(v), this.nocase));
    }
    return ast.alt(...alts);
  }
}

/**
 * compileGlob for a glob an agent passed (search_files `glob`, `include`/`exclude` of search_files and
 * list_directory): a pattern over the limits becomes the tool error.
 * @param budget the call's pattern budget: the globs of one call share LIMITS.callStates
 * @throws ToolError VALIDATION with details.reason "pattern_too_complex", details.field, .limit, .max and .pattern
 *   (the glob, cut to 100 characters)
 */
export function compileToolGlob(
  glob: string,
  options: GlobOptions,
  field: string,
  budget?: PatternBudget,
): GlobPredicate {
  try {
    const compiled = compileGlob(glob, options);
    if (budget) {
      budget.states -= compiled.states;
      if (budget.states < 0) {
        throw new PatternTooComplexError(
          'call_states',
          LIMITS.callStates,
          `the call's globs together compile to more than ${LIMITS.callStates} automaton states`,
        );
      }
    }
    return compiled;
  } catch (error) {
    if (!(error instanceof PatternTooComplexError)) throw error;
    throw new ToolError('VALIDATION', `The ${field} pattern is too complex: ${error.message}.`, {
      details: {
        reason: 'pattern_too_complex',
        field,
        limit: error.limit,
        max: error.max,
        pattern: glob.slice(0, 100),
      },
      suggestion:
        'Use a simpler glob (fewer alternatives and ranges, no !(…)), or several simpler globs in include/exclude.',
    });
  }
}

/**
 * .gitignore files, with the rules of the `ignore` package (7.0.5) that fs-tools used before — git's gitignore(5)
 * rules as that package implements them, case-insensitively — compiled to the linear-time engine (./engine.ts):
 *
 * - blank lines, lines starting with `#`, and lines ending in an odd `\` are not rules; `\#` and `\!` at the start are
 *   literal; trailing whitespace is dropped unless escaped (`\ `);
 * - `!` negates (re-includes); the last matching rule of a file decides; a path whose parent directory is ignored is
 *   ignored (no re-including inside an excluded directory);
 * - a trailing `/` matches directories only; a `/` at the start or in the middle anchors the rule at the .gitignore's
 *   directory, otherwise it matches at any depth below it;
 * - `*` and `?` never match `/`; a leading `**`/ matches in every directory, `/**`/ zero or more directories, a
 *   trailing `/**` everything inside; a trailing `/*` (or a lone anchored `/*`) needs at least one character;
 * - `[a-z]` classes (a reversed range matches nothing; `!`/`^` inside are literal, as in that package); an unclosed
 *   `[` makes the rule match nothing.
 *
 * A rule over the engine's limits (LIMITS: longer than 1024 characters, too large an automaton), or past the budget
 * of the rules that apply to one path (LIMITS.gitignoreChainStates), is not applied: it matches nothing, and is
 * counted in `skipped` so listings can report it.
 */
import { ast, compile, LIMITS, PatternTooComplexError, type CompiledMatcher, type Node } from './engine.js';
import { processSlot } from '../../process-slots.js';

interface Rule {
  negative: boolean;
  matcher: CompiledMatcher;
  /** A trailing `/` rule: it matches only paths that end in `/` (directories), never a file's. */
  dirOnly: boolean;
  /**
   * The rule matches at any depth and only within the last component (no `/` but a trailing one, no class that
   * holds `/`): it matches a path exactly when it matches the path's last component (with the `/` of a directory).
   */
  basename: boolean;
  /**
   * For a basename rule `*` + ASCII literal without `/` (`*.log`, `*~`; not directory-only): the literal, lower-cased. Such a
   * rule matches a name exactly when the name ends with it, ASCII letters in either case (the engine folds the
   * input's case), so testEntry compares instead of running the automaton (most .gitignore lines are
   * like this, and the automaton was a listing's largest per-entry cost).
   */
  suffix?: string;
}

const IGNORED: IgnoreVerdict = { ignored: true, unignored: false };
const UNIGNORED: IgnoreVerdict = { ignored: false, unignored: true };

/** The verdict of one .gitignore file for one path (as the `ignore` package's `test()`). */
export interface IgnoreVerdict {
  ignored: boolean;
  unignored: boolean;
}

const NONE: IgnoreVerdict = { ignored: false, unignored: false };

/** The compiled rules of one .gitignore file. */
export class GitignoreRules {
  private readonly rules: Rule[] = [];
  /** Lines that were rules but exceeded the limits or the budget (they match nothing). */
  readonly skipped: number = 0;
  /** Automaton states of the rules in force. */
  readonly states: number = 0;
  /**
   * Verdicts of directories (`dir/`), so each parent is tested once per walk (a pure function of the rules and the
   * directory: kept while the rules are shared, emptied when it reaches DIR_VERDICTS_MAX entries or
   * DIR_VERDICTS_MAX_CHARS characters of paths).
   */
  private readonly dirCache = new Map<string, IgnoreVerdict>();
  /** Characters of the directory paths dirCache holds. */
  private dirCacheChars = 0;

  /**
   * Parses a .gitignore's text (any size; each line is bounded by LIMITS).
   * @param budget automaton states these rules may use in all (default LIMITS.gitignoreChainStates); a line that
   *   would go past it is skipped and counted, like a line over the limits
   */
  constructor(text: string, budget: number = LIMITS.gitignoreChainStates) {
    let skipped = 0;
    let states = 0;
    for (const line of text.split(/\r?\n/)) {
      if (!line) continue;
      try {
        const rule = parseRule(line);
        if (!rule) continue;
        if (states + rule.matcher.size > budget) {
          skipped++;
          continue;
        }
        states += rule.matcher.size;
        this.rules.push(rule);
      } catch (error) {
        if (!(error instanceof PatternTooComplexError)) throw error;
        skipped++;
      }
    }
    this.skipped = skipped;
    this.states = states;
  }

  /** Number of rules in force. */
  get size(): number {
    return this.rules.length;
  }

  /**
   * The verdict for `rel` (relative to this file's directory, `/`-separated, no leading `/`), a directory when
   * `isDir`. Parents are checked first: an ignored parent directory decides.
   */
  test(rel: string, isDir: boolean): IgnoreVerdict {
    const slash = rel.lastIndexOf('/');
    if (slash > 0) {
      const parent = this.testDir(rel.slice(0, slash));
      if (parent.ignored) return parent;
    }
    return this.testOne(isDir ? `${rel}/` : rel);
  }

  /**
   * `test(dir ? `${dir}/${name}` : name, isDir)` for the entry `name` of the directory `dir` (relative to this file's
   * directory, '' for that directory itself), without building the entry's path for the rules that match at any
   * depth (a walk tests every entry; reading each new path string was most of the cost). Pass the same
   * `dir` string for the entries of one directory: its verdict is kept between calls.
   */
  testEntry(dir: string, name: string, isDir: boolean): IgnoreVerdict {
    if (dir !== '') {
      if (dir !== this.lastDir) {
        this.lastDirVerdict = this.testDir(dir);
        this.lastDir = dir;
      }
      if (this.lastDirVerdict.ignored) return this.lastDirVerdict;
    }
    const subject = isDir ? `${name}/` : name;
    let full: string | null = null;
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const rule = this.rules[i];
      if (rule.dirOnly && !isDir) continue;
      const hit =
        rule.suffix !== undefined
          ? (endsWithFolded(name, rule.suffix) ?? rule.matcher.test(subject))
          : rule.matcher.test(rule.basename ? subject : (full ??= dir === '' ? subject : `${dir}/${subject}`));
      if (hit) return rule.negative ? UNIGNORED : IGNORED;
    }
    return NONE;
  }

  /** The directory testEntry saw last, and its verdict. */
  private lastDir = '';
  private lastDirVerdict: IgnoreVerdict = NONE;

  private testDir(dir: string): IgnoreVerdict {
    let v = this.dirCache.get(dir);
    if (v === undefined) {
      v = this.test(dir, true);
      if (this.dirCache.size >= DIR_VERDICTS_MAX || this.dirCacheChars + dir.length > DIR_VERDICTS_MAX_CHARS) {
        this.dirCache.clear();
        this.dirCacheChars = 0;
      }
      this.dirCache.set(dir, v);
      this.dirCacheChars += dir.length;
    }
    return v;
  }

  /** Last matching rule wins. */
  private testOne(path: string): IgnoreVerdict {
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const rule = this.rules[i];
      if (rule.matcher.test(path))
        return rule.negative ? { ignored: false, unignored: true } : { ignored: true, unignored: false };
    }
    return NONE;
  }
}

/** Most directory verdicts one GitignoreRules keeps (GitignoreRules.dirCache). */
const DIR_VERDICTS_MAX = 4096;
/**
 * Most characters of directory paths one GitignoreRules's verdicts are keyed by: 4,096 paths of thousands of
 * characters each (a deep tree) were 12 M characters per rules object, kept between calls by up to SHARED_RULES_MAX.
 */
const DIR_VERDICTS_MAX_CHARS = 256 * 1024;

/** Most characters of .gitignore text whose compiled rules `sharedGitignoreRules` keeps, in all (the rules are more). */
const SHARED_TEXT_MAX_CHARS = 256 * 1024;
/** Most compiled .gitignore files `sharedGitignoreRules` keeps. */
const SHARED_RULES_MAX = 64;

/** Compiled rules by budget and text, least recently used first (see `sharedGitignoreRules`). */
const compiledRules = processSlot('fs/glob/gitignore', () => ({
  byText: new Map<string, GitignoreRules>(),
  chars: 0,
}));

/**
 * `new GitignoreRules(text, budget)`, shared: the rules compiled earlier from the very same text under the same
 * budget when they are still kept. The caller reads the file every time (the text is compared in full), so a changed
 * file is always compiled afresh; only the compilation is saved (a listing loads every .gitignore from the root down
 * on every page) and the walk's code meets the same rule objects call after call. The rules are immutable; their
 * memos (directory verdicts) are pure functions of rules and directory. Texts over SHARED_TEXT_MAX_CHARS / 4 are
 * compiled and not kept; at most SHARED_RULES_MAX files and SHARED_TEXT_MAX_CHARS characters are kept in all.
 */
export function sharedGitignoreRules(text: string, budget: number): GitignoreRules {
  const key = `${budget}:${text}`;
  const kept = compiledRules.byText.get(key);
  if (kept !== undefined) {
    compiledRules.byText.delete(key); // refresh its LRU position
    compiledRules.byText.set(key, kept);
    return kept;
  }
  const rules = new GitignoreRules(text, budget);
  if (key.length > SHARED_TEXT_MAX_CHARS / 4) return rules;
  compiledRules.byText.set(key, rules);
  compiledRules.chars += key.length;
  for (const old of compiledRules.byText.keys()) {
    if (compiledRules.chars <= SHARED_TEXT_MAX_CHARS && compiledRules.byText.size <= SHARED_RULES_MAX) break;
    compiledRules.byText.delete(old);
    compiledRules.chars -= old.length;
  }
  return rules;
}

/** A token of a rule body after unescaping. */
type Tok =
  { k: 'lit'; c: string } | { k: 'star'; escaped?: true } | { k: 'q' } | { k: 'class'; node: Node } | { k: 'slash' };

/**
 * One line → a rule, or null when the line is not a rule.
 * @throws PatternTooComplexError over LIMITS
 */
export function parseRule(line: string): Rule | null {
  if (/^\s+$/.test(line) || /(?:[^\\]|^)\\$/.test(line) || line.startsWith('#')) return null;
  if (line.length > LIMITS.patternLength) {
    throw new PatternTooComplexError(
      'pattern_length',
      LIMITS.patternLength,
      `the rule is longer than ${LIMITS.patternLength} characters`,
    );
  }
  let body = line;
  let negative = false;
  if (body.startsWith('!')) {
    negative = true;
    body = body.slice(1);
  }
  if (body.startsWith('\\!')) body = `!${body.slice(2)}`;
  else if (body.startsWith('\\#')) body = `#${body.slice(2)}`;
  // "A slash at the beginning or middle" is decided on the body before its trailing whitespace is trimmed (as there).
  const anchored = /\/(?!$)/.test(body);
  body = body.replace(/^\uFEFF/, '');
  // Trailing whitespace: dropped, unless escaped (then one space stays).
  const trail = /((?:\\\\)*?)(\\?\s+)$/.exec(body);
  if (trail) body = body.slice(0, trail.index) + trail[1] + (trail[2].startsWith('\\') ? ' ' : '');
  // A rule that is empty by now (`!`, `! `, a lone BOM) is an empty regular expression in the `ignore` package: it
  // matches every path. Kept.
  const { node, dirOnly, basename, suffix } =
    body === '' ? { node: ast.star(ast.any()), dirOnly: false, basename: false } : ruleNode(body, anchored);
  return { negative, matcher: compile(node), dirOnly, basename, ...(suffix !== undefined ? { suffix } : {}) };
}

/**
 * The whole-path AST of a rule body (see the module comment for the rules); whether it is directory-only (the AST
 * then ends with `/`) and whether it matches within the last component only (Rule.basename).
 */
function ruleNode(
  body: string,
  anchored: boolean,
): { node: Node; dirOnly: boolean; basename: boolean; suffix?: string } {
  const nocase = true;
  const anchoredBySlash = body.startsWith('/');
  let rest = anchoredBySlash ? body.slice(1) : body;
  const items: Node[] = [];
  let leadingGlobstar = false;
  if (rest.startsWith('**/')) {
    leadingGlobstar = true;
    rest = rest.slice(3);
  }
  if (leadingGlobstar || (!anchored && !anchoredBySlash))
    items.push(ast.opt(ast.seq(ast.star(ast.any()), ast.lit('/', false))));
  const dirOnly = rest.endsWith('/') && !rest.endsWith('\\/');
  const toks = tokenize(rest);
  // A trailing `*` after `/` or at the very start of a slash-anchored rule needs one character at least.
  let n = toks.length;
  let tail: Node | null = null;
  if (!dirOnly && n > 0 && toks[n - 1].k === 'star') {
    const prev = n >= 2 ? toks[n - 2] : null;
    // (An escaped final `*` is a wildcard there, but never half of a `/**`.)
    const last = toks[n - 1] as { k: 'star'; escaped?: true };
    const globstarTail = !last.escaped && n >= 3 && prev?.k === 'star' && toks[n - 3].k === 'slash';
    if (!globstarTail) {
      const afterSlash = prev?.k === 'slash' || (prev === null && anchoredBySlash && !leadingGlobstar);
      tail = afterSlash ? ast.plus(ast.notSlash()) : ast.star(ast.notSlash());
      n--;
    }
  }
  for (let i = 0; i < n; i++) {
    const t = toks[i];
    // `/**` followed by `/` or the end: zero or more directories, or (at the end) everything inside.
    // (A `*` after it, even the trailing one taken off above, makes it no globstar: `a/***` is three `*`.)
    if (
      t.k === 'slash' &&
      toks[i + 1]?.k === 'star' &&
      toks[i + 2]?.k === 'star' &&
      ((i + 3 === n && tail === null) || toks[i + 3]?.k === 'slash')
    ) {
      if (i + 3 === n) {
        items.push(ast.lit('/', false), ast.plus(ast.any()));
      } else {
        items.push(ast.star(ast.seq(ast.lit('/', false), ast.plus(ast.notSlash()))));
      }
      i += 2;
      continue;
    }
    switch (t.k) {
      case 'lit':
        items.push(ast.lit(t.c, nocase));
        break;
      case 'slash':
        items.push(ast.lit('/', false));
        break;
      case 'star':
        items.push(ast.star(ast.notSlash()));
        break;
      case 'q':
        items.push(ast.notSlash());
        break;
      case 'class':
        items.push(t.node);
        break;
    }
  }
  if (tail) items.push(tail);
  // Not directory-only: the path itself, or it as a directory (`name/`).
  if (!dirOnly) items.push(ast.opt(ast.lit('/', false)));
  // Unanchored, a `/` only at the end (`anchored` is false), and no class that could match `/` (`[+-0]` can).
  const basename =
    !leadingGlobstar &&
    !anchored &&
    !anchoredBySlash &&
    !toks.some((t) => t.k === 'class' && t.node.t === 'set' && classHoldsSlash(t.node.set.ranges));
  // `*` then ASCII literals only (Rule.suffix).
  const literal = toks.slice(1).map((t) => (t.k === 'lit' ? t.c : null));
  const suffix =
    basename &&
    !dirOnly &&
    toks.length >= 2 &&
    toks[0].k === 'star' &&
    !(toks[0] as { escaped?: true }).escaped &&
    // (No `/` in it, not even escaped: a directory's trailing `/` must stay the optional one after the literal.)
    literal.every((c) => c !== null && c.length === 1 && c.charCodeAt(0) < 0x80 && c !== '/')
      ? literal.join('').toLowerCase()
      : undefined;
  return { node: ast.seq(...items), dirOnly, basename, ...(suffix !== undefined ? { suffix } : {}) };
}

/**
 * Whether `name` ends with `suffix` (lower-case ASCII), ASCII letters of `name` in either case; undefined when a
 * compared character of `name` is not ASCII (the automaton decides then: case folding can map one to ASCII).
 */
function endsWithFolded(name: string, suffix: string): boolean | undefined {
  const start = name.length - suffix.length;
  if (start < 0) return false;
  let same = true;
  for (let i = 0; i < suffix.length; i++) {
    let c = name.charCodeAt(start + i);
    if (c >= 0x80) return undefined;
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== suffix.charCodeAt(i)) same = false;
  }
  return same;
}

/** True when one of the ranges (pairs lo, hi) holds `/`. */
function classHoldsSlash(ranges: readonly number[]): boolean {
  for (let i = 0; i < ranges.length; i += 2) if (ranges[i] <= 0x2f && 0x2f <= ranges[i + 1]) return true;
  return false;
}

function tokenize(s: string): Tok[] {
  const toks: Tok[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\') {
      // A final escaped `*` is still a trailing wildcard in the `ignore` package; kept for compatibility.
      if (s[i + 1] === '*' && i + 2 === s.length) {
        toks.push({ k: 'star', escaped: true });
        i++;
        continue;
      }
      if (i + 1 < s.length) toks.push({ k: 'lit', c: s[++i] });
      continue;
    }
    if (c === '*') {
      toks.push({ k: 'star' });
      continue;
    }
    if (c === '?') {
      toks.push({ k: 'q' });
      continue;
    }
    if (c === '/') {
      toks.push({ k: 'slash' });
      continue;
    }
    if (c === '[') {
      // A class ends at the first `]`; it may not contain `/`. Unclosed (or interrupted by `/`... as `ignore` does:
      // it then matches nothing).
      const end = s.indexOf(']', i + 1);
      const slash = s.indexOf('/', i + 1);
      if (end < 0) {
        toks.push({ k: 'class', node: ast.none() });
        i = s.length;
        continue;
      }
      if (slash >= 0 && slash < end) {
        toks.push({ k: 'lit', c });
        continue;
      }
      const ranges: number[] = [];
      const inner = s.slice(i + 1, end);
      for (let j = 0; j < inner.length; j++) {
        let lo = inner.charCodeAt(j);
        if (inner[j] === '\\' && j + 1 < inner.length) lo = inner.charCodeAt(++j);
        if (inner[j + 1] === '-' && j + 2 < inner.length) {
          const hi = inner.charCodeAt(j + 2);
          if (lo <= hi) ranges.push(lo, hi);
          j += 2;
          continue;
        }
        ranges.push(lo, lo);
      }
      toks.push({ k: 'class', node: { t: 'set', set: { ranges, negate: false, noSlash: false, nocase: true } } });
      i = end;
      continue;
    }
    toks.push({ k: 'lit', c });
  }
  return toks;
}

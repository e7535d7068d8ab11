/**
 * The linear-time matching engine behind every pattern fs-tools evaluates on a name (globs, include/exclude,
 * .gitignore lines, --policy rules, the built-in secret rules): a small regular-expression AST compiled to a Thompson
 * NFA and run as a lazily built DFA (the technique of RE2 and ripgrep). No backtracking: a match costs at most
 * O(input length × NFA size) — each input character either follows a cached DFA transition (one array read) or builds
 * that transition once from the NFA (one epsilon closure, O(NFA size)). The DFA cache is bounded per matcher
 * (MAX_DFA_STATES); when it fills, it is dropped and rebuilt as needed, so memory stays bounded too.
 *
 * Matching is always of the whole input (anchored at both ends); callers that need "anywhere below" express it in the
 * AST (`(?:.*\/)?` prefix), never through a search loop. Characters are UTF-16 code units, as in the JavaScript
 * regular expressions (no `u` flag) this engine replaces.
 */

/** Thrown when a pattern's compiled form would exceed a documented limit (see LIMITS). */
export class PatternTooComplexError extends Error {
  override readonly name = 'PatternTooComplexError';
  /** Which limit: `pattern_length`, `nfa_states`, `nesting`, `brace_expansion`, `negated_extglob`. */
  readonly limit: string;
  /** The limit's value (0 for an unsupported construct). */
  readonly max: number;

  constructor(limit: string, max: number, message: string) {
    super(message);
    this.limit = limit;
    this.max = max;
  }
}

/** The documented limits (README "Patterns"). */
export const LIMITS = {
  /** Longest pattern, in UTF-16 code units (a .gitignore line, a glob, a policy rule). */
  patternLength: 1024,
  /** Largest compiled NFA, in states (about one per literal character, class or operator). */
  nfaStates: 4096,
  /** Deepest nesting of braces, classes and extglob groups. */
  nesting: 32,
  /** Most alternatives a `{x..y}` range may expand to, summed over the pattern. */
  braceExpansion: 1000,
  /**
   * Most automaton states of all the globs of one call together (`glob`, `include`, `exclude`): one entry's matching
   * then costs at most path length × this many steps.
   */
  callStates: 16_384,
  /**
   * Most automaton states of the .gitignore rules that apply to one path (its directory's .gitignore and its
   * ancestors' together); the lines past it are skipped like over-limit lines.
   */
  gitignoreChainStates: 32_768,
} as const;

/** Cached DFA states per matcher before the cache is dropped and rebuilt (bounds memory: ≤ ~0.6 KB a state). */
const MAX_DFA_STATES = 1024;

/** A set of UTF-16 code units. */
export interface CharSet {
  /** Inclusive [lo, hi] pairs. */
  ranges: number[];
  /** The set is the complement of `ranges`. */
  negate: boolean;
  /** `/` is never in the set, whatever `ranges`/`negate` say. */
  noSlash: boolean;
  /** Case-insensitive: a code unit is in the set when it, its lower case or its upper case is in `ranges`. */
  nocase: boolean;
}

/** The pattern AST. */
export type Node =
  | { t: 'set'; set: CharSet }
  | { t: 'seq'; items: Node[] }
  | { t: 'alt'; items: Node[] }
  | { t: 'rep'; item: Node; min: 0 | 1; /** 1 or Infinity. */ max: number; nonEmpty?: boolean };

const SLASH = 0x2f;

function foldCase(c: number, upper: boolean): number {
  const s = String.fromCharCode(c);
  const f = upper ? s.toUpperCase() : s.toLowerCase();
  return f.length === 1 ? f.charCodeAt(0) : c;
}

function inRanges(ranges: number[], c: number): boolean {
  for (let i = 0; i < ranges.length; i += 2) if (c >= ranges[i] && c <= ranges[i + 1]) return true;
  return false;
}

/** True when code unit `c` is in `set`. */
export function setHas(set: CharSet, c: number): boolean {
  if (set.noSlash && c === SLASH) return false;
  let m = inRanges(set.ranges, c);
  if (!m && set.nocase) m = inRanges(set.ranges, foldCase(c, false)) || inRanges(set.ranges, foldCase(c, true));
  return set.negate ? !m : m;
}

/** AST helpers. */
export const ast = {
  lit(s: string, nocase: boolean): Node {
    const items: Node[] = [];
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      items.push({ t: 'set', set: { ranges: [c, c], negate: false, noSlash: false, nocase } });
    }
    return items.length === 1 ? items[0] : { t: 'seq', items };
  },
  /** Any code unit (`.` with the s flag). */
  any(): Node {
    return { t: 'set', set: { ranges: [], negate: true, noSlash: false, nocase: false } };
  },
  /** Any code unit but `/`. */
  notSlash(): Node {
    return { t: 'set', set: { ranges: [], negate: true, noSlash: true, nocase: false } };
  },
  seq(...items: Node[]): Node {
    return items.length === 1 ? items[0] : { t: 'seq', items };
  },
  alt(...items: Node[]): Node {
    return items.length === 1 ? items[0] : { t: 'alt', items };
  },
  star(item: Node): Node {
    return { t: 'rep', item, min: 0, max: Infinity };
  },
  plus(item: Node): Node {
    return { t: 'rep', item, min: 1, max: Infinity };
  },
  opt(item: Node): Node {
    return { t: 'rep', item, min: 0, max: 1 };
  },
  empty(): Node {
    return { t: 'seq', items: [] };
  },
  /** Matches nothing. */
  none(): Node {
    return { t: 'set', set: { ranges: [], negate: false, noSlash: false, nocase: false } };
  },
};

/** NFA state kinds. */
const CHAR = 0;
const SPLIT = 1;
const MATCH = 2;

/** A compiled whole-input matcher. `test(s, from)` matches `s.slice(from)` without copying it. */
export interface CompiledMatcher {
  test(s: string, from?: number): boolean;
  /** NFA states (the cost factor of a cache miss). */
  readonly size: number;
}

interface DState {
  /** NFA CHAR states in this DFA state, ascending. */
  states: Int32Array;
  accept: boolean;
  /** Transitions for code units < 128: DFA state index, -1 unknown. */
  ascii: Int32Array | null;
  /** Transitions for other code units. */
  other: Map<number, number> | null;
}

/**
 * Compiles an AST into a matcher.
 * @throws PatternTooComplexError when the NFA would exceed LIMITS.nfaStates
 */
export function compile(root: Node): CompiledMatcher {
  const kind: number[] = [];
  const out1: number[] = [];
  const out2: number[] = [];
  const sets: (CharSet | null)[] = [];
  const add = (k: number, a: number, b: number, set: CharSet | null): number => {
    if (kind.length >= LIMITS.nfaStates) {
      throw new PatternTooComplexError(
        'nfa_states',
        LIMITS.nfaStates,
        `the pattern compiles to more than ${LIMITS.nfaStates} automaton states`,
      );
    }
    kind.push(k);
    out1.push(a);
    out2.push(b);
    sets.push(set);
    return kind.length - 1;
  };
  const match = add(MATCH, -1, -1, null);
  // Continuation-passing construction: build(node, next) returns the state that matches node then continues at next.
  const build = (node: Node, next: number): number => {
    switch (node.t) {
      case 'set':
        return add(CHAR, next, -1, node.set);
      case 'seq': {
        let s = next;
        for (let i = node.items.length - 1; i >= 0; i--) s = build(node.items[i], s);
        return s;
      }
      case 'alt': {
        if (node.items.length === 0) return next;
        let s = build(node.items[node.items.length - 1], next);
        for (let i = node.items.length - 2; i >= 0; i--) s = add(SPLIT, build(node.items[i], next), s, null);
        return s;
      }
      case 'rep': {
        if (node.max === 1) {
          const body = build(node.item, next);
          return node.min === 1 ? body : add(SPLIT, body, next, null);
        }
        const loop = add(SPLIT, -1, next, null);
        const body = build(node.item, loop);
        out1[loop] = body;
        return node.min === 1 ? body : loop;
      }
    }
  };
  const start = build(root, match);
  return new LazyDfa(kind, out1, out2, sets, start);
}

class LazyDfa implements CompiledMatcher {
  private readonly kind: Int8Array;
  private readonly out1: Int32Array;
  private readonly out2: Int32Array;
  private readonly sets: (CharSet | null)[];
  private readonly startState: number;
  private dstates: DState[] = [];
  private index = new Map<string, number>();
  private start = 0;
  /** Scratch for closures: visit marks by generation. */
  private readonly mark: Int32Array;
  private generation = 0;
  private readonly stack: Int32Array;
  readonly size: number;

  constructor(kind: number[], out1: number[], out2: number[], sets: (CharSet | null)[], start: number) {
    this.kind = Int8Array.from(kind);
    this.out1 = Int32Array.from(out1);
    this.out2 = Int32Array.from(out2);
    this.sets = sets;
    this.startState = start;
    this.size = kind.length;
    this.mark = new Int32Array(kind.length);
    // Pushes: the seeds (≤ states) plus two per SPLIT visited once: 3 × states bounds the stack.
    this.stack = new Int32Array(kind.length * 3 + 2);
    this.reset();
  }

  private reset(): void {
    this.dstates = [];
    this.index = new Map();
    this.start = this.intern(this.closure([this.startState]));
  }

  /** Epsilon closure of `seeds`: the CHAR states reached (ascending) and whether MATCH is reached (as -1 first). */
  private closure(seeds: ArrayLike<number>): { states: number[]; accept: boolean } {
    const gen = ++this.generation;
    const { mark, stack, kind, out1, out2 } = this;
    const states: number[] = [];
    let accept = false;
    let sp = 0;
    for (let i = seeds.length - 1; i >= 0; i--) stack[sp++] = seeds[i];
    while (sp > 0) {
      const s = stack[--sp];
      if (mark[s] === gen) continue;
      mark[s] = gen;
      const k = kind[s];
      if (k === CHAR) states.push(s);
      else if (k === MATCH) accept = true;
      else {
        if (mark[out2[s]] !== gen) stack[sp++] = out2[s];
        if (mark[out1[s]] !== gen) stack[sp++] = out1[s];
      }
    }
    states.sort((a, b) => a - b);
    return { states, accept };
  }

  private intern(c: { states: number[]; accept: boolean }): number {
    const key = `${c.accept ? 1 : 0}:${c.states.join(',')}`;
    let id = this.index.get(key);
    if (id === undefined) {
      id = this.dstates.length;
      this.dstates.push({ states: Int32Array.from(c.states), accept: c.accept, ascii: null, other: null });
      this.index.set(key, id);
    }
    return id;
  }

  /** Builds (and caches) the transition of DFA state `d` on code unit `ch`; returns the target index. */
  private step(d: number, ch: number): number {
    if (this.dstates.length >= MAX_DFA_STATES) {
      // Cache full: drop it and re-intern the current state (the match goes on from the same NFA set).
      const cur = this.dstates[d];
      this.reset();
      d = this.intern({ states: Array.from(cur.states), accept: cur.accept });
    }
    const ds = this.dstates[d];
    const seeds: number[] = [];
    for (let i = 0; i < ds.states.length; i++) {
      const s = ds.states[i];
      if (setHas(this.sets[s]!, ch)) seeds.push(this.out1[s]);
    }
    const target = this.intern(this.closure(seeds));
    const from = this.dstates[d];
    if (ch < 128) {
      if (!from.ascii) from.ascii = new Int32Array(128).fill(-1);
      from.ascii[ch] = target;
    } else {
      (from.other ??= new Map()).set(ch, target);
    }
    return target;
  }

  test(s: string, from = 0): boolean {
    let d = this.start;
    let ds = this.dstates[d];
    for (let i = from; i < s.length; i++) {
      if (ds.states.length === 0) return false; // dead: nothing can match any more
      const ch = s.charCodeAt(i);
      let next = ch < 128 ? (ds.ascii ? ds.ascii[ch] : -1) : (ds.other?.get(ch) ?? -1);
      if (next < 0) next = this.step(d, ch);
      d = next;
      ds = this.dstates[d];
    }
    return ds.accept;
  }
}

/**
 * The claims of ARCHITECTURE.md "Where each decision lives" that a machine can check, read from the source with the
 * TypeScript compiler (as test/layering.test.ts reads imports):
 *   - Policy door: nothing outside src/policy mints an `AllowedPath` (no `as AllowedPath`, `<AllowedPath>` or
 *     `as unknown as AllowedPath` cast);
 *   - Verified access: src/fs/path-lock.ts and src/fs/search-reader.ts import the verified-access module
 *     (src/fs/verified-dir.ts and its parts) and open no directory their own way (no O_DIRECTORY open, no
 *     `/proc/self/fd` spelling of their own);
 *   - Subprocess runner: every child process starts in src/vcs/run-command.ts (no `child_process`, `cluster` or
 *     `execa` import anywhere else in src);
 *   - Process state: no module in src declares module-level mutable state outside src/process-slots.ts (no top-level
 *     `let`/`var`, no top-level instance of a class that keeps state, no top-level binding the module mutates, no
 *     static field that is not readonly), except the named entries of MODULE_STATE_ALLOWED.
 * Each detector is first run on a small source that breaks the rule, so a detector that finds nothing cannot pass.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { SLOT_NAMES } from '../src/process-slots.js';

const SRC = path.resolve(import.meta.dirname, '..', 'src');

/** The verified-access module: its surface and its parts (relative to src/). */
const VERIFIED_ACCESS = ['fs/verified-dir.ts', 'fs/dir-identity.ts', 'fs/held-dirs.ts'];

/** Modules that start processes: Node's, and a library around them (execa, once the runner's). */
const PROCESS_MODULES = new Set(['child_process', 'node:child_process', 'cluster', 'node:cluster', 'execa']);

/**
 * Module-level mutable values that stay outside the process slots, each with why (the same reason is a one-line comment
 * at the declaration): the registry itself, side tables keyed by an object (the data of that object, gone with it),
 * memos of pure functions of immutable input, and lazy constants (computed once, never changed).
 */
const MODULE_STATE_ALLOWED: Readonly<Record<string, string>> = {
  'process-slots.ts:slots': 'the registry of the process state itself',
  'fs/process-identity.ts:self': "lazy constant: this process's identity, computed on first use",
  'policy/occ.ts:tooLargeToMerge': 'side table (WeakSet) keyed by a mismatch error',
  'policy/file-policy.ts:RULE_MATCHERS': 'memo of a pure function: a rule glob → its compiled predicate',
  'server/create-server.ts:refusedArguments': "side table (WeakMap) keyed by a request's handler context",
  'tools/sealed-result.ts:sealed': 'side table (WeakMap) keyed by a sealed result: its serialized parts',
  'server/stdio-transport.ts:lastEscaped': "memo of a pure function: the last text escaped → JSON.stringify's spelling",
  'server/tool-schemas.ts:cache': "memo (WeakMap) of a tool's declaration, derived from its immutable definition",
  'server/tool-schemas.ts:envelopeErrorJson': "lazy constant: the envelope's JSON Schema",
  'server/tool-schemas.ts:builtEntries': "lazy constant: the build's advertised entries, parsed",
  'tools/issue-untrusted.ts:markerWordsExpression': "lazy constant: the marker words' `g` RegExp (matchAll only)",
  'tools/text-safe.ts:UNSAFE_G': 'constant `g` RegExp: its lastIndex is reset around its one stateful use',
};

/** Constructors whose instances carry no state between uses (a `g` RegExp is used only by replace and matchAll). */
const STATELESS_CONSTRUCTORS = new Set(['Error', 'RegExp', 'TextDecoder', 'TextEncoder']);

/** Methods that change the collection or array they are called on. */
const MUTATING_METHODS = new Set([
  'set',
  'add',
  'delete',
  'clear',
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'fill',
  'copyWithin',
]);

function listModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return listModules(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

function parse(name: string, text: string): ts.SourceFile {
  return ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
}

function lineOf(source: ts.SourceFile, node: ts.Node): number {
  return source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
}

/** Every node of `source` for which `test` holds, as `line: text`. */
function findNodes(source: ts.SourceFile, test: (node: ts.Node) => boolean): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (test(node)) out.push(`${lineOf(source, node)}: ${node.getText(source).slice(0, 80)}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** Casts to the brand: `x as AllowedPath`, `<AllowedPath>x`, `x as unknown as AllowedPath`. */
function brandCasts(source: ts.SourceFile): string[] {
  return findNodes(
    source,
    (node) =>
      (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) && /\bAllowedPath\b/.test(node.type.getText()),
  );
}

/** Module specifiers of every static import, re-export, dynamic import() and require() of `source`. */
function specifiersOf(source: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      out.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require') ||
        (ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'getBuiltinModule')) &&
      node.arguments.length > 0 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The modules (relative to src/) `source` imports from, resolved from its relative specifiers. */
function importedModules(file: string, source: ts.SourceFile): string[] {
  return specifiersOf(source)
    .filter((s) => s.startsWith('.'))
    .map((s) =>
      path
        .relative(SRC, path.resolve(path.dirname(file), s))
        .split(path.sep)
        .join('/')
        .replace(/\.js$/, '.ts'),
    );
}

/** A directory opened or a descriptor spelled by hand: the O_DIRECTORY flag, a `/proc/self/fd` string. */
function ownDirectoryAccess(source: ts.SourceFile): string[] {
  return findNodes(
    source,
    (node) =>
      (ts.isIdentifier(node) && node.text === 'O_DIRECTORY') ||
      ((ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node)) &&
        node.text.includes('/proc/self/fd')),
  );
}

/** The names a binding (`a`, `{ a, b: [c] }`) declares. */
function boundNames(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : boundNames(e.name)));
}

/** The names a scope node declares itself: parameters, block-level declarations, loop and catch variables. */
function scopeNames(scope: ts.Node): string[] {
  if (ts.isFunctionLike(scope)) {
    const own = ts.isFunctionExpression(scope) && scope.name ? [scope.name.text] : [];
    return [...own, ...scope.parameters.flatMap((p) => boundNames(p.name))];
  }
  if (ts.isBlock(scope) || ts.isCaseClause(scope) || ts.isDefaultClause(scope)) {
    return scope.statements.flatMap((st) => {
      if (ts.isVariableStatement(st)) return st.declarationList.declarations.flatMap((d) => boundNames(d.name));
      if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st)) && st.name) return [st.name.text];
      return [];
    });
  }
  if (
    (ts.isForStatement(scope) || ts.isForInStatement(scope) || ts.isForOfStatement(scope)) &&
    scope.initializer &&
    ts.isVariableDeclarationList(scope.initializer)
  ) {
    return scope.initializer.declarations.flatMap((d) => boundNames(d.name));
  }
  if (ts.isCatchClause(scope) && scope.variableDeclaration) return boundNames(scope.variableDeclaration.name);
  return [];
}

/** True when `id` names a local declaration (a parameter, a block's `const`, …) that shadows the module's. */
function isShadowed(id: ts.Identifier): boolean {
  for (let scope = id.parent; !ts.isSourceFile(scope); scope = scope.parent) {
    if (scopeNames(scope).includes(id.text)) return true;
  }
  return false;
}

/** True when `id` (a use of a module-level name) is the root of a write: `x.a = …`, `x[i]++`, `delete x.a`, `x.push(…)`. */
function isMutation(id: ts.Identifier): boolean {
  let node: ts.Node = id;
  while (
    (ts.isPropertyAccessExpression(node.parent) || ts.isElementAccessExpression(node.parent)) &&
    node.parent.expression === node
  ) {
    node = node.parent;
  }
  const parent = node.parent;
  if (node !== id) {
    if (
      ts.isBinaryExpression(parent) &&
      parent.left === node &&
      parent.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
      parent.operatorToken.kind <= ts.SyntaxKind.LastAssignment
    ) {
      return true;
    }
    if ((ts.isPrefixUnaryExpression(parent) || ts.isPostfixUnaryExpression(parent)) && parent.operand === node) {
      return parent.operator === ts.SyntaxKind.PlusPlusToken || parent.operator === ts.SyntaxKind.MinusMinusToken;
    }
    if (ts.isDeleteExpression(parent)) return true;
  }
  // `x.method(…)` or `x.a.method(…)` with a mutating method: the outermost access is `….method`, called.
  return (
    ts.isPropertyAccessExpression(node) &&
    MUTATING_METHODS.has(node.name.text) &&
    ts.isCallExpression(parent) &&
    parent.expression === node
  );
}

/** The names of `candidates` (a local name → the name reported) that `source` writes through. */
function writtenNames(source: ts.SourceFile, candidates: ReadonlyMap<string, string>): Set<string> {
  const written = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && candidates.has(node.text) && isMutation(node) && !isShadowed(node)) {
      written.add(candidates.get(node.text)!);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return written;
}

/** Whether `init` is `processSlot(…)`: the sanctioned home of module state. */
function isProcessSlot(init: ts.Expression | undefined): boolean {
  while (init && (ts.isParenthesizedExpression(init) || ts.isAsExpression(init) || ts.isSatisfiesExpression(init))) {
    init = init.expression;
  }
  return (
    !!init && ts.isCallExpression(init) && ts.isIdentifier(init.expression) && init.expression.text === 'processSlot'
  );
}

/**
 * The module-level mutable state `source` declares, as `name: why`: a top-level `let`/`var`; a top-level `const`
 * holding a new instance of a class other than STATELESS_CONSTRUCTORS and the collections (a pool, a cache); a
 * top-level `const` the module writes through (a collection, array or object it changes; writes from other modules
 * are `writesFromImporters`'); a static field without `readonly`. A `const` whose value is a process slot
 * (`processSlot(…)`) is the sanctioned way and is not reported.
 */
function moduleState(source: ts.SourceFile): string[] {
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isClassDeclaration(statement)) continue;
    for (const m of statement.members) {
      const modifiers = ts.canHaveModifiers(m) ? (ts.getModifiers(m) ?? []) : [];
      if (
        ts.isPropertyDeclaration(m) &&
        modifiers.some((x) => x.kind === ts.SyntaxKind.StaticKeyword) &&
        !modifiers.some((x) => x.kind === ts.SyntaxKind.ReadonlyKeyword)
      ) {
        found.push(`${statement.name?.text ?? 'class'}.${m.name.getText(source)}: static field`);
      }
    }
  }
  for (const d of topLevelBindings(source)) {
    if (d.kind === 'let') found.push(`${d.name}: let`);
    else if (d.constructed) found.push(`${d.name}: new ${d.constructed}`);
  }
  const plain = new Map(
    topLevelBindings(source)
      .filter((d) => d.kind === 'const' && !d.constructed)
      .map((d) => [d.name, d.name]),
  );
  for (const name of writtenNames(source, plain)) found.push(`${name}: written`);
  return found;
}

/** A top-level binding: its name, `let` (also `var`) or a plain `const`, and the class of a stateful instance. */
interface TopLevelBinding {
  name: string;
  kind: 'let' | 'const';
  constructed?: string;
}

/** The top-level variable bindings of `source`, process slots left out. */
function topLevelBindings(source: ts.SourceFile): TopLevelBinding[] {
  const out: TopLevelBinding[] = [];
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    const isConst = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of statement.declarationList.declarations) {
      for (const name of boundNames(d.name)) {
        if (!isConst) {
          out.push({ name, kind: 'let' });
          continue;
        }
        if (isProcessSlot(d.initializer)) continue;
        const init = d.initializer;
        const ctor = init && ts.isNewExpression(init) ? init.expression.getText(source) : undefined;
        const stateful =
          ctor !== undefined && !STATELESS_CONSTRUCTORS.has(ctor) && !/^(Weak)?(Map|Set)$|^Array$/.test(ctor);
        out.push({ name, kind: 'const', constructed: stateful ? ctor : undefined });
      }
    }
  }
  return out;
}

/**
 * Plain `const`s of one module that another module writes through (`import { cache } from './x.js'; cache.a = 1`), as
 * `exporter.ts:name` keys. `sources` are modules by their path relative to src/ (`/`-separated).
 */
function writesFromImporters(sources: ReadonlyArray<{ rel: string; source: ts.SourceFile }>): string[] {
  const exported = new Map(
    sources.map(({ rel, source }) => [
      rel,
      new Set(
        topLevelBindings(source)
          .filter((d) => d.kind === 'const' && !d.constructed)
          .map((d) => d.name),
      ),
    ]),
  );
  const keys = new Set<string>();
  for (const { rel, source } of sources) {
    const candidates = new Map<string, string>();
    for (const statement of source.statements) {
      if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      const specifier = statement.moduleSpecifier.text;
      const bindings = statement.importClause?.namedBindings;
      if (
        !specifier.startsWith('.') ||
        statement.importClause?.isTypeOnly ||
        !bindings ||
        !ts.isNamedImports(bindings)
      ) {
        continue;
      }
      const target = path.posix.join(path.posix.dirname(rel), specifier).replace(/\.js$/, '.ts');
      for (const e of bindings.elements) {
        const name = (e.propertyName ?? e.name).text;
        if (!e.isTypeOnly && exported.get(target)?.has(name)) candidates.set(e.name.text, `${target}:${name}`);
      }
    }
    for (const key of writtenNames(source, candidates)) keys.add(key);
  }
  return [...keys];
}

/** The slot names `source` claims: the string literal first argument of each `processSlot(…)` call. */
function slotNames(source: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'processSlot' &&
      node.arguments.length > 0 &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

const modules = listModules(SRC).map((file) => {
  const rel = path.relative(SRC, file).split(path.sep).join('/');
  return { file, rel, source: parse(file, readFileSync(file, 'utf8')) };
});
const moduleByRel = new Map(modules.map((m) => [m.rel, m]));

describe('the detectors', () => {
  it('find what they look for in a source that breaks each rule', () => {
    const bad = parse(
      'bad.ts',
      [
        "import { spawn } from 'node:child_process';",
        "const x = '/a' as AllowedPath;",
        "const y = <AllowedPath>'/b';",
        "const z = ('/c' as unknown) as AllowedPath;",
        'const fd = openSync(d, constants.O_RDONLY | constants.O_DIRECTORY);',
        'const at = `/proc/self/fd/${fd}/name`;',
        "const e = await import('execa');",
        "const c = process.getBuiltinModule('node:child_process');",
      ].join('\n'),
    );
    expect(brandCasts(bad)).toHaveLength(3);
    expect(specifiersOf(bad).filter((s) => PROCESS_MODULES.has(s))).toEqual([
      'node:child_process',
      'execa',
      'node:child_process',
    ]);
    expect(ownDirectoryAccess(bad)).toHaveLength(2);
    const good = parse('good.ts', "import type { AllowedPath } from './resolve-path.js';\nconst n: string = 'x';");
    expect(brandCasts(good)).toEqual([]);
    expect(ownDirectoryAccess(good)).toEqual([]);
  });

  it('find module-level mutable state, and leave constants and process slots alone', () => {
    const bad = parse(
      'state.ts',
      [
        'let counter = 0;',
        'var legacy = 1;',
        'const pool = new WorkerPool(4);',
        'const seen = new Map<string, number>();',
        'export function note(k: string): void { seen.set(k, 1); }',
        'const queue: number[] = [];',
        'function later(n: number): void { queue.push(n); }',
        'const tally = { calls: 0 };',
        'const bump = () => tally.calls++;',
        'const hooks = { log: null as null | (() => void) };',
        'export function setLog(f: () => void): void { hooks.log = f; }',
        'const nested = { inner: { n: 0 } };',
        'nested.inner.n += 1;',
        'const doomed = { a: 1 };',
        'delete (doomed as { a?: number }).a;',
        'class Cache { static entries = new Map(); static readonly LIMIT = 4; }',
      ].join('\n'),
    );
    expect(moduleState(bad).sort()).toEqual(
      [
        'counter: let',
        'legacy: let',
        'pool: new WorkerPool',
        'seen: written',
        'queue: written',
        'tally: written',
        'hooks: written',
        'nested: written',
        'Cache.entries: static field',
      ].sort(),
    );
    const good = parse(
      'constants.ts',
      [
        "const NAMES = new Set(['a', 'b']);",
        "const TABLE = new Map([['a', 1]]);",
        "const LIST = ['x', 'y'];",
        'const LIMITS = { max: 4 };',
        "const SENTINEL = new Error('stop');",
        "const WORDS = new RegExp('a', 'gu');",
        "const state = processSlot('fs/example', () => ({ n: 0, seen: new Set<string>() }));",
        'export function use(k: string): boolean { state.n++; state.seen.add(k); return NAMES.has(k) && LIST.includes(k); }',
        'export function local(): number[] { const LIST: number[] = []; LIST.push(LIMITS.max); return LIST; }',
      ].join('\n'),
    );
    expect(moduleState(good)).toEqual([]);
    const exporter = parse('fs/tables.ts', "export const CACHE = { hits: 0 };\nexport const NAMES = ['a'];");
    const importer = parse(
      'tools/user.ts',
      "import { CACHE, NAMES } from '../fs/tables.js';\nexport function hit(): boolean { CACHE.hits++; return NAMES.includes('a'); }",
    );
    expect(
      writesFromImporters([
        { rel: 'fs/tables.ts', source: exporter },
        { rel: 'tools/user.ts', source: importer },
      ]),
    ).toEqual(['fs/tables.ts:CACHE']);
  });

  it('read every module under src/', () => {
    expect(modules.length).toBeGreaterThan(50);
    // Policy does mint the brand, so the cast detector sees real code.
    expect(brandCasts(moduleByRel.get('policy/resolve-path.ts')!.source).length).toBeGreaterThan(0);
  });
});

describe('Policy door: only src/policy mints AllowedPath', () => {
  it('no module outside src/policy casts to AllowedPath', () => {
    const casts = modules
      .filter((m) => !m.rel.startsWith('policy/'))
      .flatMap((m) => brandCasts(m.source).map((c) => `${m.rel}:${c}`));
    expect(casts).toEqual([]);
  });
});

describe('Verified access: one module', () => {
  /** What keeps `rel` from using the verified-access module only. */
  function ownWays(rel: string): string[] {
    const m = moduleByRel.get(rel);
    if (!m) return [`${rel}: missing`];
    const imports = importedModules(m.file, m.source);
    return [
      ...(imports.some((i) => VERIFIED_ACCESS.includes(i))
        ? []
        : [`${rel}: does not import the verified-access module`]),
      ...ownDirectoryAccess(m.source).map((a) => `${rel}:${a}`),
    ];
  }

  it('src/fs/path-lock.ts and its parts use it', () => {
    expect(ownWays('fs/path-lock.ts')).toEqual([]);
    expect(ownWays('fs/lock-file.ts')).toEqual([]);
    // Where a lock lives is chosen by path; nothing is opened there.
    expect(ownDirectoryAccess(moduleByRel.get('fs/lock-site.ts')!.source)).toEqual([]);
  });

  it('the search reader (src/fs/search-reader*.ts) uses it: its threads read through it, the rest opens nothing', () => {
    expect(ownWays('fs/search-reader-read.ts')).toEqual([]);
    for (const rel of ['fs/search-reader.ts', 'fs/search-reader-match.ts', 'fs/search-reader-protocol.ts']) {
      expect(moduleByRel.has(rel), rel).toBe(true);
      expect(ownDirectoryAccess(moduleByRel.get(rel)!.source), rel).toEqual([]);
    }
  });
});

describe('Process state: module-level mutable state only in src/process-slots.ts', () => {
  const declared = [
    ...modules.flatMap((m) =>
      moduleState(m.source).map((entry) => ({ key: `${m.rel}:${entry.slice(0, entry.indexOf(':'))}`, entry })),
    ),
    ...writesFromImporters(modules).map((key) => ({ key, entry: 'written by an importer' })),
  ];

  it('no module declares module-level mutable state outside the process slots and the allow list', () => {
    expect(declared.filter((d) => !(d.key in MODULE_STATE_ALLOWED)).map((d) => `${d.key} (${d.entry})`)).toEqual([]);
  });

  it('each slot is claimed once, by the module it is named for, and every listed slot has its owner', () => {
    const claims = modules.flatMap((m) =>
      findNodes(
        m.source,
        (node) =>
          ts.isCallExpression(node) &&
          ts.isIdentifier(node.expression) &&
          node.expression.text === 'processSlot' &&
          node.arguments.length > 0,
      ).map(() => m.rel),
    );
    const named = modules.flatMap((m) => slotNames(m.source).map((name) => ({ rel: m.rel, name })));
    expect(named.length).toBe(claims.length); // every claim names its slot by a literal
    expect(named.filter(({ rel, name }) => `${name}.ts` !== rel)).toEqual([]);
    expect(named.map(({ name }) => name).sort()).toEqual([...SLOT_NAMES].sort());
  });

  it('every allowed entry is still declared (a stale entry would hide a new one of the same name)', () => {
    const keys = new Set(declared.map((d) => d.key));
    expect(Object.keys(MODULE_STATE_ALLOWED).filter((k) => !keys.has(k))).toEqual([]);
  });
});

describe('Subprocess runner: every child process starts in src/vcs/run-command.ts', () => {
  const starters = modules
    .filter((m) => m.rel !== 'vcs/run-command.ts')
    .flatMap((m) =>
      specifiersOf(m.source)
        .filter((s) => PROCESS_MODULES.has(s))
        .map((s) => `${m.rel} imports ${s}`),
    );

  it('the runner is where processes start', () => {
    expect(specifiersOf(moduleByRel.get('vcs/run-command.ts')!.source)).toContain('node:child_process');
  });

  it('no other module imports a process-starting module', () => {
    expect(starters).toEqual([]);
  });
});

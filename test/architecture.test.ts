/**
 * The claims of ARCHITECTURE.md "Where each decision lives" that a machine can check, read from the source with the
 * TypeScript compiler (as test/layering.test.ts reads imports):
 *   - Policy door: nothing outside src/policy mints an `AllowedPath` (no `as AllowedPath`, `<AllowedPath>` or
 *     `as unknown as AllowedPath` cast);
 *   - Verified access: src/fs/path-lock.ts and src/fs/search-reader.ts import the verified-access module
 *     (src/fs/verified-dir.ts and its parts) and open no directory their own way (no O_DIRECTORY open, no
 *     `/proc/self/fd` spelling of their own);
 *   - Subprocess runner: every child process starts in src/vcs/run-command.ts (no `child_process`, `cluster` or
 *     `execa` import anywhere else in src).
 * Each detector is first run on a small source that breaks the rule, so a detector that finds nothing cannot pass.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '..', 'src');

/** The verified-access module: its surface and its parts (relative to src/). */
const VERIFIED_ACCESS = ['fs/verified-dir.ts', 'fs/dir-identity.ts', 'fs/held-dirs.ts'];

/** Modules that start processes: Node's, and the one library the runner uses. */
const PROCESS_MODULES = new Set(['child_process', 'node:child_process', 'cluster', 'node:cluster', 'execa']);

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
        (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
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
      ].join('\n'),
    );
    expect(brandCasts(bad)).toHaveLength(3);
    expect(specifiersOf(bad).filter((s) => PROCESS_MODULES.has(s))).toEqual(['node:child_process', 'execa']);
    expect(ownDirectoryAccess(bad)).toHaveLength(2);
    const good = parse('good.ts', "import type { AllowedPath } from './resolve-path.js';\nconst n: string = 'x';");
    expect(brandCasts(good)).toEqual([]);
    expect(ownDirectoryAccess(good)).toEqual([]);
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

describe('Subprocess runner: every child process starts in src/vcs/run-command.ts', () => {
  const starters = modules
    .filter((m) => m.rel !== 'vcs/run-command.ts')
    .flatMap((m) =>
      specifiersOf(m.source)
        .filter((s) => PROCESS_MODULES.has(s))
        .map((s) => `${m.rel} imports ${s}`),
    );

  it('the runner is where processes start', () => {
    expect(specifiersOf(moduleByRel.get('vcs/run-command.ts')!.source)).toContain('execa');
  });

  it('no other module imports a process-starting module', () => {
    expect(starters).toEqual([]);
  });
});

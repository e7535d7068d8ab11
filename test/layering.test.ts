/**
 * Layering invariants (issue 11 item 5), in the manner of the MCP TypeScript SDK's layering test: walk every module
 * under src/, parse its imports with the TypeScript compiler (static imports, `export … from`, `import type`, dynamic
 * `import()`), and fail on any import against the flow
 *
 *   cli → server → tools → mutation → config → policy → primitives (fs, patch, vcs, audit) → errors, version, process-slots
 *
 * A module may import its own layer or any layer below it, never one above. Where config, audit and version sit:
 *   - config (src/config.ts) parses flags and loads the policy file, so it sits above policy and below tools/server,
 *     which read the parsed Config; policy never imports config (the old config ↔ policy cycle: ConfiguredRoot now
 *     lives in src/policy/roots.ts);
 *   - audit (src/audit) writes the log file: a primitive, used only by the server's process state;
 *   - version (src/version.ts) is a constant: a leaf beside errors;
 *   - process-slots (src/process-slots.ts) is the registry of the process's state: a leaf beside errors, so that every
 *     layer (errors included) can keep its state there;
 *   - mutation (src/mutation) is the one mutation pipeline the mutating tools call: below tools (it never imports a
 *     tool; the per-call ToolContext lives in src/mutation/context.ts) and above config and policy.
 * One exception, type-only and named: primitives may `import type` from src/policy/resolve-path.ts — the
 * `AllowedPath` brand, by which a primitive's signature states that it acts only on paths policy authorized. The import
 * is erased at compile time, so it adds no runtime dependency; any runtime import of policy from a primitive fails.
 * Beside the layer order, the graph between areas (one node per directory or top-level file) must have no cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '..', 'src');

/** Layers from the top; each entry is a list of areas (a directory under src/ or a top-level file's base name). */
const LAYERS: ReadonlyArray<{ name: string; areas: readonly string[] }> = [
  { name: 'cli', areas: ['cli'] },
  { name: 'server', areas: ['server'] },
  { name: 'tools', areas: ['tools'] },
  { name: 'mutation', areas: ['mutation'] },
  { name: 'config', areas: ['config'] },
  { name: 'policy', areas: ['policy'] },
  { name: 'primitives', areas: ['fs', 'patch', 'vcs', 'audit'] },
  { name: 'errors', areas: ['errors', 'version', 'process-slots'] },
];

/** The only type-only crossing allowed, from a layer to one module above it. */
const TYPE_ONLY_EXCEPTIONS: ReadonlyArray<{ fromLayer: string; to: string }> = [
  { fromLayer: 'primitives', to: 'policy/resolve-path.ts' },
];

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
  line: number;
}

function listModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return listModules(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
  });
}

function areaOf(relative: string): string {
  const [first] = relative.split('/');
  return relative.includes('/') ? first : first.replace(/\.ts$/, '');
}

function layerOf(area: string): number {
  return LAYERS.findIndex((l) => l.areas.includes(area));
}

/** Every relative import of one module, resolved to a path relative to src/ (`.js` specifiers name `.ts` files). */
function importsOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const from = path.relative(SRC, file).split(path.sep).join('/');
  const edges: Edge[] = [];
  const add = (specifier: string, typeOnly: boolean, node: ts.Node) => {
    if (!specifier.startsWith('.')) return;
    const target = path
      .relative(SRC, path.resolve(path.dirname(file), specifier))
      .split(path.sep)
      .join('/')
      .replace(/\.js$/, '.ts');
    edges.push({ from, to: target, typeOnly, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const allTypes =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier.text, allTypes, node);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const allTypes =
        node.isTypeOnly ||
        (node.exportClause !== undefined &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.length > 0 &&
          node.exportClause.elements.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier.text, allTypes, node);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length > 0 &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      add(node.arguments[0].text, false, node);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      add(node.argument.literal.text, true, node); // `import('./x.js').T` in a type position
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

const modules = listModules(SRC);
const edges = modules.flatMap(importsOf);

function isExempt(e: Edge): boolean {
  const fromLayer = layerOf(areaOf(e.from));
  return (
    e.typeOnly &&
    fromLayer >= 0 &&
    TYPE_ONLY_EXCEPTIONS.some((x) => LAYERS[fromLayer].name === x.fromLayer && x.to === e.to)
  );
}

/** The violations of the layer order in an edge list. */
function violations(list: readonly Edge[]): string[] {
  const out: string[] = [];
  for (const e of list) {
    const fromArea = areaOf(e.from);
    const toArea = areaOf(e.to);
    const fromLayer = layerOf(fromArea);
    const toLayer = layerOf(toArea);
    if (fromLayer < 0) {
      out.push(`${e.from}: area '${fromArea}' has no layer (add it to LAYERS and the README)`);
      continue;
    }
    if (toLayer < 0) {
      out.push(`${e.from}:${e.line} imports ${e.to}: area '${toArea}' has no layer`);
      continue;
    }
    if (toLayer >= fromLayer) continue;
    if (isExempt(e)) continue;
    out.push(
      `${e.from}:${e.line} (${LAYERS[fromLayer].name}) imports ${e.to} (${LAYERS[toLayer].name})` +
        `${e.typeOnly ? ' [type-only]' : ''}: against the flow ${LAYERS.map((l) => l.name).join(' → ')}`,
    );
  }
  return out;
}

/** A cycle in the area graph (the named type-only exception aside), as a list of areas, or null. */
function areaCycle(list: readonly Edge[]): string[] | null {
  const graph = new Map<string, Set<string>>();
  for (const e of list) {
    if (isExempt(e)) continue;
    const a = areaOf(e.from);
    const b = areaOf(e.to);
    if (a === b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const dfs = (n: string): string[] | null => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 'open') return [...stack.slice(stack.indexOf(m)), m];
      if (!state.has(m)) {
        const found = dfs(m);
        if (found) return found;
      }
    }
    stack.pop();
    state.set(n, 'done');
    return null;
  };
  for (const n of graph.keys()) {
    if (!state.has(n)) {
      const found = dfs(n);
      if (found) return found;
    }
  }
  return null;
}

describe('layering', () => {
  it('parses the imports of every module under src/', () => {
    expect(modules.length).toBeGreaterThan(50);
    // The walk sees the known flow edges (a parser that found nothing would pass every check below).
    expect(edges).toContainEqual(expect.objectContaining({ from: 'cli.ts', to: 'config.ts' }));
    expect(edges).toContainEqual(expect.objectContaining({ from: 'config.ts', to: 'policy/file-policy.ts' }));
    expect(edges.some((e) => e.from.startsWith('tools/') && e.to.startsWith('policy/'))).toBe(true);
    expect(edges.some((e) => e.from.startsWith('patch/') && e.to.startsWith('fs/'))).toBe(true);
    expect(edges.some((e) => e.from.startsWith('tools/') && e.to.startsWith('mutation/'))).toBe(true);
    expect(edges.some((e) => e.from.startsWith('mutation/') && e.to.startsWith('policy/'))).toBe(true);
  });

  it('every area has a layer and every import follows cli → server → tools → mutation → config → policy → primitives → errors', () => {
    expect(violations(edges)).toEqual([]);
  });

  it('the graph between areas has no cycle (config ↔ policy included)', () => {
    expect(areaCycle(edges)).toBeNull();
  });

  it('the checks catch what they are for (self-test on made-up edges)', () => {
    expect(violations([{ from: 'policy/roots.ts', to: 'config.ts', typeOnly: true, line: 1 }])).toHaveLength(1);
    expect(violations([{ from: 'fs/walk.ts', to: 'policy/resolve-path.ts', typeOnly: false, line: 1 }])).toHaveLength(
      1,
    );
    expect(violations([{ from: 'fs/walk.ts', to: 'policy/resolve-path.ts', typeOnly: true, line: 1 }])).toEqual([]);
    expect(violations([{ from: 'fs/walk.ts', to: 'policy/containment.ts', typeOnly: true, line: 1 }])).toHaveLength(1);
    expect(violations([{ from: 'errors/x.ts', to: 'fs/hash.ts', typeOnly: false, line: 1 }])).toHaveLength(1);
    expect(violations([{ from: 'mutation/x.ts', to: 'tools/define-tool.ts', typeOnly: true, line: 1 }])).toHaveLength(
      1,
    );
    expect(violations([{ from: 'newarea/x.ts', to: 'errors/codes.ts', typeOnly: false, line: 1 }])).toHaveLength(1);
    expect(
      areaCycle([
        { from: 'config.ts', to: 'policy/file-policy.ts', typeOnly: false, line: 1 },
        { from: 'policy/roots.ts', to: 'config.ts', typeOnly: true, line: 1 },
      ]),
    ).toEqual(['config', 'policy', 'config']);
  });
});

/**
 * `npm run typecheck` and `npm run lint` in one process over one TypeScript program (issue #29):
 * `node test/helpers/typed-checks.mjs` prints tsc's diagnostics (`tsc -p tsconfig.test.json --noEmit`: the same
 * program, options and diagnostics), then eslint's report (`eslint src test`: the same config, files, rules and
 * stylish output); exits 1 when either found an error, 0 otherwise.
 *
 * Why: run apart, tsc and typescript-eslint each build the program of tsconfig.test.json (read and parse ~460 files and
 * @types/node, bind them) and each type-check it: tsc all of it, eslint's type-aware rules the types they ask for.
 * Here eslint gets tsc's program (typescript-eslint's `parserOptions.programs`), whose checker has already computed
 * every type, so the rules' queries are cache hits. The checker's answers do not depend on the options typescript-eslint
 * adds to the programs it builds itself (noEmit, noUnusedLocals, noUnusedParameters: diagnostics only), so the rules
 * see the same types. tsc's incremental state (tsconfig.json tsBuildInfoFile, under node_modules/.cache) is read and
 * written as `tsc` does, so an unchanged tree re-checks quickly; eslint has no cache here (a fresh clone has none).
 */
import { ESLint } from 'eslint';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../..', import.meta.url));
process.chdir(root);

/** tsc's diagnostics of tsconfig.test.json, printed as tsc prints them; returns the TypeScript program and the count. */
function typecheck() {
  const reportHost = {
    getCanonicalFileName: (f) => f,
    getCurrentDirectory: () => root,
    getNewLine: () => ts.sys.newLine,
  };
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  const configErrors = [];
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(root, 'tsconfig.test.json'),
    { noEmit: true },
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => configErrors.push(d) },
  );
  if (!parsed) {
    process.stdout.write(format(configErrors, reportHost));
    return { program: null, errors: configErrors.length || 1 };
  }
  const builder = ts.createIncrementalProgram({
    rootNames: parsed.fileNames,
    options: parsed.options,
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(parsed),
    projectReferences: parsed.projectReferences,
  });
  // What tsc reports (emitFilesAndReportErrors): the configuration's and the options' diagnostics, then each file's
  // syntax errors, and only when there are none, the global and semantic ones.
  const diagnostics = [
    ...builder.getConfigFileParsingDiagnostics(),
    ...builder.getOptionsDiagnostics(),
    ...builder.getGlobalDiagnostics(),
  ];
  const syntactic = builder.getSyntacticDiagnostics();
  diagnostics.push(...syntactic);
  if (syntactic.length === 0) diagnostics.push(...builder.getSemanticDiagnostics());
  // noEmit: writes only the incremental state (tsBuildInfoFile).
  builder.emit();
  const sorted = ts.sortAndDeduplicateDiagnostics(diagnostics);
  if (sorted.length > 0) process.stdout.write(format(sorted, reportHost));
  const errors = sorted.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
  if (errors > 0) process.stdout.write(`\nFound ${errors} error${errors === 1 ? '' : 's'}.\n`);
  return { program: builder.getProgram(), errors };
}

/** eslint src test with the program above for the TypeScript files; returns the number of errors (parse errors included). */
async function lint(program) {
  const eslint = new ESLint({
    cwd: root,
    // Only the TypeScript files: the plain JavaScript ones are linted without type information (eslint.config.js).
    overrideConfig: program
      ? [{ files: ['**/*.ts'], languageOptions: { parserOptions: { programs: [program] } } }]
      : [],
  });
  const results = await eslint.lintFiles(['src', 'test']);
  const formatter = await eslint.loadFormatter('stylish');
  const output = await formatter.format(results);
  if (output) process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
  return results.reduce((n, r) => n + r.errorCount, 0);
}

const checked = typecheck();
process.stdout.write(`> typecheck: ${checked.errors === 0 ? 'passed' : 'FAILED'}\n`);
const lintErrors = await lint(checked.program);
process.stdout.write(`> lint: ${lintErrors === 0 ? 'passed' : 'FAILED'}\n`);
process.exitCode = checked.errors === 0 && lintErrors === 0 ? 0 : 1;

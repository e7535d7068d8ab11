/**
 * The benchmark corpus (issue #8): a synthetic source tree of about 30,000 files and 300 MB with a `.gitignore`d
 * `node_modules`, a 10,000-entry directory, and single files of 4 KB, 1 MB (one copy per server, so each server's
 * edits never disturb the other's optimistic-concurrency state) and 200 MB.
 *
 * Layout under `root` (all text, LF line endings, deterministic: the same seed gives the same bytes):
 *
 *   tree/.gitignore                         `node_modules/` and `*.log`
 *   tree/src/pNN/dM/fK.{ts,js,md,json}      32 packages × 8 directories × 50 files (depth exactly 3 below src/)
 *   tree/node_modules/libNN/...             70 packages × 100 files (ignored by fs-tools and rg, walked by the peer)
 *   tree/wide/entry-NNNNN.txt               10,000 small files in one directory
 *   files/small-4k.txt                      4,096 bytes
 *   files/edit-fs-tools.txt, edit-peer.txt  1 MiB each, identical; line 6000 is the edited line
 *   files/big-200m.txt                      200 MiB (about 2.7 million lines)
 *
 * Planted needles (what the content-search cases look for), each in a known set of files:
 *   LITERAL  `needle_7f3a9c`  — one line in every 211th generated file (also inside node_modules, where it is ignored)
 *   REGEX    `\bTODO\((alice|bob)\):` — `// TODO(alice): …` / `// TODO(bob): …` in every 97th file; the other
 *            files carry `TODO(carol)` and plain `TODO:` lines that must not match.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Bumped whenever the layout or content changes, so a reused corpus (FS_TOOLS_BENCH_CORPUS) is regenerated. */
export const CORPUS_VERSION = 3;

/** The literal the content search looks for. */
export const LITERAL = 'needle_7f3a9c';
/** The regular expression the content search looks for (JavaScript and ripgrep syntax agree on it). */
export const REGEX = '\\bTODO\\((alice|bob)\\):';
/** The line of the 1 MiB files that the edit case toggles, and its two states. */
export const EDIT_LINE = 6000;
export const EDIT_A = 'export const editTarget = "state-a"; // bench edit line';
export const EDIT_B = 'export const editTarget = "state-b"; // bench edit line';

const SRC_PACKAGES = 32;
const SRC_DIRS = 8;
const SRC_FILES = 50;
const NM_PACKAGES = 70;
const NM_FILES = 100;
const WIDE_FILES = 10_000;
const BIG_BYTES = 200 * 1024 * 1024;

/** A small deterministic PRNG (mulberry32). Returns floats in [0, 1). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = ['user', 'order', 'cache', 'session', 'token', 'route', 'handler', 'config', 'buffer', 'stream', 'index',
  'query', 'result', 'payload', 'schema', 'record', 'event', 'worker', 'queue', 'metric', 'client', 'server', 'node',
  'entry', 'value', 'state', 'store', 'model', 'view', 'item'];

/** Builds one source-like line of code (TypeScript flavoured), about 40–90 bytes. */
function codeLine(r) {
  const w = () => WORDS[Math.floor(r() * WORDS.length)];
  const cap = (s) => s[0].toUpperCase() + s.slice(1);
  const n = Math.floor(r() * 1000);
  switch (Math.floor(r() * 12)) {
    case 0: return `import { ${w()}${cap(w())} } from './${w()}/${w()}.js';`;
    case 1: return `export function ${w()}${cap(w())}(${w()}: ${cap(w())}, ${w()}Id: number): ${cap(w())} {`;
    case 2: return `  const ${w()}${cap(w())} = await this.${w()}.get${cap(w())}(${w()}Id, ${n});`;
    case 3: return `  if (!${w()} || ${w()}.length > ${n}) return null;`;
    case 4: return `  // ${cap(w())} the ${w()} before the ${w()} is flushed (see ${w()}.ts:${n}).`;
    case 5: return `  for (const ${w()} of ${w()}s) ${w()}Map.set(${w()}.id, ${w()});`;
    case 6: return '}';
    case 7: return `  return { ${w()}, ${w()}: ${n}, ${w()}: '${w()}-${n}' };`;
    case 8: return `  // TODO${r() < 0.5 ? '(carol)' : ''}: revisit ${w()} ${w()} handling`;
    case 9: return `export interface ${cap(w())}${cap(w())} { ${w()}: string; ${w()}: number }`;
    case 10: return `  throw new Error(\`${cap(w())} ${w()} failed: \${${w()}}\`);`;
    default: return '';
  }
}

/** A file body of about `bytes` bytes; `planted` lines are inserted at pseudo-random positions. */
function body(r, bytes, planted) {
  const lines = [];
  let size = 0;
  while (size < bytes) {
    const line = codeLine(r);
    lines.push(line);
    size += line.length + 1;
  }
  for (const p of planted) lines.splice(Math.floor(r() * lines.length), 0, p);
  return `${lines.join('\n')}\n`;
}

/** What the generator planted (for sanity checks of the results). */
export function expectedCounts() {
  return { srcFiles: SRC_PACKAGES * SRC_DIRS * SRC_FILES, nmFiles: NM_PACKAGES * NM_FILES, wideFiles: WIDE_FILES };
}

/**
 * Creates (or reuses) the corpus under `root`.
 * @param {string} root directory to fill (created when missing)
 * @param {(msg: string) => void} log progress lines
 * @returns {{ root: string, tree: string, files: string, totalFiles: number, totalBytes: number, reused: boolean }}
 */
export function generateCorpus(root, log = () => undefined) {
  const stamp = path.join(root, '.corpus-version');
  const tree = path.join(root, 'tree');
  const files = path.join(root, 'files');
  if (existsSync(stamp)) {
    const saved = JSON.parse(readFileSync(stamp, 'utf8'));
    if (saved.version === CORPUS_VERSION) return { root, tree, files, totalFiles: saved.totalFiles, totalBytes: saved.totalBytes, reused: true };
  }
  rmSync(tree, { recursive: true, force: true });
  rmSync(files, { recursive: true, force: true });
  mkdirSync(tree, { recursive: true });
  mkdirSync(files, { recursive: true });
  const r = rng(0x5eed);
  let totalFiles = 0;
  let totalBytes = 0;
  let fileIndex = 0;
  const write = (p, text) => {
    writeFileSync(p, text);
    totalFiles++;
    totalBytes += Buffer.byteLength(text);
  };
  const plantsFor = () => {
    const i = fileIndex++;
    const plants = [];
    if (i % 211 === 0) plants.push(`  const marker = '${LITERAL}'; // bench literal`);
    if (i % 97 === 0) plants.push(`  // TODO(${i % 2 ? 'alice' : 'bob'}): fix the ${WORDS[i % WORDS.length]} race`);
    return plants;
  };
  write(path.join(tree, '.gitignore'), 'node_modules/\n*.log\n');
  write(path.join(tree, 'package.json'), '{ "name": "bench-tree", "version": "1.0.0", "private": true }\n');
  const exts = ['ts', 'ts', 'ts', 'js', 'md', 'json'];
  log('corpus: src/');
  for (let p = 0; p < SRC_PACKAGES; p++) {
    for (let d = 0; d < SRC_DIRS; d++) {
      const dir = path.join(tree, 'src', `p${String(p).padStart(2, '0')}`, `d${d}`);
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < SRC_FILES; f++) {
        // 2–22 KB, mean about 12 KB
        write(path.join(dir, `f${String(f).padStart(2, '0')}.${exts[f % exts.length]}`), body(r, 2048 + Math.floor(r() * 20480), plantsFor()));
      }
    }
  }
  log('corpus: node_modules/');
  for (let p = 0; p < NM_PACKAGES; p++) {
    const pkg = path.join(tree, 'node_modules', `lib${String(p).padStart(2, '0')}`);
    mkdirSync(path.join(pkg, 'lib'), { recursive: true });
    mkdirSync(path.join(pkg, 'types'), { recursive: true });
    write(path.join(pkg, 'package.json'), `{ "name": "lib${p}", "version": "1.${p}.0" }\n`);
    for (let f = 1; f < NM_FILES; f++) {
      const sub = f % 3 === 0 ? 'types' : 'lib';
      const ext = f % 3 === 0 ? 'd.ts' : 'js';
      write(path.join(pkg, sub, `m${String(f).padStart(2, '0')}.${ext}`), body(r, 4096 + Math.floor(r() * 32768), plantsFor()));
    }
  }
  log('corpus: wide/');
  const wide = path.join(tree, 'wide');
  mkdirSync(wide);
  for (let f = 0; f < WIDE_FILES; f++) write(path.join(wide, `entry-${String(f).padStart(5, '0')}.txt`), body(r, 600 + Math.floor(r() * 800), plantsFor()));

  log('corpus: single files');
  // ASCII only, so 4,095 characters + a final newline are exactly 4,096 bytes.
  writeFileSync(path.join(files, 'small-4k.txt'), `${body(r, 5000, []).slice(0, 4095)}\n`);
  const lines = [];
  let size = 0;
  while (size < 1024 * 1024) {
    const line = lines.length + 1 === EDIT_LINE ? EDIT_A : codeLine(r);
    lines.push(line);
    size += line.length + 1;
  }
  const editText = `${lines.join('\n')}\n`;
  writeFileSync(path.join(files, 'edit-fs-tools.txt'), editText);
  writeFileSync(path.join(files, 'edit-peer.txt'), editText);
  // 200 MiB: 1 MiB blocks of numbered lines (numbers keep every line distinct, so a range is checkable).
  const fd = openSync(path.join(files, 'big-200m.txt'), 'w');
  let written = 0;
  let lineNo = 1;
  while (written < BIG_BYTES) {
    const parts = [];
    let blockSize = 0;
    while (blockSize < 1024 * 1024) {
      const line = `${String(lineNo).padStart(8, '0')} ${codeLine(r) || '// blank'}`;
      parts.push(line);
      blockSize += line.length + 1;
      lineNo++;
    }
    const block = Buffer.from(`${parts.join('\n')}\n`);
    writeSync(fd, block);
    written += block.length;
  }
  closeSync(fd);
  writeFileSync(stamp, JSON.stringify({ version: CORPUS_VERSION, totalFiles, totalBytes, bigLines: lineNo - 1 }));
  return { root, tree, files, totalFiles, totalBytes, reused: false };
}

/** Line count of the 200 MiB file (from the stamp written by generateCorpus). */
export function bigFileLines(root) {
  return JSON.parse(readFileSync(path.join(root, '.corpus-version'), 'utf8')).bigLines;
}

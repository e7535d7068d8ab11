/**
 * Every open in src/ is non-blocking (docs/security.md "Bounded work"): a FIFO renamed over a path between its check
 * and its open must never hang a call — an open(2) of a FIFO without O_NONBLOCK waits for a writer, holding the
 * call's locks and a thread of the file I/O pool (four such calls once filled the pool and hung every other call).
 * This enumerates the call sites statically: each `open(` / `openSync(` of node:fs passes O_NONBLOCK in its flags (or
 * a flag constant that includes it), `VerifiedDir.openFile`/`openFileSync` add it themselves, and the path-based
 * helpers (readFileSync, writeFileSync, …) either get it in their `flag` or appear only at the listed sites, none of
 * which opens a path a tool call names.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(path.join(dir, d.name)) : d.name.endsWith('.ts') ? [path.join(dir, d.name)] : [],
  );
}

/** The source without comments (line and block), so a call named in prose is not counted. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The argument text of the call whose `(` is at `open`. */
function argumentsAt(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error('unbalanced call');
}

/** Flag constants that carry O_NONBLOCK (their definitions are checked below). */
const NONBLOCKING_CONSTANTS = ['DIR_FLAGS', 'STATE_WRITE_FLAGS', 'META_LOCK_FLAGS'];

/** Path-based helpers (no flags argument) and the only places they may appear, each with why it is no user path. */
const PATH_HELPER_SITES: Record<string, string> = {
  'src/version.ts': "the package's own package.json",
  'src/policy/file-policy.ts': 'the --policy file named on the command line, read at start-up',
  'src/fs/process-identity.ts': '/proc/<pid>/stat and the boot id',
  'src/vcs/github-token.ts': "gh's hosts.yml in the server's own fresh private directory, created exclusively (wx)",
  'src/vcs/git-materialize.ts': "files of the git view, in the server's own private directory",
};

const files = sources(SRC).map((f) => ({
  rel: path.relative(path.dirname(SRC), f),
  text: code(readFileSync(f, 'utf8')),
}));

describe('every open of a path is non-blocking', () => {
  it('each open( / openSync( of node:fs passes O_NONBLOCK (or a constant that carries it)', () => {
    const sites: string[] = [];
    const missing: string[] = [];
    for (const { rel, text } of files) {
      for (const m of text.matchAll(/(?<![.\w]|static |async )(open|openSync)\(/g)) {
        const args = argumentsAt(text, m.index + m[0].length - 1);
        const line = text.slice(0, m.index).split('\n').length;
        sites.push(`${rel}:${line}`);
        if (!args.includes('O_NONBLOCK') && !NONBLOCKING_CONSTANTS.some((c) => args.includes(c)))
          missing.push(`${rel}:${line}: ${m[1]}(${args.replace(/\s+/g, ' ').slice(0, 120)})`);
      }
    }
    expect(sites.length).toBeGreaterThan(10); // the scan found the opens (it would pass vacuously otherwise)
    expect(missing).toEqual([]);
  });

  it('the flag constants used instead carry O_NONBLOCK, and VerifiedDir.openFile / openFileSync always add it', () => {
    const all = files.map((f) => f.text).join('\n');
    for (const name of NONBLOCKING_CONSTANTS) {
      const def = new RegExp(`const ${name}\\s*=([^;]+);`).exec(all);
      expect(def?.[1], name).toContain('O_NONBLOCK');
    }
    const verified = files.find((f) => f.rel === path.join('src', 'fs', 'verified-dir.ts'))!.text;
    const openFile = /async openFile\([^)]*\)[^{]*\{([\s\S]*?)\n {2}\}/.exec(verified)![1];
    const openFileSync = /openFileSync\([^)]*\)[^{]*\{([\s\S]*?)\n {2}\}/.exec(verified)![1];
    expect(openFile).toMatch(/options\.flags \| O_NOFOLLOW \| O_NONBLOCK/);
    expect(openFileSync).toMatch(/options\.flags \| O_NOFOLLOW \| O_NONBLOCK/);
  });

  it('path-based helpers that take no flags appear only at the listed sites', () => {
    const found = new Set<string>();
    for (const { rel, text } of files) {
      for (const m of text.matchAll(
        /(?<![.\w])(readFileSync|writeFileSync|appendFileSync|readFile|writeFile|appendFile|createReadStream|createWriteStream)\(/g,
      )) {
        // One given its open flags with O_NONBLOCK (readFile's `flag`) is held to the rule above instead.
        if (argumentsAt(text, m.index + m[0].length - 1).includes('O_NONBLOCK')) continue;
        found.add(rel);
        expect(Object.keys(PATH_HELPER_SITES), `${rel}: ${m[1]}`).toContain(rel.split(path.sep).join('/'));
      }
    }
    expect([...found].map((f) => f.split(path.sep).join('/')).sort()).toEqual(Object.keys(PATH_HELPER_SITES).sort());
  });
});

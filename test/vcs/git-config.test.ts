/**
 * The config reader of the sanitized git view (src/vcs/git-config.ts; issue 12), checked differentially against the
 * real `git config --file F --no-includes --null --list` on the same text: every accepted file gives exactly git's
 * keys and values (order included), and a file git refuses is refused (null), so the view fails closed where git
 * would fail. Cases: sections and subsections (escapes, case), the deprecated [a.b] form, bare booleans, quoting,
 * escapes, continuation lines, comments (# and ; inside and outside quotes), inner whitespace, CRLF, a BOM, a
 * variable after `]` on the same line, include sections (returned as keys, never followed), and malformed lines.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseGitConfig, parseGitConfigSliced } from '../../src/vcs/git-config.js';
import { Slicer } from '../../src/vcs/slicer.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'fs-tools-gitconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** git's own reading of `text` as [key, value] pairs, or null when git refuses the file. */
function gitReads(text: string): Array<[string, string]> | null {
  const file = path.join(dir, 'config');
  writeFileSync(file, text);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GIT_')) env[k] = v;
  const r = spawnSync('git', ['config', '--file', file, '--no-includes', '--null', '--list'], {
    cwd: dir,
    encoding: 'utf8',
    env: {
      ...env,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      HOME: dir,
      GIT_DIR: path.join(dir, 'none'),
    },
  });
  if (r.status !== 0) return null;
  return r.stdout
    .split('\0')
    .filter(Boolean)
    .map((rec) => {
      const nl = rec.indexOf('\n');
      return nl < 0 ? [rec, 'true'] : [rec.slice(0, nl), rec.slice(nl + 1)];
    });
}

/** The reader's result flattened in file order (per key, values in order; keys in first-seen order). */
function weRead(text: string): Array<[string, string]> | null {
  const m = parseGitConfig(text);
  if (!m) return null;
  return [...m].flatMap(([k, vs]) => vs.map((v) => [k, v] as [string, string]));
}

/** Groups pairs by key in first-seen order (git lists values in file order; so does the map per key). */
const grouped = (pairs: Array<[string, string]> | null) => {
  if (!pairs) return null;
  const m = new Map<string, string[]>();
  for (const [k, v] of pairs) m.set(k, [...(m.get(k) ?? []), v]);
  return [...m];
};

const ACCEPTED: Record<string, string> = {
  simple: '[core]\n\tfilemode = false\n\tbare = false\n',
  'subsections, case kept in the subsection only':
    '[Branch "Main"]\n\tRemote = origin\n\tMERGE = refs/heads/Main\n[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
  'escaped subsection': '[branch "we\\"ird\\\\name"]\n\tremote = .\n',
  'deprecated dotted section': '[Branch.Main]\n\tremote = x\n',
  'bare boolean and empty value': '[core]\n\tbare\n\tempty =\n\tspaced =   \n',
  'quotes and escapes': '[a]\n\tv = "  lead" trail\\t\\\\ \\"q\\" \\n next\n\tw = x"  "y\n',
  continuation: '[a]\n\tv = one \\\n  two\n',
  comments: '# top\n; top\n[a] # after header\n\tv = x # trailing\n\tw = "x # kept ; kept"\n\tz = y;no\n',
  'inner whitespace runs become spaces': '[a]\n\tv = a \t  b\t\tc   \n',
  'CRLF line ends': '[core]\r\n\tfilemode = false\r\n\tv = a b\r\n',
  BOM: '\ufeff[core]\n\tfilemode = true\n',
  'variable after ] on the same line': '[core] bare = true\n[a]v=1\n',
  'multi-valued keys': '[remote "o"]\n\tfetch = a\n\tfetch = b\n[remote "o"]\n\tfetch = c\n',
  'include sections are plain keys': '[include]\n\tpath = /etc/passwd\n[includeIf "gitdir:/x/"]\n\tpath = ../y\n',
  'dashes and digits in names': '[my-sec2]\n\tkey-2 = v\n',
  'empty file': '',
  'only comments and blank lines': '\n\n# c\n   \n',
  'a variable before any section': 'v = 1\n[a]\n\tw = 2\n',
};

const REFUSED: Record<string, string> = {
  'unterminated quote': '[a]\n\tv = "open\n',
  'unknown escape': '[a]\n\tv = \\q\n',
  'bad section name': '[a b]\n\tv = 1\n',
  'unterminated section': '[core\n\tv = 1\n',
  'bad key start': '[a]\n\t1v = 1\n',
  'junk after key': '[a]\n\tv x\n',
  'comment after a bare key': '[a]\n\tv # c\n',
  'newline in subsection': '[a "x\ny"]\n\tv = 1\n',
  'empty section': '[]\n',
  'NUL byte': '[a]\n\tv = x\0y\n',
};

describe('parseGitConfig agrees with git', () => {
  it.each(Object.entries(ACCEPTED))('accepted: %s', (_name, text) => {
    const git = gitReads(text);
    expect(git, 'git itself accepts this').not.toBeNull();
    expect(grouped(weRead(text))).toEqual(grouped(git));
  });
  it.each(Object.entries(REFUSED))('refused: %s', (_name, text) => {
    if (!text.includes('\0')) expect(gitReads(text), 'git itself refuses this').toBeNull();
    expect(parseGitConfig(text)).toBeNull();
  });
  it('a large config (1.3 MB of one section) is read whole, the last section included', () => {
    const text = `[filter "a"]\n${'\tclean = x\n'.repeat(130_000)}[filter "evil"]\n\tclean = run-me\n`;
    const m = parseGitConfig(text)!;
    expect(m.get('filter.a.clean')).toHaveLength(130_000);
    expect(m.get('filter.evil.clean')).toEqual(['run-me']);
  });
  it('git is the git this suite expects (config --list exists)', () => {
    expect(execFileSync('git', ['--version'], { encoding: 'utf8' })).toMatch(/^git version \d/);
  });
});

describe("parseGitConfigSliced (the view's reader: bytes in, slices of event-loop time)", () => {
  it('reads every accepted and refused case as parseGitConfig does', async () => {
    for (const text of [...Object.values(ACCEPTED), ...Object.values(REFUSED)]) {
      const sliced = await parseGitConfigSliced(Buffer.from(text, 'utf8'), new Slicer());
      expect(sliced).toEqual(parseGitConfig(text));
    }
  });
  it('a CRLF and a multi-byte character split across its 256 KiB pieces, and the kept sections only', async () => {
    const pad = (n: number) => `# ${'x'.repeat(n - 3)}\n`;
    // "\r" is the last byte of the first piece, "\n" the first of the next; "é" (2 bytes) straddles the second.
    const text = `${pad((1 << 18) - 14)}[core]\n\ta = 1\r\n${pad((1 << 18) - 9)}[x]\n\tb = é\r\n[core]\n\tc = 2\r\n`;
    const bytes = Buffer.from(text, 'utf8');
    expect(bytes[(1 << 18) - 1]).toBe(0x0d);
    const all = await parseGitConfigSliced(bytes, new Slicer(0));
    expect(all).toEqual(parseGitConfig(text));
    expect(all!.get('x.b')).toEqual(['é']);
    const kept = await parseGitConfigSliced(bytes, new Slicer(0), (section) => section === 'core');
    expect([...kept!.keys()]).toEqual(['core.a', 'core.c']);
  });
});

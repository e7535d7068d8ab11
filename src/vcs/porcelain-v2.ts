/**
 * Parser for `git status --porcelain=v2 --branch` (git-status(1), "Porcelain Format Version 2"), without -z: paths
 * with unusual characters are C-quoted, and a rename's two paths are separated by a tab. Pure.
 */

/** One entry of the status. `index`/`worktree` are the X and Y letters ('.' = unmodified). */
export interface StatusEntry {
  path: string;
  kind: 'changed' | 'renamed' | 'unmerged' | 'untracked' | 'ignored';
  index: string;
  worktree: string;
  /** Renames and copies: the path before. */
  orig_path?: string;
}

/** Branch header facts. */
export interface BranchInfo {
  oid: string | null;
  head: string | null;
  detached: boolean;
  upstream: string | null;
  ahead: number | null;
  behind: number | null;
}

/** Parses the whole output. */
export function parsePorcelainV2(raw: string): { branch: BranchInfo; entries: StatusEntry[] } {
  const { branch, entries } = parsePorcelainV2Kept(raw, () => true);
  return { branch, entries };
}

/**
 * Parses the whole output in one pass, keeping the entries `keep` accepts.
 * @returns the branch facts; the kept entries; `text`, the output less the lines of the entries left out (the whole
 *   output, byte for byte, when every entry is kept); `untracked`, the path of every untracked entry, kept or not
 */
export function parsePorcelainV2Kept(
  raw: string,
  keep: (entry: StatusEntry) => boolean,
): { branch: BranchInfo; entries: StatusEntry[]; text: string; untracked: string[] } {
  const branch: BranchInfo = { oid: null, head: null, detached: false, upstream: null, ahead: null, behind: null };
  const entries: StatusEntry[] = [];
  const untracked: string[] = [];
  const lines = raw.split('\n');
  let dropped = false;
  const kept: string[] = [];
  for (const line of lines) {
    if (line === '') {
      kept.push(line);
      continue;
    }
    if (line.startsWith('# ')) {
      kept.push(line);
      branchLine(line.slice(2), branch);
      continue;
    }
    const entry = entryLine(line);
    if (entry?.kind === 'untracked') untracked.push(entry.path);
    if (entry && !keep(entry)) {
      dropped = true;
      continue;
    }
    kept.push(line);
    if (entry) entries.push(entry);
  }
  return { branch, entries, text: dropped ? kept.join('\n') : raw, untracked };
}

/** Reads one `# branch.*` header (without its `# `) into `branch`. */
function branchLine(header: string, branch: BranchInfo): void {
  const [key, ...rest] = header.split(' ');
  const value = rest.join(' ');
  if (key === 'branch.oid') branch.oid = value === '(initial)' ? null : value;
  else if (key === 'branch.head') {
    branch.detached = value === '(detached)';
    branch.head = branch.detached ? null : value;
  } else if (key === 'branch.upstream') branch.upstream = value;
  else if (key === 'branch.ab') {
    const m = /^\+(\d+) -(\d+)$/.exec(value);
    if (m) {
      branch.ahead = Number(m[1]);
      branch.behind = Number(m[2]);
    }
  }
}

/** The entry of one entry line, or null for a line of a kind this parser does not know. */
function entryLine(line: string): StatusEntry | null {
  const type = line[0];
  if (type === '?' || type === '!') {
    return { path: unquote(line.slice(2)), kind: type === '?' ? 'untracked' : 'ignored', index: type, worktree: type };
  }
  if (type === '1') {
    const f = fields(line, 8);
    return { path: unquote(f.rest), kind: 'changed', index: f.parts[1][0], worktree: f.parts[1][1] };
  }
  if (type === '2') {
    const f = fields(line, 9);
    const [p, orig] = splitRename(f.rest);
    return {
      path: unquote(p),
      kind: 'renamed',
      index: f.parts[1][0],
      worktree: f.parts[1][1],
      orig_path: unquote(orig),
    };
  }
  if (type === 'u') {
    const f = fields(line, 10);
    return { path: unquote(f.rest), kind: 'unmerged', index: f.parts[1][0], worktree: f.parts[1][1] };
  }
  return null;
}

/** Splits off `n` space-separated fields; the rest of the line is the path part. */
function fields(line: string, n: number): { parts: string[]; rest: string } {
  const parts: string[] = [];
  let pos = 0;
  for (let i = 0; i < n; i++) {
    const next = line.indexOf(' ', pos);
    parts.push(line.slice(pos, next));
    pos = next + 1;
  }
  return { parts, rest: line.slice(pos) };
}

function splitRename(rest: string): [string, string] {
  // "<path>\t<origPath>", each possibly C-quoted (a quoted path contains no raw tab).
  const tab = rest.indexOf('\t');
  return tab === -1 ? [rest, ''] : [rest.slice(0, tab), rest.slice(tab + 1)];
}

/** Undoes git's C-style quoting ("a\tb", "\303\244" octal UTF-8 bytes). */
export function unquote(p: string): string {
  if (!p.startsWith('"') || !p.endsWith('"')) return p;
  const body = p.slice(1, -1);
  const bytes: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const n = body[++i];
    const simple: Record<string, number> = { n: 10, t: 9, r: 13, '"': 34, '\\': 92, a: 7, b: 8, f: 12, v: 11 };
    if (n in simple) bytes.push(simple[n]);
    else if (/[0-7]/.test(n)) {
      bytes.push(parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else bytes.push(...Buffer.from(n, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

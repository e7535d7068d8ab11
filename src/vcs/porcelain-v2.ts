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
  const branch: BranchInfo = { oid: null, head: null, detached: false, upstream: null, ahead: null, behind: null };
  const entries: StatusEntry[] = [];
  for (const line of raw.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# ')) {
      const [key, ...rest] = line.slice(2).split(' ');
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
      continue;
    }
    const type = line[0];
    if (type === '?' || type === '!') {
      entries.push({
        path: unquote(line.slice(2)),
        kind: type === '?' ? 'untracked' : 'ignored',
        index: type,
        worktree: type,
      });
    } else if (type === '1') {
      const f = fields(line, 8);
      entries.push({ path: unquote(f.rest), kind: 'changed', index: f.parts[1][0], worktree: f.parts[1][1] });
    } else if (type === '2') {
      const f = fields(line, 9);
      const [p, orig] = splitRename(f.rest);
      entries.push({
        path: unquote(p),
        kind: 'renamed',
        index: f.parts[1][0],
        worktree: f.parts[1][1],
        orig_path: unquote(orig),
      });
    } else if (type === 'u') {
      const f = fields(line, 10);
      entries.push({ path: unquote(f.rest), kind: 'unmerged', index: f.parts[1][0], worktree: f.parts[1][1] });
    }
  }
  return { branch, entries };
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

/**
 * The repository's config as hostile input (docs/security.md "What git may read"): parsed by the server's own parser
 * (git-config.ts) from a verified, capped read, includes never followed; only an allow-list of data-only keys is
 * carried into the private config, with the format version, the object format, and HEAD's upstream.
 */

import { realpathSync } from 'node:fs';
import path from 'node:path';
import { parseGitConfigSliced, type ConfigList } from './git-config.js';
import { isSafeRefName, mapThroughRefspecs } from './git-refs.js';
import { outsideError, repoError, VIEW_CAPS, type Verifier } from './git-verifier.js';
import type { Slicer } from './slicer.js';

/**
 * The config sections anything is read from: by the view (core, extensions, copied keys, branch and remote) and by
 * the server's own lookups through `repositoryConfig` (remote, url: the issue tools' remotes and `insteadOf`).
 */
export const VIEW_SECTIONS = new Set(['core', 'extensions', 'status', 'diff', 'branch', 'remote', 'url']);

/** Keys copied from the repository's config when their value is one of the allowed ones (data only, no paths). */
const COPIED_KEYS: Record<string, RegExp> = {
  'core.filemode': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.symlinks': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.ignorecase': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.precomposeunicode': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.trustctime': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.quotepath': /^(?:true|false|yes|no|on|off|1|0)$/i,
  'core.checkstat': /^(?:default|minimal)$/i,
  'core.autocrlf': /^(?:true|false|yes|no|on|off|1|0|input)$/i,
  'core.eol': /^(?:lf|crlf|native)$/i,
  'core.safecrlf': /^(?:true|false|yes|no|on|off|1|0|warn)$/i,
  'status.renames': /^(?:true|false|yes|no|on|off|1|0|copies|copy)$/i,
  'diff.renames': /^(?:true|false|yes|no|on|off|1|0|copies|copy)$/i,
};

/** A config value written quoted, escaped as git reads it back. */
export function quoteValue(v: string): string {
  return `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\t/g, '\\t')}"`;
}

/** A `[section "sub"]` header, or null when the subsection cannot be written (newline, NUL). */
export function sectionHeader(section: string, sub: string): string | null {
  if (/[\n\0]/.test(sub)) return null;
  return `[${section} "${sub.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"]`;
}

/** A config value the private config can carry (no newline, NUL or other control character but tab). */
export function isPlainValue(v: string): boolean {
  // eslint-disable-next-line no-control-regex
  return !/[\x00-\x08\x0a-\x1f\x7f]/.test(v);
}

export const last = <T>(a: readonly T[] | undefined): T | undefined =>
  a && a.length > 0 ? a[a.length - 1] : undefined;

/** git's boolean reading of a config value (git-config(1) "Values"): true, yes, on, a non-zero number, or no `=`. */
export function isGitTrue(value: string | undefined): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  return v === 'true' || v === 'yes' || v === 'on' || (/^-?\d+$/.test(v) && Number(v) !== 0);
}

/** Extensions a repository may declare and the view still reads correctly. */
const KNOWN_EXTENSIONS = new Set(['objectformat', 'worktreeconfig', 'noop', 'preciousobjects', 'partialclone']);

/**
 * The private config lines derived from the repository's config: format version, object format, copied data-only
 * keys. `core.worktree` must name the discovered top (else unsupported, or NOT_ALLOWED when it leads outside);
 * `worktreeFile` is the file that set it (the common config, or the git dir's config.worktree).
 */
export function viewSettings(
  config: ConfigList,
  configFile: string,
  gitDir: string,
  top: string,
  verify: Verifier,
  worktreeFile: string,
): { lines: string[]; objectFormat: 'sha1' | 'sha256' } {
  const version = last(config.get('core.repositoryformatversion')) ?? '0';
  if (version !== '0' && version !== '1')
    throw repoError(
      'unsupported_repository',
      configFile,
      `${configFile} declares repository format version ${Number(version) || 'unknown'}, which the git tools do not read.`,
    );
  let objectFormat: 'sha1' | 'sha256' | null = null;
  for (const [key, values] of config) {
    if (!key.startsWith('extensions.') || version !== '1') continue;
    const name = key.slice('extensions.'.length);
    if (!KNOWN_EXTENSIONS.has(name))
      throw repoError(
        'unsupported_repository',
        configFile,
        `${configFile} declares a repository extension the git tools do not support.`,
      );
    if (name === 'objectformat') {
      const v = last(values)!.toLowerCase();
      if (v !== 'sha1' && v !== 'sha256')
        throw repoError(
          'unsupported_repository',
          configFile,
          `${configFile} declares an object format the git tools do not support.`,
        );
      objectFormat = v;
    }
  }
  const worktree = last(config.get('core.worktree'));
  if (worktree !== undefined) {
    const lexical = path.resolve(gitDir, worktree);
    let real: string;
    try {
      real = realpathSync(lexical);
    } catch {
      real = lexical;
    }
    if (!verify.isInside(real)) throw outsideError(worktreeFile, 'core.worktree');
    if (real !== top)
      throw repoError(
        'unsupported_repository',
        worktreeFile,
        `${worktreeFile} sets core.worktree to another directory than ${top}; the git tools do not follow it.`,
      );
  }
  const lines = ['[core]', `\trepositoryformatversion = ${version}`];
  for (const [key, allowed] of Object.entries(COPIED_KEYS)) {
    const v = last(config.get(key));
    if (v !== undefined && allowed.test(v) && key.startsWith('core.')) lines.push(`\t${key.slice(5)} = ${v}`);
  }
  for (const [key, allowed] of Object.entries(COPIED_KEYS)) {
    const v = last(config.get(key));
    if (v !== undefined && allowed.test(v) && !key.startsWith('core.'))
      lines.push(`[${key.split('.')[0]}]`, `\t${key.split('.')[1]} = ${v}`);
  }
  if (objectFormat) lines.push('[extensions]', `\tobjectformat = ${objectFormat}`);
  return { lines, objectFormat: objectFormat ?? 'sha1' };
}

/**
 * The repository's config as the view reads it: the common dir's `config` (`bytes`, already read through the verifier;
 * null when absent) parsed whole, keeping the sections of VIEW_SECTIONS, and, with `extensions.worktreeConfig`, the git
 * dir's `config.worktree` after it (its values win), as git reads them.
 * @returns the parsed keys (lower-case `section.key` or `section.sub.key` → values in file order) and the file that
 *   set `core.worktree` when config.worktree did (null: the common config, or nowhere)
 * @throws ToolError corrupt_repository (a config git would refuse), and the verifier's errors for config.worktree
 */
export async function readRepositoryConfig(
  bytes: Buffer | null,
  configFile: string,
  gitDir: string,
  verify: Verifier,
  slicer: Slicer,
): Promise<{ config: ConfigList; worktreeFile: string | null }> {
  let repoConfig: ConfigList = new Map();
  if (bytes) {
    // Every line is parsed (a config git would refuse fails closed); only the sections the view reads are kept.
    const parsed = await parseGitConfigSliced(bytes, slicer, (section) => VIEW_SECTIONS.has(section));
    if (!parsed)
      throw repoError(
        'corrupt_repository',
        configFile,
        `${configFile} is not a valid git config file (git would refuse it too); it was not used.`,
      );
    repoConfig = parsed;
  }
  // With extensions.worktreeConfig, git also reads the git dir's config.worktree, after the common config (its
  // values win); the format version and extensions come from the common config alone. The view reads it the same
  // way, so core.worktree set there is held to the same rule and copied keys there reach the view as they reach git.
  let worktreeFile: string | null = null;
  if (
    last(repoConfig.get('core.repositoryformatversion')) === '1' &&
    isGitTrue(last(repoConfig.get('extensions.worktreeconfig')))
  ) {
    const file = path.join(gitDir, 'config.worktree');
    const worktreeBytes = (await verify.readLarge(file, 'worktree config', VIEW_CAPS.config))?.bytes ?? null;
    if (worktreeBytes) {
      const parsed = await parseGitConfigSliced(worktreeBytes, slicer, (section) => VIEW_SECTIONS.has(section));
      if (!parsed)
        throw repoError(
          'corrupt_repository',
          file,
          `${file} is not a valid git config file (git would refuse it too); it was not used.`,
        );
      for (const [key, values] of parsed) {
        if (key.startsWith('extensions.') || key === 'core.repositoryformatversion') continue;
        if (key === 'core.worktree') worktreeFile = file;
        repoConfig.set(key, [...(repoConfig.get(key) ?? []), ...values]);
      }
    }
  }
  return { config: repoConfig, worktreeFile };
}

/**
 * The private config lines for HEAD's branch `branchRef` (null when detached): its `branch.<name>.remote/merge` and
 * the remote's `fetch` refspecs, when they are plain values, and the upstream ref they map `merge` to (a safe ref
 * name, or null).
 */
export function upstreamSettings(
  branchRef: string | null,
  repoConfig: ConfigList,
): { lines: string[]; upstream: string | null } {
  const lines: string[] = [];
  let upstream: string | null = null;
  if (branchRef?.startsWith('refs/heads/')) {
    const branch = branchRef.slice('refs/heads/'.length);
    const remote = last(repoConfig.get(`branch.${branch}.remote`));
    const merge = last(repoConfig.get(`branch.${branch}.merge`));
    if (remote !== undefined && merge !== undefined && isSafeRefName(merge) && isPlainValue(remote)) {
      const bh = sectionHeader('branch', branch);
      if (bh) lines.push(bh, `\tremote = ${quoteValue(remote)}`, `\tmerge = ${quoteValue(merge)}`);
      if (remote === '.') upstream = merge;
      else {
        const fetch = (repoConfig.get(`remote.${remote}.fetch`) ?? []).filter(isPlainValue);
        const rh = sectionHeader('remote', remote);
        if (rh && fetch.length > 0) lines.push(rh, ...fetch.map((f) => `\tfetch = ${quoteValue(f)}`));
        upstream = mapThroughRefspecs(merge, fetch);
      }
    }
  }
  if (upstream !== null && !isSafeRefName(upstream)) upstream = null;
  return { lines, upstream };
}

/**
 * The forge hosts the operator configured (docs/cli.md `--git-remote-allow` default, docs/issue-tools.md): github.com, the hosts
 * in gh's own configuration (`hosts.yml`) and `GH_HOST`; gitlab.com, `GITLAB_HOST` and the CI server
 * (`CI_SERVER_URL`, else `CI_SERVER_HOST`). These hosts are the default allow-list, the hosts whose remotes count as
 * GitHub or GitLab remotes (exact names, never a substring test), and the hosts an enterprise token may be given to.
 *
 * gh's configuration directory is gh's own rule: `GH_CONFIG_DIR`, else `$XDG_CONFIG_HOME/gh`, else `%AppData%/GitHub
 * CLI` on Windows, else `~/.config/gh`. Only the top-level keys of `hosts.yml` are read (each a host name); the file
 * holds tokens, so nothing else of it is kept (the host names may appear in GH_HOST_DENIED's `allowed` list). A file that is missing, unreadable,
 * larger than 256 KiB or not a regular file contributes no host (fail closed: fewer hosts allowed).
 *
 * A `hosts.yml` inside the sandbox roots (its path, its real path or its directory's real path) contributes no host
 * either: the agent can write there (or move a directory it wrote into place), and a host it adds would become a
 * "configured" host — allowed by default and given GH_ENTERPRISE_TOKEN. Only what lies outside the agent's reach
 * counts as the operator's configuration.
 */
import { closeSync, fstatSync, openSync, readSync, realpathSync, constants as fsConstants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { splitHostPort } from './remotes.js';

/** A host with an optional port (null: any port). Host lower-case, IPv6 without brackets. */
export interface HostPort {
  host: string;
  port: number | null;
}

/** The hosts the operator configured, per forge. */
export interface ConfiguredHosts {
  github: HostPort[];
  gitlab: HostPort[];
}

/** Most bytes of gh's hosts.yml that are read; a larger file contributes no host. */
export const GH_HOSTS_FILE_MAX_BYTES = 256 * 1024;

/** gh's configuration directory (gh's own rule, see the module comment). */
export function ghConfigDir(env: NodeJS.ProcessEnv = process.env, home: string = os.homedir()): string {
  if (env.GH_CONFIG_DIR) return env.GH_CONFIG_DIR;
  if (env.XDG_CONFIG_HOME) return path.join(env.XDG_CONFIG_HOME, 'gh');
  if (process.platform === 'win32' && env.AppData) return path.join(env.AppData, 'GitHub CLI');
  return path.join(home, '.config', 'gh');
}

/**
 * The host names that are top-level keys of a gh `hosts.yml` text: unindented `key:` lines with nothing after the
 * colon (a mapping follows), the key optionally quoted. Keys that are not host names are skipped. Pure.
 */
export function parseGhHostsYaml(text: string): HostPort[] {
  const hosts: HostPort[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^(?:"([^"\\]+)"|'([^']+)'|([^\s#"'][^:\s]*(?::\d{1,5})?)):\s*(?:#.*)?$/.exec(line);
    if (!m) continue;
    const key = m[1] ?? m[2] ?? m[3];
    const hp = splitHostPort(key);
    if (hp && /^[a-z0-9]/.test(hp.host) && !hosts.some((h) => h.host === hp.host && h.port === hp.port)) hosts.push(hp);
  }
  return hosts;
}

/** Reads at most `max` bytes of a regular file; null when missing, not regular, unreadable or larger than `max`. */
function readSmallFile(file: string, max: number): string | null {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0));
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > max) return null;
    const buf = Buffer.alloc(max + 1);
    let total = 0;
    for (;;) {
      const n = readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total > max) return null;
    }
    return buf.subarray(0, total).toString('utf8');
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A predicate for "this absolute path lies inside the sandbox roots". */
export type InsideRoots = (absolute: string) => boolean;

const NOWHERE: InsideRoots = () => false;

/** True when `file`, its real path or its directory's real path lies inside the roots. */
function reachableByAgent(file: string, isInsideRoots: InsideRoots): boolean {
  const candidates = [path.resolve(file)];
  try {
    candidates.push(realpathSync(path.dirname(file)));
  } catch {
    /* missing: the file is read as missing too */
  }
  try {
    candidates.push(realpathSync(file));
  } catch {
    /* idem */
  }
  return candidates.some((p) => isInsideRoots(p));
}

/**
 * True when gh's configuration directory (or its `config.yml` / `hosts.yml`) lies inside the roots: the agent could
 * have written it — e.g. `http_unix_socket` in config.yml sends every gh request, token included, to a unix socket,
 * around the egress guard — so gh must not run with it (src/vcs/github-request.ts gives gh a private one instead).
 */
export function ghConfigReachable(
  env: NodeJS.ProcessEnv = process.env,
  home: string = os.homedir(),
  isInsideRoots: InsideRoots = NOWHERE,
): boolean {
  const dir = ghConfigDir(env, home);
  return (
    reachableByAgent(path.join(dir, 'config.yml'), isInsideRoots) ||
    reachableByAgent(path.join(dir, 'hosts.yml'), isInsideRoots)
  );
}

/** The hosts of gh's `hosts.yml` (see the module comment for the rules). */
export function ghConfiguredHosts(
  env: NodeJS.ProcessEnv = process.env,
  home: string = os.homedir(),
  isInsideRoots: InsideRoots = NOWHERE,
): HostPort[] {
  const file = path.join(ghConfigDir(env, home), 'hosts.yml');
  if (reachableByAgent(file, isInsideRoots)) return [];
  const text = readSmallFile(file, GH_HOSTS_FILE_MAX_BYTES);
  return text === null ? [] : parseGhHostsYaml(text);
}

/** `host[:port]` or a URL's authority; null when unset or unparseable. */
function hostOf(raw: string | undefined): HostPort | null {
  if (!raw) return null;
  const m = /^(?:[a-z][a-z0-9+.-]*:\/\/)?(?:[^/@]*@)?([^/?#]+)/i.exec(raw.trim());
  return m ? splitHostPort(m[1]) : null;
}

function addUnique(list: HostPort[], hp: HostPort | null): void {
  if (hp && !list.some((h) => h.host === hp.host && h.port === hp.port)) list.push(hp);
}

/**
 * The hosts the operator configured (module comment). github.localhost is not among them: it is a development host
 * and must be configured like any other (GH_HOST, hosts.yml or --git-remote-allow).
 */
export function configuredForgeHosts(
  env: NodeJS.ProcessEnv = process.env,
  home: string = os.homedir(),
  isInsideRoots: InsideRoots = NOWHERE,
): ConfiguredHosts {
  const github: HostPort[] = [{ host: 'github.com', port: null }];
  addUnique(github, hostOf(env.GH_HOST));
  for (const h of ghConfiguredHosts(env, home, isInsideRoots)) addUnique(github, h);
  const gitlab: HostPort[] = [{ host: 'gitlab.com', port: null }];
  addUnique(gitlab, hostOf(env.GITLAB_HOST));
  addUnique(gitlab, hostOf(env.CI_SERVER_URL) ?? hostOf(env.CI_SERVER_HOST));
  return { github, gitlab };
}

/**
 * True when `list` names `host` (exactly, case-insensitively) on `port`: an entry with a port needs that port, an
 * entry without one admits the default ports 443 and 80 (as --git-remote-allow entries do); `port` null: any entry.
 */
export function hostListed(list: readonly HostPort[], host: string, port: number | null = null): boolean {
  const h = host.toLowerCase();
  return list.some(
    (e) => e.host === h && (port === null || (e.port === null ? port === 443 || port === 80 : e.port === port)),
  );
}

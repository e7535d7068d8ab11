/**
 * The one filter every outgoing message passes (docs/errors.md: no token, no credential in a URL; docs/issue-tools.md: tokens redacted from
 * every message and log). Pure string rewriting, no IO.
 */
import { processSlot } from '../process-slots.js';

const REDACTED = '[REDACTED]';

/** Patterns of credentials that may appear in messages from git, gh, glab or URLs. Order matters: URLs first. */
const CREDENTIAL_PATTERNS: ReadonlyArray<[RegExp, string | ((...m: string[]) => string)]> = [
  // scheme://user:password@host or scheme://token@host  → scheme://[REDACTED]@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+(?::[^\s/@]*)?@/gi, (_m, scheme) => `${scheme}${REDACTED}@`],
  // GitHub tokens (classic, fine-grained, OAuth, app, refresh)
  [/\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})\b/g, REDACTED],
  // GitLab tokens
  [/\bgl(?:pat|dt|oas|rt|cbt|ptt|ft|imt|agent|soat)-[A-Za-z0-9_-]{10,}/g, REDACTED],
  // Authorization headers and key=value credentials
  [/\b(authorization\s*:\s*(?:bearer|token|basic)\s+)[^\s"']+/gi, (_m, p) => `${p}${REDACTED}`],
  // (a closing quote after the key and an opening quote before the value are allowed: JSON bodies, shell quoting)
  [
    /\b((?:private[-_]?token|access[-_]?token|job[-_]?token|token|password|passwd|secret|api[-_]?key)["']?\s*[=:]\s*["']?)[^\s"'&,;]+/gi,
    (_m, p) => `${p}${REDACTED}`,
  ],
  // AWS access key ids
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, REDACTED],
];

/**
 * Returns `text` with credentials replaced by `[REDACTED]`.
 * @param text any string that may leave the process (envelope field, log line)
 * @param extraSecrets exact strings known to be secret in this process (e.g. the GITLAB_TOKEN value)
 */
export function redact(text: string, extraSecrets: readonly string[] = knownSecrets): string {
  let out = text;
  for (const secret of extraSecrets) {
    if (secret.length >= 6) out = out.split(secret).join(REDACTED);
  }
  for (const [pattern, replacement] of CREDENTIAL_PATTERNS) {
    out = out.replace(pattern, replacement as never);
  }
  return out;
}

/** Deep-redacts every string in a JSON-like value. */
export function redactDeep<T>(value: T): T {
  if (typeof value === 'string') return redact(value) as T;
  if (Array.isArray(value)) return (value as unknown[]).map((v) => redactDeep(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v);
    return out as T;
  }
  return value;
}

/** Token values found in the environment at start-up; redacted verbatim wherever they appear (src/process-slots.ts). */
const knownSecrets = processSlot('errors/redact', (): string[] => []);

/** Registers the values of token-bearing environment variables so they are redacted verbatim (called by cli.ts). */
export function registerSecretsFromEnv(env: NodeJS.ProcessEnv): void {
  for (const name of [
    'GH_TOKEN',
    'GITHUB_TOKEN',
    'GH_ENTERPRISE_TOKEN',
    'GITHUB_ENTERPRISE_TOKEN',
    'GITLAB_TOKEN',
    'GITLAB_PRIVATE_TOKEN',
    'CI_JOB_TOKEN',
    'GLAB_TOKEN',
  ]) {
    const value = env[name];
    if (value && value.length >= 6 && !knownSecrets.includes(value)) knownSecrets.push(value);
  }
}

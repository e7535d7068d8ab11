/**
 * The one mapper (docs/errors.md): every tool failure, typed or not, becomes exactly one envelope here, and only here.
 * A ToolError maps to its own code; Node errno errors map by errno; anything else is INTERNAL with an incident id
 * logged to stderr with its stack. Never maps an unknown failure to a client-fault code other than INTERNAL's
 * fix_arguments default. Every string leaves through `redact()`.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { ERROR_CODES, type ErrorCode, type Recovery } from './codes.js';
import type { EnvelopeErrorSchema } from './envelope-schema.js';
import { redact, redactDeep } from './redact.js';
import { ToolError } from './tool-error.js';
import { processSlot } from '../process-slots.js';

/**
 * The envelope body (docs/errors.md), derived from its zod schema (src/errors/envelope-schema.ts; one type per
 * shape). Extra members appear only for OCC_MISMATCH.
 */
export type EnvelopeError = z.infer<typeof EnvelopeErrorSchema>;

/** `{ error: … }`: what the text content of an isError result holds, and nothing else. */
export interface ErrorEnvelope {
  error: EnvelopeError;
}

/** Default next step per code, used when the thrower gave none. */
const DEFAULT_SUGGESTIONS: Record<ErrorCode, string> = {
  NOT_ALLOWED: 'Use a path inside the roots (list_allowed_directories).',
  NOT_FOUND: 'Check the path with list_directory.',
  ROOTS_EMPTY: 'Start fs-tools with a ROOT argument, or have the client announce roots.',
  SECRET_DENIED:
    'Secret files are off limits; ask the user to restart fs-tools with --allow-secrets if access is intended.',
  FILE_POLICY_DENIED: 'This path is protected by policy; choose another path.',
  READONLY: 'The server is read-only; do not retry.',
  VALIDATION: 'Fix the arguments as the message says.',
  REWRITE_BLOCKED: 'Use write_file for a full rewrite, or pass allow_rewrite: true.',
  OCC_MISMATCH: 'Read the file again, redo your change on it, and pass its content_hash as expected_hash.',
  HASH_REQUIRED: 'Read the file first (read_file or stat), then pass its content_hash as expected_hash.',
  PATCH_FAILED: 'Read the file again and redo the hunk or edit from it; do not resend the same patch.',
  BEGIN_PATCH: 'Send a unified diff (--- a/file, +++ b/file, @@ hunks) instead of the *** Begin Patch format.',
  BUDGET_EXCEEDED: 'The mutation budget is used up; stop and tell the user.',
  STALE_GIT: 'Call git_status again and re-plan against the current work tree.',
  TOOL_UNAVAILABLE: 'This tool is disabled here; use the listed tools.',
  ROLLBACK_COMPLETE: 'Nothing was changed in the end; read the files, fix the cause and try again.',
  ROLLBACK_PARTIAL: 'Read every file listed in details.files before doing anything else; some were not restored.',
  ROLLBACK_FAILED: 'Read every file listed in details.files before doing anything else; none could be restored.',
  IO_ERROR: 'The operating system refused the operation; check disk space and permissions.',
  INTERNAL: 'This is a bug in fs-tools; report the incident id.',
  GH_CLI_MISSING: 'Install the GitHub CLI (gh).',
  GH_AUTH_REQUIRED: 'Run `gh auth login` or set GH_TOKEN.',
  GH_FORBIDDEN: 'Grant the token the needed scope or authorize it for SSO.',
  GH_NOT_FOUND: 'Check the repository and issue number.',
  GH_RATE_LIMIT: 'Wait until the rate limit resets.',
  GH_NETWORK: 'Check the network and try again later.',
  GH_AMBIGUOUS: 'Pass repo explicitly (owner/name).',
  GH_REPO_UNRESOLVED: 'Pass repo explicitly (owner/name).',
  GH_OUTPUT_LIMIT: 'Narrow the request (lower limit).',
  GH_NOT_ISSUE: 'This number is a pull request; use an issue number.',
  GH_HOST_DENIED: 'This host is not in --git-remote-allow.',
  GH_FAILED: 'See the message and details.',
  GL_AUTH_REQUIRED: 'Set GITLAB_TOKEN or run `glab auth login`.',
  GL_FORBIDDEN: 'Grant the token the needed scope.',
  GL_NOT_FOUND: 'Check the project path and issue number.',
  GL_NETWORK: 'Check the network and try again later.',
  GL_AMBIGUOUS: 'Pass repo explicitly (group/name).',
  GL_REPO_UNRESOLVED: 'Pass repo explicitly (group/name).',
  GL_FAILED: 'See the message and details.',
};

/** errno → code for Node errors that reach the mapper without a ToolError wrapper (docs/errors.md). */
const IO_ERRNOS = new Set([
  'ENOSPC',
  'EIO',
  'EROFS',
  'EMFILE',
  'ENFILE',
  'EDQUOT',
  'EBUSY',
  'EXDEV',
  'ETXTBSY',
  'EFBIG',
]);

interface NodeErrnoLike {
  code: string;
  path?: string;
  syscall?: string;
  errno?: number;
}

function isErrnoError(error: unknown): error is Error & NodeErrnoLike {
  const code = error instanceof Error ? (error as unknown as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code);
}

/**
 * What start-up and tests install here (src/process-slots.ts): `logIncident`, the incident logger (to stderr, never
 * stdout: it carries the protocol; replaceable in tests through `setIncidentLogger`); `denialSource`, who refused an
 * EACCES/EPERM: `os` (file permissions) or `kernel` (the kernel wall, docs/security.md). Without the wall every refusal
 * is the operating system's; the CLI replaces it when the wall is enforced (`setDenialSource`).
 */
const hooks = processSlot('errors/to-envelope', () => ({
  logIncident: (line: string): void => {
    process.stderr.write(`${line}\n`);
  },
  denialSource: (_path: string | null): 'os' | 'kernel' => 'os',
}));

/**
 * Replaces the incident logger and returns the previous one, so a test can capture what INTERNAL logs and restore
 * stderr afterwards.
 */
export function setIncidentLogger(logger: (line: string) => void): (line: string) => void {
  const previous = hooks.logIncident;
  hooks.logIncident = logger;
  return previous;
}

/**
 * Turns any thrown value into the docs/errors.md envelope.
 * @param error a ToolError, a Node errno error, or anything else (→ INTERNAL)
 * @returns the envelope, with every string redacted
 */
export function toEnvelope(error: unknown): ErrorEnvelope {
  if (error instanceof ToolError) {
    return build(error.code, error.message, {
      path: error.path,
      details: error.details,
      suggestion: error.suggestion,
      retryable: error.retryable,
      recovery: error.recovery,
      envelopeExtras: () => error.envelopeExtras(),
    });
  }
  if (isErrnoError(error)) return fromErrno(error);
  const incidentId = randomUUID();
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  hooks.logIncident(`fs-tools: INTERNAL incident ${incidentId}: ${redact(stack)}`);
  return build('INTERNAL', `Internal error in fs-tools (incident ${incidentId}).`, {
    details: { incident_id: incidentId },
  });
}

/** Replaces the classifier of EACCES/EPERM refusals (see `hooks.denialSource`). */
export function setDenialSource(classify: (path: string | null) => 'os' | 'kernel'): void {
  hooks.denialSource = classify;
}

/** `details.source` of an OS refusal of `path` (null: unknown). */
export function refusalSource(path: string | null): 'os' | 'kernel' {
  return hooks.denialSource(path);
}

function fromErrno(error: Error & NodeErrnoLike): ErrorEnvelope {
  const path = typeof error.path === 'string' ? error.path : null;
  const errno = error.code;
  switch (errno) {
    case 'ENOENT':
    case 'ENOTDIR':
      return build('NOT_FOUND', 'No such file or directory.', { path });
    case 'EACCES':
    case 'EPERM':
      return build('FILE_POLICY_DENIED', `The operating system denied access (${errno})${path ? ` to ${path}` : ''}.`, {
        path,
        details: { source: hooks.denialSource(path), errno },
      });
    case 'EISDIR':
      return build('VALIDATION', `${path ?? 'The path'} is a directory, not a file.`, {
        path,
        details: { reason: 'is_directory' },
      });
    case 'ENAMETOOLONG':
      return build('VALIDATION', 'The path is too long for the filesystem.', {
        path,
        details: { reason: 'name_too_long' },
      });
    case 'ELOOP':
      return build('NOT_ALLOWED', 'The path changed to a symbolic link during the call, or links loop.', { path });
    default:
      if (IO_ERRNOS.has(errno)) {
        return build('IO_ERROR', `The operating system failed the operation (${errno})${path ? ` on ${path}` : ''}.`, {
          path,
          details: { errno, ...(error.syscall ? { syscall: error.syscall } : {}) },
        });
      }
      return build('IO_ERROR', `Unexpected operating-system error (${errno})${path ? ` on ${path}` : ''}.`, {
        path,
        details: { errno, ...(error.syscall ? { syscall: error.syscall } : {}) },
      });
  }
}

interface BuildFields {
  path?: string | null;
  details?: Record<string, unknown>;
  suggestion?: string;
  retryable?: boolean;
  recovery?: Recovery;
  envelopeExtras?: () => Record<string, unknown>;
}

function build(code: ErrorCode, message: string, fields: BuildFields): ErrorEnvelope {
  const info = ERROR_CODES[code];
  const body: EnvelopeError = {
    code,
    message: redact(message),
    path: fields.path == null ? null : redact(fields.path),
    details: redactDeep(fields.details ?? {}),
    suggestion: redact(fields.suggestion ?? DEFAULT_SUGGESTIONS[code]),
    retryable: fields.retryable ?? info.retryable,
    recovery: fields.recovery ?? info.recovery,
    ...redactDeep(fields.envelopeExtras?.() ?? {}),
  };
  return { error: body };
}

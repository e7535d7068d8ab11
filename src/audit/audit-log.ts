/**
 * The audit log (docs/security.md): with --audit-log, one JSON line per tool call with time, tool, action, paths, outcome
 * code (or "ok"), hashes before and after, bytes and duration. Never file content, patch bodies, issue bodies or
 * secrets: entries are built from an allow-list of fields, and every string passes `redact()`. Lines carry
 * agent-chosen strings (paths, actions), JSON-escaped: a consumer must parse them as JSON, never paste them into a
 * shell. Writing the log never fails a call: the first failure is reported once on stderr and later ones are silent.
 *
 * The file is opened ONCE, at start-up, with O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW (mode 0600 when created), and every
 * line is written through that descriptor: moving the log or its directory away, or putting a link
 * where it was, changes nothing about where lines go. A log that is a symlink at start-up is refused (stderr).
 */
import { closeSync, constants, fstatSync, openSync, realpathSync, writeSync } from 'node:fs';
import { redactDeep } from '../errors/redact.js';

/** One audit line. Only these fields are ever written. */
export interface AuditEntry {
  time: string;
  tool: string;
  action?: string;
  paths: string[];
  outcome: string;
  hash_before?: string | null;
  hash_after?: string | null;
  bytes?: number;
  duration_ms: number;
}

/** Appends audit lines to a file; a no-op without --audit-log. */
export class AuditLog {
  private failed = false;
  private fd: number | null = null;

  constructor(
    private readonly file: string | null,
    private readonly warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  ) {
    if (!file) return;
    try {
      const fd = openSync(
        file,
        constants.O_WRONLY |
          constants.O_APPEND |
          constants.O_CREAT |
          (constants.O_NOFOLLOW ?? 0) |
          (constants.O_NONBLOCK ?? 0),
        0o600,
      );
      if (!fstatSync(fd).isFile()) {
        closeSync(fd);
        throw Object.assign(new Error('not a regular file'), { code: 'EINVAL' });
      }
      this.fd = fd;
    } catch (error) {
      this.fail(error);
    }
  }

  /** Real paths of the opened log (the descriptor's own, on Linux), for the built-in guard; empty without a log. */
  realPaths(): string[] {
    if (this.fd === null || !this.file) return [];
    const out: string[] = [];
    try {
      out.push(realpathSync(`/proc/self/fd/${this.fd}`));
    } catch {
      /* no /proc */
    }
    try {
      out.push(realpathSync.native(this.file));
    } catch {
      /* gone */
    }
    return out;
  }

  private fail(error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.warn(
      `fs-tools: cannot write audit log ${this.file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); calls continue without it`,
    );
  }

  /**
   * True when `record` writes lines: a log was given and opened. When false `record` does nothing, so a caller may skip
   * building the entry (formatting the time of every call without a log was about 1 % of a small read's CPU).
   */
  get enabled(): boolean {
    return this.fd !== null;
  }

  /** Appends one line. Never throws. */
  record(entry: AuditEntry): void {
    if (this.fd === null) return;
    const clean: AuditEntry = {
      time: entry.time,
      tool: entry.tool,
      ...(entry.action !== undefined ? { action: entry.action } : {}),
      paths: entry.paths,
      outcome: entry.outcome,
      ...(entry.hash_before !== undefined ? { hash_before: entry.hash_before } : {}),
      ...(entry.hash_after !== undefined ? { hash_after: entry.hash_after } : {}),
      ...(entry.bytes !== undefined ? { bytes: entry.bytes } : {}),
      duration_ms: entry.duration_ms,
    };
    try {
      // One write(2) per line on an O_APPEND descriptor: lines from concurrent calls never interleave.
      const line = Buffer.from(`${JSON.stringify(redactDeep(clean))}\n`);
      let off = 0;
      while (off < line.length) off += writeSync(this.fd, line, off);
    } catch (error) {
      this.fail(error);
    }
  }
}

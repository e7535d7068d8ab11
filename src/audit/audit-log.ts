/**
 * The audit log (SPEC §9): with --audit-log, one JSON line per tool call with time, tool, action, paths, outcome
 * code (or "ok"), hashes before and after, bytes and duration. Never file content, patch bodies, issue bodies or
 * secrets: entries are built from an allow-list of fields, and every string passes `redact()`. Writing the log
 * never fails a call: the first failure is reported once on stderr and later ones are silent.
 */
import { appendFileSync } from 'node:fs';
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

  constructor(private readonly file: string | null, private readonly warn: (line: string) => void =
    (line) => process.stderr.write(`${line}\n`)) {}

  /** Appends one line. Never throws. */
  record(entry: AuditEntry): void {
    if (!this.file) return;
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
      appendFileSync(this.file, `${JSON.stringify(redactDeep(clean))}\n`, { mode: 0o600 });
    } catch (error) {
      if (!this.failed) {
        this.failed = true;
        this.warn(`fs-tools: cannot write audit log ${this.file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); calls continue without it`);
      }
    }
  }
}

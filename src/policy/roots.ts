/**
 * The effective sandbox roots of this process (docs/security.md "Roots"): command-line roots (or the cwd default) combined with the
 * roots a client announces, under --client-roots=narrow|replace|ignore. A path-tool call that arrives while the
 * first client request for roots is pending waits for it, at most 2 s (docs/tools.md).
 *
 * Rules (docs/security.md "Roots"), each with a name that list_allowed_directories reports as `rule`:
 *   - `command_line` / `cwd_default` / `no_default_root`: no client roots in effect (none asked, none announced yet,
 *     `ignore`, or a 2026-07-28 client that is never asked).
 *   - `client_offered_none`: the client's FIRST announcement (and every one after it that is also empty, as long as
 *     it never announced a root) is an empty list: the client has no roots to offer (MCP Inspector answers `[]`),
 *     so the command-line (or default) roots stay in force. Under `replace` too: an empty list replaces nothing.
 *   - `narrowed_by_client`: narrow with command-line roots: the intersection of both.
 *   - `client_replaces_default`: narrow without command-line roots: the client's roots replace the cwd default.
 *   - `replaced_by_client`: replace: the client's roots.
 *   - `client_emptied`: an empty list after a non-empty one narrows to nothing, never back to the old set.
 *
 * Roots given but not in force are kept as RejectedRoot (docs/security.md "Roots"): command-line roots left out at
 * start-up, and each entry of the client's last roots/list answer that is not a `file://` URI of a readable local
 * directory. Every `current()` snapshot carries them, so ROOTS_EMPTY and the NOT_ALLOWED of a path outside the roots
 * can name them; they never widen anything.
 */
import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ToolError } from '../errors/tool-error.js';
import { HOST_FLAVOR, isWithin } from './containment.js';

/**
 * One sandbox root as configured (command line or the cwd default). `real` is its realpath; `given` is the absolute
 * spelling the user gave. Declared here, not in config.ts, so policy never imports the configuration (config → policy
 * is the one direction).
 */
export interface ConfiguredRoot {
  given: string;
  real: string;
  source: 'cli' | 'cwd';
}

/** One root in force. `real` is its realpath; `given` is the spelling it was announced with. */
export interface EffectiveRoot {
  given: string;
  real: string;
  source: 'cli' | 'cwd' | 'client';
}

/** Which rule produced the effective set (see the module comment). */
export type RootsRule =
  | 'command_line'
  | 'cwd_default'
  | 'no_default_root'
  | 'client_offered_none'
  | 'narrowed_by_client'
  | 'client_replaces_default'
  | 'replaced_by_client'
  | 'client_emptied';

/** Every RootsRule, for the output schema of list_allowed_directories. */
export const ROOTS_RULES: readonly RootsRule[] = [
  'command_line',
  'cwd_default',
  'no_default_root',
  'client_offered_none',
  'narrowed_by_client',
  'client_replaces_default',
  'replaced_by_client',
  'client_emptied',
];

/**
 * Why a root was left out (docs/security.md "Roots"): `missing` (no such path), `not_a_directory`, `unreadable` (the
 * process may not list or enter it), and for a client's roots/list entry `not_a_file_uri` (a plain path, another
 * scheme, or a `file://` URI that names no local path) or `malformed` (not an object with a string `uri`).
 */
export type RootRejection = 'missing' | 'not_a_directory' | 'unreadable' | 'not_a_file_uri' | 'malformed';

/** Every RootRejection, for output schemas. */
export const ROOT_REJECTIONS: readonly RootRejection[] = [
  'missing',
  'not_a_directory',
  'unreadable',
  'not_a_file_uri',
  'malformed',
];

/**
 * A root that was given but is not in force: `given` is the spelling as given (made absolute for a command-line root;
 * a client entry's URI or path, at most 200 characters), `source` where it came from, `reason` why it was left out.
 */
export interface RejectedRoot {
  given: string;
  source: 'cli' | 'client';
  reason: RootRejection;
}

/** One sentence per rejection reason, for stderr lines and envelope messages. */
export function describeRejection(reason: RootRejection): string {
  switch (reason) {
    case 'missing':
      return 'does not exist';
    case 'not_a_directory':
      return 'is not a directory';
    case 'unreadable':
      return 'cannot be read (permission denied)';
    case 'not_a_file_uri':
      return 'is not a file:// URI';
    case 'malformed':
      return 'is not a root entry ({"uri": "file://..."})';
  }
}

/** What the client last announced: the URIs it sent (as paths where they are file URIs) and which of them exist. */
export interface ClientRootsReport {
  /**
   * Each announced entry: its path (or the URI or raw text when it is not a file URI), whether it is usable, and
   * when not, why.
   */
  announced: Array<{ path: string; usable: boolean; reason?: RootRejection }>;
}

/** Where an empty `current()` snapshot keeps the ROOTS_EMPTY error that names its cause (see rootsEmptyError). */
const EMPTY_CAUSE = Symbol('fs-tools.rootsEmptyCause');
/** Where a `current()` snapshot keeps the roots that were left out (see rejectedRootsOf). */
const REJECTED = Symbol('fs-tools.rejectedRoots');

/**
 * The roots left out when this snapshot was taken (command-line roots that do not exist, are not directories or are
 * unreadable; a client's invalid entries), for path envelopes to name; empty for a list built elsewhere.
 */
export function rejectedRootsOf(roots: readonly EffectiveRoot[]): readonly RejectedRoot[] {
  return (roots as { [REJECTED]?: readonly RejectedRoot[] })[REJECTED] ?? [];
}

/** Most rejected roots one envelope names (list_allowed_directories lists them all). */
const MAX_REJECTED_IN_ENVELOPE = 10;

/**
 * The rejected roots as envelope details carry them: `{rejected_roots: [{root, source, reason}]}` for the first 10,
 * plus `rejected_roots_omitted: N` when there are more (a client's answer may hold 256 rejected entries, which would
 * ride along in every envelope); `{}` when none.
 */
export function rejectedRootsDetails(rejected: readonly RejectedRoot[]): {
  rejected_roots?: Array<{ root: string; source: string; reason: RootRejection }>;
  rejected_roots_omitted?: number;
} {
  if (rejected.length === 0) return {};
  const shown = rejected
    .slice(0, MAX_REJECTED_IN_ENVELOPE)
    .map((r) => ({ root: r.given, source: r.source, reason: r.reason }));
  const omitted = rejected.length - shown.length;
  return { rejected_roots: shown, ...(omitted > 0 ? { rejected_roots_omitted: omitted } : {}) };
}

/**
 * The ROOTS_EMPTY error for an empty roots snapshot: the one the RootSet attached to it (naming the actual cause
 * and fix, docs/security.md "Roots"), or a generic one for a list built elsewhere (tests, `fs-tools call`).
 */
export function rootsEmptyError(roots: readonly EffectiveRoot[]): ToolError {
  const cause = (roots as { [EMPTY_CAUSE]?: () => ToolError })[EMPTY_CAUSE];
  return cause
    ? cause()
    : new ToolError('ROOTS_EMPTY', 'No sandbox roots are in force, so no path can be used.', { path: null });
}

/** docs/tools.md: how long a path call waits for the first pending roots/list answer. */
export const CLIENT_ROOTS_WAIT_MS = 2000;

/** Holds the effective roots and applies client announcements. One per process. */
export class RootSet {
  private roots: EffectiveRoot[];
  private pending: Promise<void> | null = null;
  private clientAnnounced = false;
  /** True once the client announced a non-empty list (from then on an empty list narrows to nothing). */
  private clientEverOffered = false;
  private lastClient: ClientRootsReport | null = null;
  private currentRule: RootsRule;

  private snapshot: readonly EffectiveRoot[] | null = null;
  /** How many client answers were started (track, applyClientRoots, applyClientAnswer), and the newest one applied. */
  private answersStarted = 0;
  private newestApplied = 0;

  /**
   * @param configured the command-line roots in force (or the working-directory default)
   * @param mode `--client-roots`
   * @param fromCommandLine whether ROOT/--root was given (even when every one was rejected: then there is no root,
   *   never the working-directory default)
   * @param rejectedAtStart command-line roots left out at start-up (config.ts), named by list_allowed_directories and
   *   path envelopes
   */
  constructor(
    private readonly configured: readonly ConfiguredRoot[],
    private readonly mode: 'narrow' | 'replace' | 'ignore',
    private readonly fromCommandLine: boolean,
    private readonly rejectedAtStart: readonly RejectedRoot[] = [],
  ) {
    this.roots = configured.map((r) => ({ ...r }));
    this.currentRule = this.baseRule();
  }

  /**
   * The roots in force now, first root first. An empty snapshot carries its ROOTS_EMPTY cause (rootsEmptyError); every
   * snapshot carries the rejected roots (rejectedRootsOf).
   */
  current(): readonly EffectiveRoot[] {
    if (this.snapshot) return this.snapshot;
    const list: EffectiveRoot[] = [...this.roots];
    if (list.length === 0) {
      const error = this.emptyError();
      Object.defineProperty(list, EMPTY_CAUSE, { value: () => error, enumerable: false });
    }
    Object.defineProperty(list, REJECTED, { value: Object.freeze([...this.rejected]), enumerable: false });
    this.snapshot = Object.freeze(list);
    return this.snapshot;
  }

  /** Every root left out now: the command-line ones rejected at start-up, then the client's last invalid entries. */
  get rejected(): readonly RejectedRoot[] {
    const client = (this.lastClient?.announced ?? [])
      .filter((a) => !a.usable && a.reason !== undefined)
      .map((a) => ({ given: a.path, source: 'client' as const, reason: a.reason as RootRejection }));
    return [...this.rejectedAtStart, ...client];
  }

  /** The command-line (or cwd default) roots this process started with. */
  get commandLine(): readonly EffectiveRoot[] {
    return this.configured;
  }

  /** What the client last announced, or null when it announced nothing (yet). */
  get client(): ClientRootsReport | null {
    return this.lastClient;
  }

  /** The rule that produced the current set. */
  get rule(): RootsRule {
    return this.currentRule;
  }

  /** True once a client announced roots that are in effect. */
  get fromClient(): boolean {
    return this.clientAnnounced && this.currentRule !== 'client_offered_none';
  }

  /** The client-roots mode (for list_allowed_directories). */
  get clientRootsMode(): string {
    return this.mode;
  }

  /** One sentence saying how the effective set came about (list_allowed_directories' text). */
  explain(): string {
    switch (this.currentRule) {
      case 'command_line':
        return 'The command-line roots are in force.';
      case 'cwd_default':
        return 'No ROOT was given: the working directory is the root.';
      case 'no_default_root':
        return 'No ROOT was given and the working directory is / or the home directory, so there is no default root.';
      case 'client_offered_none':
        return (
          'The client announced no roots (an empty list), so the ' +
          `${this.fromCommandLine ? 'command-line' : 'default'} roots stay in force.`
        );
      case 'narrowed_by_client':
        return "The client's roots narrow the command-line roots (--client-roots=narrow): only their overlap is allowed.";
      case 'client_replaces_default':
        return "No ROOT was given, so the client's roots replace the working-directory default.";
      case 'replaced_by_client':
        return "The client's roots replace the command-line roots (--client-roots=replace).";
      case 'client_emptied':
        return "The client's latest roots update was an empty list after a non-empty one, which narrows to nothing.";
    }
  }

  /**
   * The ROOTS_EMPTY error for the current state: its message names the actual cause and its suggestion the fix
   * (docs/security.md "Roots"). Never names a path outside the roots other than the client's own announcement.
   */
  emptyError(): ToolError {
    const rule = this.currentRule;
    const announced = this.lastClient?.announced ?? [];
    const rejected = this.rejected;
    const named = rejected
      .slice(0, 5)
      .map((r) => `${r.given} ${describeRejection(r.reason)}`)
      .join('; ');
    let message: string;
    let suggestion: string;
    // Every command-line root left out: the cause whatever a client announced since (narrowing an empty set).
    if (this.configured.length === 0 && this.rejectedAtStart.length > 0 && rule !== 'replaced_by_client') {
      message = `No sandbox roots: every command-line root was left out (${named}).`;
      suggestion =
        "Fix the ROOT arguments (or --root) of the fs-tools command in the client's MCP configuration: give existing " +
        'directories as absolute paths (a leading ~/ is expanded), then restart the server.';
    } else if (announced.length > 0 && announced.every((a) => !a.usable)) {
      message = `No sandbox roots: no entry of the client's roots/list answer is a usable local directory (${named}).`;
      suggestion =
        'Have the client announce its workspace as file:// URIs of existing directories (its workspace or roots ' +
        'setting), or restart fs-tools with --client-roots=ignore to keep the command-line roots.';
    } else if (rule === 'client_emptied') {
      message =
        "No sandbox roots: the client's latest roots update was an empty list, which narrows the roots to nothing.";
      suggestion =
        'Have the client announce a workspace root again, or restart fs-tools with --client-roots=ignore to keep the command-line roots.';
    } else if (rule === 'no_default_root') {
      message =
        'No sandbox roots: fs-tools was started without a ROOT, and its working directory (/ or the home directory) is never a default root.';
      suggestion =
        "Add the project directory as a ROOT argument (or --root DIR) to the fs-tools command in the client's MCP configuration.";
    } else if (rule === 'narrowed_by_client') {
      message = "No sandbox roots: the client's roots do not overlap the command-line roots (--client-roots=narrow).";
      suggestion =
        "Open the client inside a command-line root, or restart fs-tools with --client-roots=ignore (keep the command-line roots) or replace (trust the client's).";
    } else {
      message = 'No sandbox roots are in force, so no path can be used.';
      suggestion = 'Start fs-tools with a ROOT argument, or have the client announce roots.';
    }
    return new ToolError('ROOTS_EMPTY', message, {
      path: null,
      details: {
        rule,
        client_roots: this.mode,
        command_line_roots: this.configured.length,
        client_announced: announced.length,
        ...rejectedRootsDetails(rejected),
      },
      suggestion,
    });
  }

  /** Waits for a pending client roots request, at most CLIENT_ROOTS_WAIT_MS. */
  async ready(): Promise<void> {
    if (!this.pending) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.pending,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLIENT_ROOTS_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  /**
   * Registers a roots/list request in flight; calls wait for it (bounded). `request` resolves to the raw result of
   * the request (not checked by a schema: applyClientAnswer takes it entry by entry). A failed request leaves the
   * roots as they were and is reported through `onError`.
   */
  track(request: Promise<unknown>, onError: (e: unknown) => void): void {
    if (this.mode === 'ignore') return;
    // The answer's place in request order is taken now: an answer parsed after a newer one was applied is stale.
    const order = ++this.answersStarted;
    const p = request.then((result) => this.applyAnswerInOrder(result, order), onError);
    this.pending = p.finally(() => {
      if (this.pending === p) this.pending = null;
    });
  }

  /** applyClientAnswer for a list of URIs (`{roots: [{uri}, …]}`). */
  async applyClientRoots(uris: readonly string[]): Promise<void> {
    await this.applyClientAnswer({ roots: uris.map((uri) => ({ uri })) });
  }

  /**
   * Applies a client's roots/list result (docs/security.md "Roots"), entry by entry: an entry `{uri}` whose `uri` is
   * a `file://` URI of an existing, readable directory applies; any other entry (a plain path, another scheme, a
   * missing path, a file, not an object) is listed as rejected with its reason. A result without a `roots` array is
   * one malformed entry. A non-empty answer with no usable entry gives no roots (ROOTS_EMPTY naming the rejected
   * entries), never the wider default. An empty list before any non-empty one keeps the command-line (or default)
   * roots; an empty list after a non-empty one narrows to nothing, never back to the old set.
   */
  async applyClientAnswer(result: unknown): Promise<void> {
    await this.applyAnswerInOrder(result, ++this.answersStarted);
  }

  /**
   * applyClientAnswer for the answer to the `order`-th request: answers are parsed concurrently (a list_changed storm
   * sends one roots/list per notification), and one whose request is older than the answer last applied is dropped,
   * so a slow old answer never undoes a newer one (an empty list after a non-empty one stays empty).
   */
  private async applyAnswerInOrder(result: unknown, order: number): Promise<void> {
    if (this.mode === 'ignore') return;
    const list = (result as { roots?: unknown } | null)?.roots;
    const entries: unknown[] = Array.isArray(list) ? list : [result];
    const client: EffectiveRoot[] = [];
    const announced: ClientRootsReport['announced'] = [];
    for (const entry of entries.slice(0, MAX_CLIENT_ROOTS)) {
      const parsed = await parseClientRoot(entry);
      announced.push(parsed.announced);
      if (parsed.root) client.push(parsed.root);
    }
    if (order < this.newestApplied) return;
    this.newestApplied = order;
    this.clientAnnounced = true;
    this.lastClient = { announced };
    if (entries.length === 0) {
      if (!this.clientEverOffered) {
        this.set(
          this.configured.map((r) => ({ ...r })),
          'client_offered_none',
        );
      } else {
        this.set([], 'client_emptied');
      }
      return;
    }
    this.clientEverOffered = true;
    if (this.mode === 'replace') {
      this.set(dedupe(client), 'replaced_by_client');
      return;
    }
    if (!this.fromCommandLine) {
      this.set(dedupe(client), 'client_replaces_default');
      return;
    }
    // narrow: intersect with the command-line roots.
    const out: EffectiveRoot[] = [];
    for (const c of client) {
      for (const r of this.configured) {
        if (isWithin(r.real, c.real, HOST_FLAVOR)) out.push(c);
        else if (isWithin(c.real, r.real, HOST_FLAVOR)) out.push({ ...r });
      }
    }
    this.set(dedupe(out), 'narrowed_by_client');
  }

  private set(roots: EffectiveRoot[], rule: RootsRule): void {
    this.roots = roots;
    this.currentRule = rule;
    this.snapshot = null;
  }

  private baseRule(): RootsRule {
    if (this.fromCommandLine) return 'command_line';
    return this.configured.length > 0 ? 'cwd_default' : 'no_default_root';
  }
}

/** Most entries of one roots/list answer taken (the rest are ignored: a client has a handful of workspace folders). */
const MAX_CLIENT_ROOTS = 256;

/** The most characters of a rejected entry's text that list_allowed_directories and envelopes show. */
const MAX_SHOWN_ENTRY = 200;

/**
 * Client-supplied text as list_allowed_directories and envelopes show it: one line (control characters, U+2028 and
 * U+2029 written as `\uXXXX`, so a newline in an announced URI cannot start a line of its own in text a model reads)
 * and at most 200 characters (a `file://` URI's path as well as a plain string).
 */
function shownText(text: string): string {
  // eslint-disable-next-line no-control-regex
  const oneLine = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  return oneLine.length > MAX_SHOWN_ENTRY ? `${oneLine.slice(0, MAX_SHOWN_ENTRY - 1)}…` : oneLine;
}

/** The text of an entry that is not a usable root, as list_allowed_directories shows it (see shownText). */
function entryText(entry: unknown): string {
  const uri = (entry as { uri?: unknown } | null)?.uri;
  const text = typeof uri === 'string' ? uri : typeof entry === 'string' ? entry : (JSON.stringify(entry) ?? 'null');
  return shownText(text.slice(0, 4 * MAX_SHOWN_ENTRY));
}

/** One roots/list entry → the root it gives, or why it gives none (see RootSet.applyClientAnswer). */
async function parseClientRoot(
  entry: unknown,
): Promise<{ root?: EffectiveRoot; announced: ClientRootsReport['announced'][number] }> {
  const uri = typeof entry === 'object' && entry !== null ? (entry as { uri?: unknown }).uri : undefined;
  if (typeof uri !== 'string') return { announced: { path: entryText(entry), usable: false, reason: 'malformed' } };
  let given: string;
  try {
    if (!uri.startsWith('file://')) throw new Error('not a file URI');
    given = fileURLToPath(uri);
  } catch {
    return { announced: { path: entryText(entry), usable: false, reason: 'not_a_file_uri' } };
  }
  const refusal = (reason: RootRejection) => ({
    announced: { path: shownText(given.slice(0, 4 * MAX_SHOWN_ENTRY)), usable: false, reason },
  });
  let real: string;
  try {
    real = await realpath(given);
  } catch (error) {
    // A root that does not exist cannot contain anything.
    return refusal((error as NodeJS.ErrnoException).code === 'EACCES' ? 'unreadable' : 'missing');
  }
  try {
    if (!(await stat(real)).isDirectory()) return refusal('not_a_directory');
    await access(real, constants.R_OK | constants.X_OK);
  } catch (error) {
    return refusal((error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable');
  }
  return { root: { given, real, source: 'client' }, announced: { path: given, usable: true } };
}

function dedupe(roots: EffectiveRoot[]): EffectiveRoot[] {
  const seen = new Set<string>();
  return roots.filter((r) => (seen.has(r.real) ? false : (seen.add(r.real), true)));
}

/**
 * The effective sandbox roots of this process (SPEC §4.1): command-line roots (or the cwd default) combined with the
 * roots a client announces, under --client-roots=narrow|replace|ignore. A path-tool call that arrives while the
 * first client request for roots is pending waits for it, at most 2 s (SPEC §2).
 *
 * Rules (SPEC §4.1 as updated for issue #15), each with a name that list_allowed_directories reports as `rule`:
 *   - `command_line` / `cwd_default` / `no_default_root`: no client roots in effect (none asked, none announced yet,
 *     `ignore`, or a 2026-07-28 client that is never asked).
 *   - `client_offered_none`: the client's FIRST announcement (and every one after it that is also empty, as long as
 *     it never announced a root) is an empty list: the client has no roots to offer (MCP Inspector answers `[]`),
 *     so the command-line (or default) roots stay in force. Under `replace` too: an empty list replaces nothing.
 *   - `narrowed_by_client`: narrow with command-line roots: the intersection of both.
 *   - `client_replaces_default`: narrow without command-line roots: the client's roots replace the cwd default.
 *   - `replaced_by_client`: replace: the client's roots.
 *   - `client_emptied`: an empty list after a non-empty one narrows to nothing, never back to the old set.
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ToolError } from '../errors/tool-error.js';
import { HOST_FLAVOR, isWithin } from './containment.js';

/**
 * One sandbox root as configured (command line or the cwd default). `real` is its realpath; `given` is the absolute
 * spelling the user gave. Declared here, not in config.ts, so policy never imports the configuration (config → policy
 * is the one direction: issue 11 item 5).
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

/** What the client last announced: the URIs it sent (as paths where they are file URIs) and which of them exist. */
export interface ClientRootsReport {
  /** Each announced root: its path (or the URI when it is not a file URI) and whether it is usable. */
  announced: Array<{ path: string; usable: boolean }>;
}

/** Where an empty `current()` snapshot keeps the ROOTS_EMPTY error that names its cause (see rootsEmptyError). */
const EMPTY_CAUSE = Symbol('fs-tools.rootsEmptyCause');

/**
 * The ROOTS_EMPTY error for an empty roots snapshot: the one the RootSet attached to it (naming the actual cause
 * and fix, SPEC §4.1), or a generic one for a list built elsewhere (tests, `fs-tools call`).
 */
export function rootsEmptyError(roots: readonly EffectiveRoot[]): ToolError {
  const cause = (roots as { [EMPTY_CAUSE]?: () => ToolError })[EMPTY_CAUSE];
  return cause
    ? cause()
    : new ToolError('ROOTS_EMPTY', 'No sandbox roots are in force, so no path can be used.', { path: null });
}

/** SPEC §2: how long a path call waits for the first pending roots/list answer. */
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

  constructor(
    private readonly configured: readonly ConfiguredRoot[],
    private readonly mode: 'narrow' | 'replace' | 'ignore',
    private readonly fromCommandLine: boolean,
  ) {
    this.roots = configured.map((r) => ({ ...r }));
    this.currentRule = this.baseRule();
  }

  /** The roots in force now, first root first. An empty snapshot carries its ROOTS_EMPTY cause (rootsEmptyError). */
  current(): readonly EffectiveRoot[] {
    if (this.roots.length > 0) return this.roots;
    const empty: EffectiveRoot[] = [];
    const error = this.emptyError();
    Object.defineProperty(empty, EMPTY_CAUSE, { value: () => error, enumerable: false });
    return Object.freeze(empty);
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
   * (SPEC §4.1). Never names a path outside the roots other than the client's own announcement.
   */
  emptyError(): ToolError {
    const rule = this.currentRule;
    const announced = this.lastClient?.announced ?? [];
    let message: string;
    let suggestion: string;
    if (rule === 'client_emptied') {
      message =
        "No sandbox roots: the client's latest roots update was an empty list, which narrows the roots to nothing.";
      suggestion =
        'Have the client announce a workspace root again, or restart fs-tools with --client-roots=ignore to keep the command-line roots.';
    } else if (rule === 'no_default_root') {
      message =
        'No sandbox roots: fs-tools was started without a ROOT, and its working directory (/ or the home directory) is never a default root.';
      suggestion =
        "Add the project directory as a ROOT argument (or --root DIR) to the fs-tools command in the client's MCP configuration.";
    } else if (announced.length > 0 && announced.every((a) => !a.usable)) {
      message = 'No sandbox roots: none of the roots the client announced exists as a local directory.';
      suggestion =
        'Open the client on an existing local directory, or restart fs-tools with --client-roots=ignore to keep the command-line roots.';
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
   * Registers a roots/list request in flight; calls wait for it (bounded). A failed request leaves the roots as
   * they were and is reported through `onError`.
   */
  track(request: Promise<readonly { uri: string }[]>, onError: (e: unknown) => void): void {
    if (this.mode === 'ignore') return;
    const p = request.then((list) => this.applyClientRoots(list.map((r) => r.uri)), onError);
    this.pending = p.finally(() => {
      if (this.pending === p) this.pending = null;
    });
  }

  /**
   * Applies a client's announced root URIs (SPEC §4.1 as updated). Non-file URIs and roots that do not exist are
   * dropped. An empty list before any non-empty one keeps the command-line (or default) roots; an empty list after
   * a non-empty one narrows to nothing, never back to the old set.
   */
  async applyClientRoots(uris: readonly string[]): Promise<void> {
    if (this.mode === 'ignore') return;
    const client: EffectiveRoot[] = [];
    const announced: ClientRootsReport['announced'] = [];
    for (const uri of uris) {
      let given: string;
      try {
        given = fileURLToPath(uri);
      } catch {
        announced.push({ path: uri.slice(0, 200), usable: false });
        continue;
      }
      try {
        client.push({ given, real: await realpath(given), source: 'client' });
        announced.push({ path: given, usable: true });
      } catch {
        // A root that does not exist cannot contain anything.
        announced.push({ path: given, usable: false });
      }
    }
    this.clientAnnounced = true;
    this.lastClient = { announced };
    if (uris.length === 0) {
      if (!this.clientEverOffered) {
        this.roots = this.configured.map((r) => ({ ...r }));
        this.currentRule = 'client_offered_none';
      } else {
        this.roots = [];
        this.currentRule = 'client_emptied';
      }
      return;
    }
    this.clientEverOffered = true;
    if (this.mode === 'replace') {
      this.roots = dedupe(client);
      this.currentRule = 'replaced_by_client';
      return;
    }
    if (!this.fromCommandLine) {
      this.roots = dedupe(client);
      this.currentRule = 'client_replaces_default';
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
    this.roots = dedupe(out);
    this.currentRule = 'narrowed_by_client';
  }

  private baseRule(): RootsRule {
    if (this.fromCommandLine) return 'command_line';
    return this.configured.length > 0 ? 'cwd_default' : 'no_default_root';
  }
}

function dedupe(roots: EffectiveRoot[]): EffectiveRoot[] {
  const seen = new Set<string>();
  return roots.filter((r) => (seen.has(r.real) ? false : (seen.add(r.real), true)));
}

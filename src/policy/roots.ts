/**
 * The effective sandbox roots of this process (SPEC §4.1): command-line roots (or the cwd default) combined with the
 * roots a client announces, under --client-roots=narrow|replace|ignore. A path-tool call that arrives while the
 * first client request for roots is pending waits for it, at most 2 s (SPEC §2).
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
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

/** SPEC §2: how long a path call waits for the first pending roots/list answer. */
export const CLIENT_ROOTS_WAIT_MS = 2000;

/** Holds the effective roots and applies client announcements. One per process. */
export class RootSet {
  private roots: EffectiveRoot[];
  private pending: Promise<void> | null = null;
  private clientAnnounced = false;

  constructor(
    private readonly configured: readonly ConfiguredRoot[],
    private readonly mode: 'narrow' | 'replace' | 'ignore',
    private readonly fromCommandLine: boolean,
  ) {
    this.roots = configured.map((r) => ({ ...r }));
  }

  /** The roots in force now, first root first. */
  current(): readonly EffectiveRoot[] {
    return this.roots;
  }

  /** True once a client announced roots that are in effect. */
  get fromClient(): boolean {
    return this.clientAnnounced;
  }

  /** The client-roots mode (for list_allowed_directories). */
  get clientRootsMode(): string {
    return this.mode;
  }

  /** Waits for a pending client roots request, at most CLIENT_ROOTS_WAIT_MS. */
  async ready(): Promise<void> {
    if (!this.pending) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.pending,
      new Promise<void>((resolve) => { timer = setTimeout(resolve, CLIENT_ROOTS_WAIT_MS); }),
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
    this.pending = p.finally(() => { if (this.pending === p) this.pending = null; });
  }

  /**
   * Applies a client's announced root URIs (SPEC §4.1). Non-file URIs and roots that do not exist are dropped.
   * An empty announcement narrows to nothing (ROOTS_EMPTY), never back to the old set.
   */
  async applyClientRoots(uris: readonly string[]): Promise<void> {
    if (this.mode === 'ignore') return;
    const client: EffectiveRoot[] = [];
    for (const uri of uris) {
      let given: string;
      try {
        given = fileURLToPath(uri);
      } catch {
        continue;
      }
      try {
        client.push({ given, real: await realpath(given), source: 'client' });
      } catch {
        // A root that does not exist cannot contain anything.
      }
    }
    this.clientAnnounced = true;
    if (this.mode === 'replace' || !this.fromCommandLine) {
      this.roots = dedupe(client);
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
  }
}

function dedupe(roots: EffectiveRoot[]): EffectiveRoot[] {
  const seen = new Set<string>();
  return roots.filter((r) => (seen.has(r.real) ? false : (seen.add(r.real), true)));
}

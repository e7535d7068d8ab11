/**
 * list_allowed_directories (docs/tools.md): the roots in force with their source, the flags in force, the mutation budget,
 * the version, and journal transactions recovered at start-up.
 */
import { z } from 'zod';
import {
  describeRejection,
  ROOT_REJECTIONS,
  ROOTS_RULES,
  type RootRejection,
  type RootsRule,
} from '../policy/roots.js';
import { defineTool } from './define-tool.js';
import { describeWall } from '../fs/kernel-wall.js';
import { describeNativeReads } from '../fs/native-load.js';

const Rejection = z.enum(ROOT_REJECTIONS as [RootRejection, ...RootRejection[]]);

export const ListAllowedDirectoriesInput = z.strictObject({});

const RootEntry = z.object({
  path: z.string().describe('Resolved real path'),
  given: z.string().describe('The spelling it was given with (both work)'),
  source: z.enum(['cli', 'cwd', 'client']),
});

export const ListAllowedDirectoriesOutput = z.object({
  roots: z.array(RootEntry).describe('The effective roots: what paths may use now'),
  rule: z
    .enum(ROOTS_RULES as [RootsRule, ...RootsRule[]])
    .describe('Which docs/security.md "Roots" rule produced the effective roots'),
  command_line_roots: z.array(RootEntry).describe('The command-line roots (or the working-directory default)'),
  client_roots: z
    .array(z.object({ path: z.string(), usable: z.boolean(), reason: Rejection.optional() }))
    .optional()
    .describe('What the client last announced; absent when it announced nothing'),
  rejected_roots: z
    .array(z.object({ root: z.string(), source: z.enum(['cli', 'client']), reason: Rejection }))
    .optional()
    .describe('Roots given but left out, and why; absent when none'),
  flags: z.object({
    readonly: z.boolean(),
    allow_secrets: z.boolean(),
    auto_occ: z.enum(['off', 'warn', 'block']),
    client_roots: z.enum(['narrow', 'replace', 'ignore']),
    tools: z.array(z.string()).optional().describe('--tools filter; absent: all'),
    policy_file: z.string().optional(),
    policy_rules: z.number().int(),
    git_remote_allow: z.array(z.string()),
    max_read_bytes: z.number().int(),
  }),
  budget: z.object({ used: z.number().int(), limit: z.number().int().describe('0 means unlimited') }),
  version: z.string(),
  kernel_wall: z
    .object({
      enforced: z.boolean(),
      abi: z.number().int().optional(),
      reason: z.string().optional().describe('Why it is off'),
    })
    .describe('Landlock confining the server and its children to the roots'),
  native_reads: z
    .object({ in_use: z.boolean(), reason: z.string().optional().describe('Why not') })
    .describe("Whether content search reads through the native addon (else Node's own calls)"),
  recovered_transactions: z
    .array(
      z.object({
        id: z.string(),
        created_at: z.string(),
        pid: z.number().int(),
        outcome: z.enum(['ROLLBACK_COMPLETE', 'ROLLBACK_PARTIAL', 'ROLLBACK_FAILED', 'NOT_APPLIED']),
        reason: z.enum(['readonly', 'refused', 'invalid']).optional(),
        problem: z.string().optional(),
        entry_file: z.string().optional(),
        files: z.array(z.object({ path: z.string(), status: z.string(), reason: z.string().optional() })),
      }),
    )
    .describe(
      'Journal entries found at start-up: rolled back (ROLLBACK_*), or NOT_APPLIED and left on disk (reason ' +
        "readonly, refused — each file's refusal in files[].reason — or invalid)",
    ),
});

export const listAllowedDirectories = defineTool({
  name: 'list_allowed_directories',
  title: 'List allowed directories',
  description:
    'Roots paths may use now (relative ones resolve against the first), where they came from, ' +
    'flags, budget, version. Call it first, or after NOT_ALLOWED or ROOTS_EMPTY. Never fails.',
  group: 'fs-read',
  input: ListAllowedDirectoriesInput,
  output: ListAllowedDirectoriesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  run(_args, ctx) {
    return Promise.resolve().then(() => {
      const c = ctx.config;
      const wall = ctx.process.kernelWall;
      const native = ctx.process.nativeReads;
      const rejected = ctx.roots.rejected.map((r) => ({ root: r.given, source: r.source, reason: r.reason }));
      const entry = (r: { real: string; given: string; source: 'cli' | 'cwd' | 'client' }) => ({
        path: r.real,
        given: r.given,
        source: r.source,
      });
      const roots = ctx.policy.roots.map(entry);
      const client = ctx.roots.client;
      const structured = {
        roots,
        rule: ctx.roots.rule,
        command_line_roots: ctx.roots.commandLine.map(entry),
        ...(client ? { client_roots: client.announced } : {}),
        ...(rejected.length > 0 ? { rejected_roots: rejected } : {}),
        flags: {
          readonly: c.readonly,
          allow_secrets: c.allowSecrets,
          auto_occ: c.autoOcc,
          client_roots: c.clientRoots,
          ...(c.tools ? { tools: [...c.tools] } : {}),
          ...(c.policyFile !== null ? { policy_file: c.policyFile } : {}),
          policy_rules: c.policy.rules.length,
          // Empty flag: the operator-configured hosts (src/vcs/host-allow.ts), shown as the entry that means them.
          git_remote_allow: c.gitRemoteAllow.length > 0 ? c.gitRemoteAllow : ['default'],
          max_read_bytes: c.limits.maxReadBytes,
        },
        budget: { used: ctx.budget.used, limit: ctx.budget.limit },
        version: ctx.process.version,
        kernel_wall: wall.enforced ? { enforced: true, abi: wall.abi } : { enforced: false, reason: wall.reason },
        native_reads: native.inUse ? { in_use: true } : { in_use: false, reason: native.reason },
        recovered_transactions: [...ctx.process.recoveredTransactions] as z.output<
          typeof ListAllowedDirectoriesOutput
        >['recovered_transactions'],
      };
      const line = (r: { path: string; given: string; source: string }) =>
        `  ${r.path}${r.given !== r.path ? ` (given as ${r.given})` : ''} [${r.source}]`;
      const text = [
        roots.length
          ? 'Allowed directories:'
          : `No allowed directories (ROOTS_EMPTY). ${ctx.roots.emptyError().suggestion}`,
        ...roots.map(line),
        `Rule: ${structured.rule}. ${ctx.roots.explain()}`,
        `Command-line roots: ${structured.command_line_roots.length ? '' : 'none'}`,
        ...structured.command_line_roots.map(line),
        `Client roots: ${client ? (client.announced.length ? '' : 'announced an empty list') : 'none announced'}`,
        ...(client?.announced ?? []).map(
          (a) =>
            `  ${a.path}${a.usable ? '' : ` (rejected: ${a.reason ? describeRejection(a.reason) : 'not usable'})`}`,
        ),
        ...ctx.roots.rejected
          .filter((r) => r.source === 'cli')
          .map((r) => `Command-line root left out: ${r.given} ${describeRejection(r.reason)}`),
        `readonly: ${c.readonly}; allow_secrets: ${c.allowSecrets}; auto_occ: ${c.autoOcc}; budget: ${ctx.budget.used}/` +
          `${ctx.budget.limit || 'unlimited'}; fs-tools ${ctx.process.version}`,
        describeWall(wall),
        describeNativeReads(native),
      ].join('\n');
      return { structured, text };
    });
  },
});

/**
 * list_allowed_directories (SPEC §6): the roots in force with their source, the flags in force, the mutation budget,
 * the version, and journal transactions recovered at start-up.
 */
import { z } from 'zod';
import { defineTool } from './define-tool.js';

export const ListAllowedDirectoriesInput = z.strictObject({});

export const ListAllowedDirectoriesOutput = z.object({
  roots: z.array(z.object({
    path: z.string().describe('Resolved real path of the root'),
    given: z.string().describe('The spelling the root was given with (both work)'),
    source: z.enum(['cli', 'cwd', 'client']),
  })),
  flags: z.object({
    readonly: z.boolean(),
    allow_secrets: z.boolean(),
    auto_occ: z.enum(['off', 'warn', 'block']),
    client_roots: z.enum(['narrow', 'replace', 'ignore']),
    tools: z.array(z.string()).nullable().describe('--tools filter, or null for all'),
    policy_file: z.string().nullable(),
    policy_rules: z.number().int(),
    git_remote_allow: z.array(z.string()),
    max_read_bytes: z.number().int(),
  }),
  budget: z.object({ used: z.number().int(), limit: z.number().int().describe('0 means unlimited') }),
  version: z.string(),
  recovered_transactions: z.array(z.unknown()).describe('Journal entries found at start-up: rolled back (ROLLBACK_*), '
    + 'or NOT_APPLIED and left on disk (reason readonly, refused — each file\'s refusal in files[].reason — or invalid)'),
});

export const listAllowedDirectories = defineTool({
  name: 'list_allowed_directories',
  title: 'List allowed directories',
  description: 'The sandbox roots this server may touch (relative paths resolve against the first), with the flags in '
    + 'force (readonly, allow_secrets, auto_occ, tools, policy), the mutation budget used and its limit, the version, '
    + 'and transactions recovered from the journal at start-up. Call it first, or after NOT_ALLOWED / ROOTS_EMPTY.',
  group: 'fs-read',
  input: ListAllowedDirectoriesInput,
  output: ListAllowedDirectoriesOutput,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mutating: false,
  async run(_args, ctx) {
    const c = ctx.config;
    const roots = ctx.policy.roots.map((r) => ({ path: r.real, given: r.given, source: r.source }));
    const structured = {
      roots,
      flags: {
        readonly: c.readonly,
        allow_secrets: c.allowSecrets,
        auto_occ: c.autoOcc,
        client_roots: c.clientRoots,
        tools: c.tools ? [...c.tools] : null,
        policy_file: c.policyFile,
        policy_rules: c.policy.rules.length,
        git_remote_allow: c.gitRemoteAllow,
        max_read_bytes: c.limits.maxReadBytes,
      },
      budget: { used: ctx.budget.used, limit: ctx.budget.limit },
      version: ctx.process.version,
      recovered_transactions: [...ctx.process.recoveredTransactions],
    };
    const text = [
      roots.length ? 'Allowed directories:' : 'No allowed directories (ROOTS_EMPTY): start fs-tools with a ROOT.',
      ...roots.map((r) => `${r.path}${r.given !== r.path ? ` (given as ${r.given})` : ''} [${r.source}]`),
      `readonly: ${c.readonly}; allow_secrets: ${c.allowSecrets}; auto_occ: ${c.autoOcc}; budget: ${ctx.budget.used}/`
        + `${ctx.budget.limit || 'unlimited'}; fs-tools ${ctx.process.version}`,
    ].join('\n');
    return { structured, text };
  },
});

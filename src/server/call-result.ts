/**
 * The MCP result of one call's outcome (docs/tools.md), shared by the server's tools/call handler
 * (src/server/create-server.ts) and `fs-tools call --format text` (src/cli/call.ts). Free of the MCP SDK's values, so
 * the one-shot commands start without evaluating it.
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { CallOutcome } from './call-tool.js';

/**
 * The MCP `tools/call` result of one outcome: a success is its text blocks (what a model reads), then its media block,
 * with the structured result as `structuredContent`; an envelope is one text block holding its JSON, `isError: true`.
 * `fs-tools call --format text` prints the text blocks of this same result (docs/cli.md).
 */
export function callToolResultOf(outcome: CallOutcome): CallToolResult {
  if (!outcome.ok) return { content: [{ type: 'text', text: JSON.stringify(outcome.envelope) }], isError: true };
  // Pushed, not spread: one array per answer (every read builds one).
  const content: CallToolResult['content'] = [];
  for (const text of outcome.text) content.push({ type: 'text', text });
  if (outcome.media) content.push(outcome.media);
  return { content, structuredContent: outcome.structured };
}

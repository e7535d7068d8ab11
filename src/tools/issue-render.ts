/**
 * The text rendering of issue results (docs/issue-tools.md): one line per issue, an issue with its comments, a
 * comment. Results put this text between the untrusted-content markers (src/tools/issue-untrusted.ts); structured
 * results keep the exact text.
 */
import type { Issue, IssueComment } from '../vcs/issues.js';
import { escapeLine } from './text-safe.js';

/** One line per issue (list and write results). */
export function issueLine(i: Issue): string {
  const parts = [
    `#${i.number} [${i.state}${i.state_reason && i.state === 'closed' ? `: ${escapeLine(i.state_reason)}` : ''}] ${escapeLine(i.title)}`,
  ];
  if (i.labels.length) parts.push(`labels: ${escapeLine(i.labels.join(', '))}`);
  if (i.assignees.length) parts.push(`assignees: ${escapeLine(i.assignees.join(', '))}`);
  if (i.author) parts.push(`by ${escapeLine(i.author)}`);
  if (i.updated_at) parts.push(`updated ${i.updated_at}`);
  if (i.comments_count) parts.push(`${i.comments_count} comment${i.comments_count === 1 ? '' : 's'}`);
  if (i.url) parts.push(escapeLine(i.url));
  return parts.join(' — ');
}

/** An issue with its body and a page of comments (view). */
export function issueBlock(i: Issue, comments: readonly IssueComment[]): string {
  const meta = [
    `author: ${i.author ?? 'unknown'}`,
    `labels: ${i.labels.length ? i.labels.join(', ') : 'none'}`,
    `assignees: ${i.assignees.length ? i.assignees.join(', ') : 'none'}`,
    `created ${i.created_at ?? '?'}`,
    `updated ${i.updated_at ?? '?'}`,
    ...(i.closed_at ? [`closed ${i.closed_at}${i.state_reason ? ` (${i.state_reason})` : ''}`] : []),
  ];
  const lines = [
    `#${i.number} [${i.state}] ${escapeLine(i.title)}`,
    escapeLine(meta.join(' · ')),
    ...(i.url ? [escapeLine(i.url)] : []),
    '',
    i.body ? i.body : '(no description)',
  ];
  for (const c of comments) lines.push('', commentBlock(c));
  return lines.join('\n');
}

/** A comment with its header line. */
export function commentBlock(c: IssueComment): string {
  return (
    escapeLine(
      `--- comment ${c.id} by ${c.author ?? 'unknown'} at ${c.created_at ?? '?'}${c.url ? ` (${c.url})` : ''}`,
    ) + `\n${c.body}`
  );
}

/** One GitLab REST v4 request, as both transports (src/vcs/gitlab-glab.ts, src/vcs/gitlab-https.ts) take it. */
import type { CallKind } from './forge-errors.js';

/** Request description shared by both transports. */
export interface GlRequest {
  method: 'GET' | 'POST' | 'PUT';
  /** Path below /api/v4/, query included. */
  apiPath: string;
  body?: unknown;
  kind: CallKind;
  subject: string;
}

/** One GitLab REST v4 request, as both transports (src/vcs/gitlab-glab.ts, src/vcs/gitlab-https.ts) take it. */
import type { ForgeRequest } from './forge-response.js';

/** Request description shared by both transports (`apiPath` below /api/v4/). */
export type GlRequest = ForgeRequest<'GET' | 'POST' | 'PUT'>;

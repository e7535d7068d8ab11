/**
 * The HTTPS transport of the GitLab backend (docs/issue-tools.md), used when glab is not installed: fetch with a token from
 * GITLAB_TOKEN or GITLAB_PRIVATE_TOKEN (`PRIVATE-TOKEN` header) or CI_JOB_TOKEN (`JOB-TOKEN` header), only for its
 * own instance (src/vcs/gitlab-token.ts). Redirects are not followed (a redirect would carry PRIVATE-TOKEN to another
 * origin): GL_FAILED with the status and only the redirect's host. The response body is read under the output cap
 * (GH_OUTPUT_LIMIT), the whole request under the timeout; a write without a token is refused before anything is sent.
 */
import { ToolError } from '../errors/tool-error.js';
import { bodyMessage, forgeError } from './forge-errors.js';
import { parseJsonBody, type ForgeResponse } from './forge-response.js';
import { classifyGitLab, transportCodeOf, transportMessageOf, type GlObservation } from './gitlab-classify.js';
import type { GitLabInstance } from './gitlab-instance.js';
import type { GlRequest } from './gitlab-request.js';
import { gitlabToken } from './gitlab-token.js';
import { hostArg, type ForgeCallOptions } from './issues.js';

/**
 * One request over HTTPS (or loopback http) with fetch: the instance's own token only, redirects not followed, the
 * body read under the output cap, the whole request under the timeout.
 * @throws ToolError GL_AUTH_REQUIRED for a write without a token (nothing sent), else the classified failure
 *   (src/vcs/gitlab-classify.ts) with the retry semantics of `req.kind`
 */
export async function viaHttps(
  instance: GitLabInstance,
  req: GlRequest,
  opts: ForgeCallOptions,
): Promise<ForgeResponse> {
  const { token, withheld } = gitlabToken(instance);
  const host = hostArg({ ...instance, repo: '' });
  const ctx = { host, timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, nowMs: Date.now() };
  // A write (or its checks) without a token would only be refused by the server: say so before sending.
  if (req.kind !== 'read' && !token) throw tokenlessWrite(instance, host, withheld, req);
  const url = `${instance.scheme}://${host}${instance.basePath}/api/v4/${req.apiPath}`;
  const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'fs-tools' };
  if (token) headers[token.header] = token.value;
  if (req.body !== undefined) headers['Content-Type'] = 'application/json';
  const failed = (o: Omit<GlObservation, 'tokenSent' | 'tokenWithheld'>): ToolError =>
    forgeError(
      req.kind,
      classifyGitLab({ ...o, tokenSent: token !== null, tokenWithheld: withheld }, ctx),
      req.subject,
    );
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, opts.timeoutMs);
  const onAbort = (): void => controller.abort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  let status: number | null = null;
  const responseHeaders: Record<string, string> = {};
  try {
    const response = await fetch(url, {
      method: req.method,
      headers,
      redirect: 'manual',
      signal: controller.signal,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
    });
    status = response.status;
    response.headers.forEach((value, name) => {
      responseHeaders[name.toLowerCase()] = value;
    });
    const { text, limited } = await readCapped(response, opts.maxOutputBytes, controller);
    if (!limited && status >= 200 && status < 300) {
      const data = parseJsonBody(text, status, {
        forge: 'GitLab',
        host: instance.host,
        kind: req.kind,
        subject: req.subject,
      });
      return { status, headers: responseHeaders, data };
    }
    const answer = { status, headers: responseHeaders, bodyMessage: limited ? null : bodyMessage(text) };
    throw failed({ ...answer, timedOut: false, outputLimited: limited, transportCode: null, transportMessage: null });
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw failed({
      status,
      headers: responseHeaders,
      bodyMessage: null,
      timedOut,
      outputLimited: false,
      transportCode: timedOut ? null : opts.signal.aborted ? 'ECANCELED' : transportCodeOf(error),
      transportMessage: transportMessageOf(error),
    });
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', onAbort);
  }
}

/** GL_AUTH_REQUIRED for a write (or its checks) without a token for `host`: nothing was sent. */
function tokenlessWrite(instance: GitLabInstance, host: string, withheld: boolean, req: GlRequest): ToolError {
  return forgeError(
    req.kind,
    {
      code: 'GL_AUTH_REQUIRED',
      failure: 'environment',
      message: `No GitLab token for ${host}, and writes need one; nothing was sent.${withheld ? ` GITLAB_TOKEN belongs to the GITLAB_HOST instance (gitlab.com when unset), not ${host}.` : ''}`,
      details: { token_sent: false, write_sent: false, ...(withheld ? { token_withheld: true } : {}) },
      suggestion: withheld
        ? `Set GITLAB_HOST to ${instance.scheme}://${host} if GITLAB_TOKEN belongs to it.`
        : 'Set GITLAB_TOKEN (a personal access token with the api scope).',
    },
    req.subject,
  );
}

/** Reads a response body as UTF-8, stopping (and aborting) once it exceeds `max` bytes. */
async function readCapped(
  response: Response,
  max: number,
  controller: AbortController,
): Promise<{ text: string; limited: boolean }> {
  if (!response.body) return { text: '', limited: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      controller.abort();
      await reader.cancel().catch(() => {});
      return { text: '', limited: true };
    }
    chunks.push(value);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), limited: false };
}

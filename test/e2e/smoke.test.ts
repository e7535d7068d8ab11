/**
 * Smoke: both protocol eras reach the real server process, list tools and read a file. The modern-era client starts
 * the way the SDK's own stdio transport does for a real client (`probe: 'sibling'`, test/helpers/server.ts): its
 * `server/discover` probe goes to a disposable sibling server, which it reaps, before the session's server starts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, ERAS, type TestClient } from '../helpers/server.js';
import { makeTree } from '../helpers/tree.js';

describe.each(ERAS)('smoke (%s era)', (era) => {
  const tree = makeTree({ 'a.txt': 'hello\n' });
  let client: TestClient;
  beforeAll(async () => {
    // The real client's start-up, sibling probe included: the one path no other e2e file takes.
    client = await connect(era, { args: [tree.dir], probe: 'sibling' });
  });
  afterAll(async () => {
    await client.close();
    tree.cleanup();
  });

  it('lists tools and reads a file', async () => {
    const tools = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('read_file');
    const r = await client.call('read_file', { path: 'a.txt' });
    expect(r.isError).toBeFalsy();
    expect(r.content[0].text).toBe('hello\n');
    expect(r.structuredContent?.content_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

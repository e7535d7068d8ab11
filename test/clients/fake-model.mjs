/**
 * A stand-in for the model behind a coding client, on 127.0.0.1 (issue #15 client compatibility suite). It speaks
 * the three wire formats the clients use — Anthropic Messages (Claude Code), OpenAI Responses (Codex), Gemini
 * generateContent (Gemini CLI) — and plays a fixed SCRIPT of tool calls: each request that declares the MCP tools
 * gets the next call of the script (counted by the tool results already in the conversation), and the text the
 * client hands its model for each result is recorded, together with the tool declarations it sent.
 *
 * Requests that declare none of the script's tools (title generation, routing, next-speaker checks …) get a short
 * plain answer so the client carries on.
 */
import http from 'node:http';

/** Finds the declared name for a server tool (clients prefix: mcp__fs__x, mcp_fs_x, fs__x …). */
export function declaredName(names, tool) {
  // Only the MCP server's tools (a client's built-in read_file must not be picked): every client prefixes them.
  const hits = names.filter((n) => /mcp/i.test(n) && (n.endsWith(`_${tool}`) || n.endsWith(`.${tool}`)));
  hits.sort((a, b) => a.length - b.length);
  return hits[0];
}

/** Every string leaf of a JSON value, joined: "the text the model sees" for a structured tool-result payload. */
export function textOf(value) {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('');
  if (value && typeof value === 'object') return Object.values(value).map(textOf).join('');
  return '';
}

/**
 * Starts the fake. `script` is [{tool, args}], args already with this server's spellings.
 * @returns {{url, port, close, results, declarations, requests, log}}
 */
export async function startFakeModel(script, { finalText = 'Done.' } = {}) {
  const state = { results: [], declarations: null, requests: 0, log: [], calls: [] };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      state.requests++;
      state.bodies = state.bodies ?? [];
      let body;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      } catch {
        body = {};
      }
      state.bodies.push(body);
      state.log.push(
        `${req.method} ${req.url} model=${body.model} tools=${JSON.stringify((body.tools ?? []).flatMap((t) => t.name ?? t.function?.name ?? (t.functionDeclarations ?? []).map((d) => d.name)))}`,
      );
      try {
        route(req, res, body);
      } catch (error) {
        state.log.push(`error ${error.message}`);
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(error.message) } }));
      }
    });
  });

  /** Decides the next move from the tool names declared and the tool results seen so far. */
  function next(toolNames, resultsSoFar, recordResult) {
    const names = toolNames.filter(Boolean);
    const mine = names.length && declaredName(names, script[0].tool);
    if (!mine) return { kind: 'text', text: 'ok' };
    if (!state.declarations) state.declarations = 'pending';
    if (resultsSoFar > 0 && recordResult) {
      const step = resultsSoFar - 1;
      if (!state.results[step]) state.results[step] = recordResult();
    }
    if (resultsSoFar >= script.length) return { kind: 'text', text: finalText };
    const s = script[resultsSoFar];
    const name = declaredName(names, s.tool);
    if (!name) throw new Error(`tool ${s.tool} not declared (declared: ${names.join(', ')})`);
    state.calls[resultsSoFar] = { tool: s.tool, name, args: s.args };
    return { kind: 'call', name, args: s.args, id: `call_${resultsSoFar + 1}` };
  }

  function route(req, res, body) {
    const url = req.url ?? '';
    if (url.includes('count_tokens') || url.includes(':countTokens')) {
      return json(res, url.includes(':countTokens') ? { totalTokens: 10 } : { input_tokens: 10 });
    }
    if (url.startsWith('/v1/messages')) return anthropic(res, body);
    if (url.includes('/responses')) return openai(res, body);
    if (url.includes(':generateContent') || url.includes(':streamGenerateContent')) return gemini(req, res, body);
    if (url.includes('/models')) return json(res, { data: [], models: [] });
    json(res, {});
  }

  // ---- Anthropic Messages (SSE when stream: true) ----
  function anthropic(res, body) {
    const tools = body.tools ?? [];
    const messages = body.messages ?? [];
    const results = [];
    for (const m of messages) {
      if (m.role !== 'user' || !Array.isArray(m.content)) continue;
      for (const b of m.content) if (b.type === 'tool_result') results.push(b);
    }
    const move = next(
      tools.map((t) => t.name),
      results.length,
      () => {
        const last = results[results.length - 1];
        const c = last.content;
        const text =
          typeof c === 'string'
            ? c
            : Array.isArray(c)
              ? c
                  .filter((b) => b.type === 'text')
                  .map((b) => b.text)
                  .join('\n')
              : '';
        return { text, is_error: last.is_error === true, raw: last };
      },
    );
    if (move.kind === 'call' && state.declarations === 'pending') {
      state.declarations = tools.filter((t) => /^mcp/.test(t.name));
    }
    const id = `msg_${state.requests}`;
    const usage = { input_tokens: 10, output_tokens: 5 };
    const content =
      move.kind === 'call'
        ? [{ type: 'tool_use', id: `toolu_${move.id}`, name: move.name, input: move.args }]
        : [{ type: 'text', text: move.text }];
    const stop = move.kind === 'call' ? 'tool_use' : 'end_turn';
    if (!body.stream)
      return json(res, {
        id,
        type: 'message',
        role: 'assistant',
        model: body.model,
        content,
        stop_reason: stop,
        stop_sequence: null,
        usage,
      });
    sse(res, (send) => {
      send('message_start', {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage,
        },
      });
      content.forEach((block, index) => {
        if (block.type === 'text') {
          send('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'text', text: '' },
          });
          send('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'text_delta', text: block.text },
          });
        } else {
          send('content_block_start', {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
          });
          send('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
          });
        }
        send('content_block_stop', { type: 'content_block_stop', index });
      });
      send('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: 5 },
      });
      send('message_stop', { type: 'message_stop' });
    });
  }

  // ---- OpenAI Responses (SSE) ----
  function openai(res, body) {
    // Codex groups an MCP server's tools in a `namespace` tool ({type: "namespace", name: "mcp__fs", tools: […]}).
    const flat = (body.tools ?? []).flatMap((t) =>
      t.type === 'namespace'
        ? (t.tools ?? []).map((f) => ({ ...f, name: `${t.name}__${f.name}`, namespace: t.name, bare: f.name }))
        : [t],
    );
    const tools = flat.map((t) => t.name ?? t.function?.name);
    const input = Array.isArray(body.input) ? body.input : [];
    const outputs = input.filter((i) => i.type === 'function_call_output');
    const move = next(tools, outputs.length, () => {
      const last = outputs[outputs.length - 1];
      const o = last.output;
      const text = typeof o === 'string' ? o : Array.isArray(o) ? o.map((i) => i.text ?? '').join('') : textOf(o);
      return { text, is_error: false, raw: last };
    });
    if (move.kind === 'call' && state.declarations === 'pending') {
      state.declarations = flat
        .filter((t) => t.namespace && /^mcp/.test(t.namespace))
        .map(({ namespace: _n, bare, ...t }) => ({ ...t, name: bare }));
      state.namespaces = flat.filter((t) => t.namespace);
    }
    const rid = `resp_${state.requests}`;
    const item =
      move.kind === 'call'
        ? {
            type: 'function_call',
            id: `fc_${move.id}`,
            call_id: move.id,
            ...nsName(flat, move.name),
            arguments: JSON.stringify(move.args),
            status: 'completed',
          }
        : {
            type: 'message',
            id: `msg_${state.requests}`,
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: move.text, annotations: [] }],
          };
    const response = {
      id: rid,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: body.model,
      output: [item],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 5,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 15,
      },
    };
    sse(res, (send) => {
      send('response.created', {
        type: 'response.created',
        response: { ...response, status: 'in_progress', output: [] },
      });
      send('response.output_item.added', { type: 'response.output_item.added', output_index: 0, item });
      send('response.output_item.done', { type: 'response.output_item.done', output_index: 0, item });
      send('response.completed', { type: 'response.completed', response });
    });
  }

  /** A namespaced function is called by its bare name with its namespace. */
  function nsName(flat, name) {
    const t = flat.find((f) => f.name === name);
    return t?.namespace ? { name: t.bare, namespace: t.namespace } : { name };
  }

  // ---- Gemini generateContent / streamGenerateContent?alt=sse ----
  function gemini(req, res, body) {
    const decls = (body.tools ?? []).flatMap((t) => t.functionDeclarations ?? []);
    const contents = body.contents ?? [];
    const responses = [];
    for (const c of contents) for (const p of c.parts ?? []) if (p.functionResponse) responses.push(p);
    // Gemini sends a tool's text as extra parts after the functionResponse part in the same user turn; collect them.
    const move = next(
      decls.map((d) => d.name),
      responses.length,
      () => {
        const lastTurn = [...contents].reverse().find((c) => (c.parts ?? []).some((p) => p.functionResponse));
        const parts = lastTurn.parts;
        const text = parts
          .map((p) => (p.functionResponse ? textOf(p.functionResponse.response) : (p.text ?? '')))
          .join('\n');
        return { text, is_error: false, raw: parts };
      },
    );
    if (move.kind === 'call' && state.declarations === 'pending') {
      state.declarations = decls.filter((d) => /^mcp/.test(d.name));
    }
    const parts =
      move.kind === 'call' ? [{ functionCall: { name: move.name, args: move.args } }] : [{ text: move.text }];
    const payload = {
      candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
      modelVersion: 'fake',
    };
    if ((req.url ?? '').includes('alt=sse')) return sse(res, (send) => send(null, payload));
    json(res, payload);
  }

  function json(res, value) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  }
  function sse(res, write) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    write((event, data) => res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`));
    res.end();
  }

  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    state,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

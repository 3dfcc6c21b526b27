import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * A `node:http` request listener that answers through a Fetch-style handler (`Request` →
 * `Response`, as {@link threadChatHandler} and {@link agentRunResponse} are): the request's
 * method, headers and body go in, the response's status, headers and streamed body come out, and
 * the client going away aborts the request's `signal` (which stops an agent stream). For servers
 * without a Fetch adapter of their own (Next.js, Hono, Bun and Deno have one).
 *
 * @example
 * createServer(nodeListener(threadChatHandler(agents, support))).listen(3000, '127.0.0.1');
 */
export function nodeListener(
  handler: (request: Request) => Promise<Response> | Response,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void answer(handler, req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(error instanceof Error ? error.message : String(error));
    });
  };
}

async function answer(
  handler: (request: Request) => Promise<Response> | Response,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const one of value) headers.append(name, one);
  }
  const method = req.method ?? 'GET';
  let body: Buffer | undefined;
  if (method !== 'GET' && method !== 'HEAD') {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    body = Buffer.concat(chunks);
  }
  const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, {
    method,
    headers,
    signal: abort.signal,
    ...(body === undefined ? {} : { body }),
  });
  const response = await handler(request);
  res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), {
    once: true,
  });
  for (;;) {
    const next = await reader.read().catch(() => ({ done: true as const, value: undefined }));
    if (next.done === true || next.value === undefined) break;
    res.write(next.value);
  }
  res.end();
}

// The web server of the useChat browser test: the page and its bundle, and `/api/chat…` forwarded
// as it streams to a `loom chat` process, so the page calls its own origin (useChat's default
// `/api/chat`, no CORS) and the chat endpoint stays the user's zero-code `loom chat`: what a
// deployment's reverse proxy or a dev server's proxy does in front of it.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the server forwarded: method, path and the chat endpoint's status. */
export interface Forwarded {
  method: string;
  path: string;
  status: number;
}

/** Headers of one hop, not forwarded. */
const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade']);

export interface SameOriginServer {
  /** The page's URL. */
  url: string;
  /** The `/api/chat…` requests forwarded so far, in the order their answers began. */
  forwarded: Forwarded[];
  close(): Promise<void>;
}

/** Serves `html` at `/`, `script` at `/chat.js`, and forwards `/api/chat…` to `chatUrl`'s host. */
export async function startSameOriginServer(
  chatUrl: string,
  html: string,
  script: string,
): Promise<SameOriginServer> {
  const chat = new URL(chatUrl);
  const forwarded: Forwarded[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    if (path === '/api/chat' || path.startsWith('/api/chat/')) {
      const headers = { ...req.headers, host: chat.host };
      const upstream = request(
        { host: chat.hostname, port: chat.port, path, method: req.method, headers },
        (answer) => {
          const status = answer.statusCode ?? 502;
          forwarded.push({ method: req.method ?? '', path, status });
          const kept = Object.entries(answer.headers).filter(([name]) => !hopByHop.has(name));
          res.writeHead(status, Object.fromEntries(kept));
          res.flushHeaders();
          answer.pipe(res);
        },
      );
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      // The page went away (a reload): the chat endpoint's response is dropped too.
      res.on('close', () => upstream.destroy());
      req.pipe(upstream);
      return;
    }
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(html);
      return;
    }
    if (req.method === 'GET' && path === '/chat.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      res.end(script);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end(`no ${path} here`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    forwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

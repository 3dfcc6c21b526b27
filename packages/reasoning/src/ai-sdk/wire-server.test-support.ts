import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { expect } from 'vitest';
import type { ModelDelta } from '../model-provider.js';

/** One scripted answer of the wire server. */
export type WireReply =
  | {
      kind: 'json';
      status?: number;
      headers?: Record<string, string>;
      body: unknown;
      /** Waits this long (real time) before answering. */
      delayMs?: number;
    }
  | { kind: 'raw'; status?: number; headers?: Record<string, string>; body: string }
  | {
      kind: 'sse';
      events: readonly string[];
      /** Destroys the socket after this many events (a connection lost mid-stream). */
      cutAfter?: number;
      /** Sends nothing more after this many events, until the client goes away (a stall). */
      stallAfter?: number;
      /** Waits this long (real time) between events. */
      gapMs?: number;
    }
  /** Sends nothing until the client goes away: a first byte slower than any timeout. */
  | { kind: 'hang' };

/** What the server received. */
export interface WireRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/**
 * A local HTTP server on 127.0.0.1 that answers each request with the next scripted reply, in
 * whichever wire format the reply spells out (the test writes OpenAI's or Anthropic's bytes).
 */
export class WireServer {
  readonly requests: WireRequest[] = [];
  /** TCP connections accepted: a warm connection that is reused counts once. */
  connections = 0;
  private readonly replies: WireReply[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  private constructor() {
    this.server = createServer((req, res) => void this.answer(req, res));
    this.server.on('connection', (socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(): Promise<WireServer> {
    const wire = new WireServer();
    await new Promise<void>((resolve) => wire.server.listen(0, '127.0.0.1', resolve));
    return wire;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  reply(...replies: WireReply[]): void {
    this.replies.push(...replies);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {}
    this.requests.push({
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body,
    });
    const reply = this.replies.shift();
    if (reply === undefined) {
      res.writeHead(599, { 'content-type': 'text/plain' }).end('no scripted reply left');
      return;
    }
    switch (reply.kind) {
      case 'json':
        if (reply.delayMs !== undefined) await pause(reply.delayMs);
        res
          .writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers })
          .end(JSON.stringify(reply.body));
        return;
      case 'raw':
        res
          .writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers })
          .end(reply.body);
        return;
      case 'hang':
        return; // the client's abort closes the socket
      case 'sse': {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        const events = reply.events;
        const upTo = reply.cutAfter ?? reply.stallAfter ?? events.length;
        for (const [i, event] of events.slice(0, upTo).entries()) {
          if (i > 0 && reply.gapMs !== undefined) await pause(reply.gapMs);
          if (res.destroyed) return;
          res.write(event);
        }
        if (reply.stallAfter !== undefined) return; // the client's abort closes the socket
        if (reply.cutAfter !== undefined) {
          // A connection lost mid-stream: the bytes so far arrive, then the socket dies.
          await new Promise<void>((resolve) => res.write('', () => resolve()));
          res.socket?.destroy();
          return;
        }
        res.end();
        return;
      }
    }
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One OpenAI SSE event. */
export function openAiEvent(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/** One Anthropic SSE event (named, as the Messages API sends them). */
export function anthropicEvent(data: { type: string; [key: string]: unknown }): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Every delta of a stream, in order. */
export async function collect(stream: AsyncIterable<ModelDelta>): Promise<ModelDelta[]> {
  const deltas: ModelDelta[] = [];
  for await (const delta of stream) deltas.push(delta);
  return deltas;
}

/** What `promise` rejects with; fails the test if it resolves. */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('the call should have failed'),
    (error: unknown) => error,
  );
}

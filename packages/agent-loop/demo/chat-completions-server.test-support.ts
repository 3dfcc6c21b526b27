// A local HTTP server on 127.0.0.1 that speaks OpenAI's chat-completions wire format (plain JSON
// and SSE streams) and plays the demo's support person (`nextMove`) from the conversation it is
// sent: the paid API `pnpm demo:openai` talks to, without the network or a key. Another script
// (`move`) plays another agent; `pieces` streams a text answer in parts, each awaited (a test
// gates them on what its client has seen).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { nextMove } from './support-agent.js';

/** A request the server received. */
export interface ChatRequest {
  path: string;
  authorization: string | undefined;
  body: { model?: string; stream?: boolean; messages?: unknown[]; tools?: unknown[] };
}

/**
 * The model's next move: a text answer, one tool call, or a refusal (an HTTP error with
 * OpenAI's error body, `{ error: { message, type } }`).
 */
export type ChatMove =
  | { text: string }
  | { tool: string; input: unknown }
  | { refuse: { status: number; message: string } };

/** How the server plays the model. */
export interface ChatScript {
  /**
   * The next move from the request's body (a promise: the model takes its time). Default: the
   * demo's support person.
   */
  move?: (body: ChatRequest['body']) => ChatMove | Promise<ChatMove>;
  /** A streamed text answer's parts, in order (they must join to the text). Default: one part. */
  pieces?: (text: string) => AsyncIterable<string>;
}

export class ChatCompletionsServer {
  readonly requests: ChatRequest[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  private constructor(private readonly script: ChatScript) {
    this.server = createServer((req, res) => void this.answer(req, res));
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(script: ChatScript = {}): Promise<ChatCompletionsServer> {
    const server = new ChatCompletionsServer(script);
    await new Promise<void>((resolve) => server.server.listen(0, '127.0.0.1', resolve));
    return server;
  }

  /** The base URL, up to `/v1`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: ChatRequest['body'] = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {}
    this.requests.push({ path: req.url ?? '', authorization: req.headers.authorization, body });
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      return;
    }
    const n = this.requests.length;
    const model = body.model ?? 'unknown';
    const move = (await this.script.move?.(body)) ?? nextMove(JSON.stringify(body.messages ?? []));
    if ('refuse' in move) {
      res.writeHead(move.refuse.status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: move.refuse.message, type: 'invalid_request_error', code: null },
        }),
      );
      return;
    }
    const toolCalls =
      'text' in move
        ? undefined
        : [
            {
              id: `call_${n}`,
              type: 'function',
              function: { name: move.tool, arguments: JSON.stringify(move.input) },
            },
          ];
    const finish = toolCalls === undefined ? 'stop' : 'tool_calls';
    const usage = { prompt_tokens: 200, completion_tokens: 20, total_tokens: 220 };
    const base = { id: `chatcmpl-${n}`, created: 1_700_000_000, model };
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: 'text' in move ? move.text : null,
                ...(toolCalls === undefined ? {} : { tool_calls: toolCalls }),
              },
              finish_reason: finish,
            },
          ],
          usage,
        }),
      );
      return;
    }
    const event = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
    const chunk = (delta: unknown, finishReason: string | null = null) =>
      event({
        ...base,
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if ('text' in move) {
      let first = true;
      for await (const piece of this.script.pieces?.(move.text) ?? [move.text]) {
        res.write(chunk(first ? { role: 'assistant', content: piece } : { content: piece }));
        first = false;
      }
    } else {
      res.write(
        chunk({
          role: 'assistant',
          tool_calls: toolCalls?.map((call, index) => ({ index, ...call })),
        }),
      );
    }
    res.write(chunk({}, finish));
    res.write(event({ ...base, object: 'chat.completion.chunk', choices: [], usage }));
    res.end('data: [DONE]\n\n');
  }
}

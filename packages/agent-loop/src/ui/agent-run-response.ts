import type { AgentEvent, AgentStream, StreamOptions } from '../agent-event.js';
import type { AgentRun } from '../agent-runtime.js';
import { parseCursor } from '../stream-cursor.js';
import { UiChunkWriter } from './ui-chunk-writer.js';
import type { UiMessageChunk } from './ui-message-chunk.js';

/** What {@link agentRunResponse} needs of an agent runtime: its streams. */
export interface RunStreams {
  stream(run: string | AgentRun, options?: StreamOptions): AgentStream;
}

/** Options of {@link agentRunResponse}. */
export interface AgentRunResponseOptions {
  /**
   * The HTTP request being answered: its `Last-Event-ID` header (an SSE reconnect) resumes after
   * that event, and its `signal` (the client went away) stops the stream.
   */
  request?: Request;
  /** Resume after this cursor (an event id this response sent); wins over `Last-Event-ID`. */
  after?: string;
  /** The assistant message's id in the `start` chunk. Default: the run id. */
  messageId?: string;
  /** More response headers (CORS, say). */
  headers?: Record<string, string>;
}

/** The header the AI SDK's client checks for the UI message stream protocol. */
export const uiMessageStreamHeader = 'x-vercel-ai-ui-message-stream';

const encoder = new TextEncoder();

/** One SSE event per chunk; the last chunk of an agent event carries the stream's cursor as its id. */
function sse(chunks: readonly UiMessageChunk[], id: string | undefined): string {
  let text = '';
  for (const [index, chunk] of chunks.entries()) {
    if (id !== undefined && index === chunks.length - 1) text += `id: ${id}\n`;
    text += `data: ${JSON.stringify(chunk)}\n\n`;
  }
  return text;
}

/**
 * An HTTP response that streams an agent run as the AI SDK's UI message stream (SSE, header
 * `x-vercel-ai-ui-message-stream: v1`), so `useChat` shows the run: `start`, then per turn
 * `start-step`, the model's text as it is written (`text-start` / `text-delta` / `text-end`,
 * from whichever process drives the run, ADR 0050), `tool-input-available`, a
 * `tool-approval-request` when the run waits for a person, `tool-output-available` or
 * `tool-output-error`, `finish-step`, and at the end the answer as a `data-loom-output` part
 * (the run's `output`: an `output` schema's typed answer, else the final text), `finish` (its
 * `messageMetadata`: run id, reason, turns, usage) and `[DONE]`. A run that ends without an answer (`model_failed`, a
 * limit, a rejection: any reason but `goal_completed`) gets an `error` chunk just before
 * `finish`, its `errorText` the reason and what went wrong (`model_failed: …`), which the AI
 * SDK's client makes the chat's error. The response stays open while the run waits. Every agent
 * event's last chunk has an SSE `id` (the stream's cursor): a client that reconnects with
 * `Last-Event-ID` gets what follows, nothing twice. Without one, the whole run so far is sent,
 * as one assistant message (the text of turns already answered as one delta each).
 *
 * Error codes: `INVALID_ARGUMENT` (a `Last-Event-ID` or `after` that is not a cursor); a stream
 * failure (`RUN_FAILED`, store errors) becomes an `error` chunk.
 *
 * @example
 * // app/api/runs/[id]/stream/route.ts (Next.js), or any Fetch-style handler (Hono, Bun, Deno)
 * export function GET(request: Request, { params }: { params: { id: string } }) {
 *   return agentRunResponse(agents, params.id, { request });
 * }
 */
export function agentRunResponse(
  agents: RunStreams,
  runId: string,
  options: AgentRunResponseOptions = {},
): Response {
  const after = options.after ?? options.request?.headers.get('last-event-id') ?? undefined;
  const resumed = after === undefined || after === '' ? undefined : parseCursor(after);
  const writer = new UiChunkWriter(resumed);
  const stream = agents.stream(runId, resumed === undefined ? {} : { after: after as string });
  const signal = options.request?.signal;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (resumed === undefined) {
        controller.enqueue(
          encoder.encode(sse(writer.start(options.messageId ?? runId), undefined)),
        );
      }
      signal?.addEventListener('abort', () => void stream.close(), { once: true });
    },
    // Enqueues at least once per pull: a pull that enqueues nothing is not called again.
    async pull(controller) {
      for (;;) {
        let next: IteratorResult<AgentEvent>;
        try {
          next = await stream.next();
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          controller.enqueue(
            encoder.encode(`${sse(writer.error(message), undefined)}data: [DONE]\n\n`),
          );
          controller.close();
          return;
        }
        if (next.done === true) {
          if (signal?.aborted !== true) controller.enqueue(encoder.encode('data: [DONE]\n\n'));
          controller.close();
          return;
        }
        const chunks = writer.event(next.value);
        if (chunks.length === 0) continue;
        controller.enqueue(encoder.encode(sse(chunks, stream.cursor)));
        return;
      }
    },
    async cancel() {
      await stream.close();
    },
  });
  const headers = new Headers(options.headers);
  headers.set('content-type', 'text/event-stream');
  headers.set('cache-control', 'no-cache');
  headers.set('connection', 'keep-alive');
  headers.set('x-accel-buffering', 'no');
  headers.set(uiMessageStreamHeader, 'v1');
  return new Response(body, { headers });
}

import type { AgentStream, StreamOptions } from '../agent-event.js';
import type { AgentRun } from '../agent-runtime.js';
import type { Agent } from '../define-agent.js';
import { AgentErrorCode, isLoomError } from '../errors.js';
import { parseCursor } from '../stream-cursor.js';
import type { AgentThread } from '../thread.js';
import { agentRunResponse } from './agent-run-response.js';

/** What {@link threadChatHandler} needs of an agent runtime: its threads and its streams. */
export interface ThreadChats {
  thread<O>(agent: Agent<O>, threadId: string): AgentThread<O>;
  stream(run: string | AgentRun, options?: StreamOptions): AgentStream;
}

/** Options of {@link threadChatHandler}. */
export interface ThreadChatHandlerOptions {
  /**
   * The chat (thread) id of a `GET` (a resume). Default: the path segment before a trailing
   * `/stream` (`/api/chat/<id>/stream`, where `useChat`'s `DefaultChatTransport` reconnects),
   * else the `id` query parameter.
   */
  chatIdOf?: (request: Request) => string | undefined;
  /** More response headers (CORS, say), on every response. */
  headers?: Record<string, string>;
}

/** Bytes of a POST body the handler reads at most: 1 MiB (a chat message, not an upload). */
export const chatBodyBytesMax = 1024 * 1024;

/** A refused request: its status and a JSON body `{ error: { code, message } }`. */
function refusal(
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> | undefined,
): Response {
  const all = new Headers(headers);
  all.set('content-type', 'application/json');
  if (status === 405) all.set('allow', 'GET, POST');
  return new Response(JSON.stringify({ error: { code, message } }), { status, headers: all });
}

class BadRequest extends Error {}

/** The thread id and the last user message of a `useChat` POST body, or a `BadRequest`. */
function messageOf(body: unknown): { threadId: string; text: string; messageId?: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequest('the body is not a JSON object: send useChat’s { id, messages }');
  }
  const { id, messages, message } = body as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') {
    throw new BadRequest('the body has no chat id: "id" must be a non-empty string');
  }
  const last = Array.isArray(messages) ? messages.at(-1) : message;
  if (typeof last !== 'object' || last === null || Array.isArray(last)) {
    throw new BadRequest(
      'the body has no message: "messages" must be a non-empty array (or "message" an object)',
    );
  }
  const { role, parts, id: messageId } = last as Record<string, unknown>;
  if (role !== 'user') {
    throw new BadRequest(
      `the last message's role is ${JSON.stringify(role)}: a thread takes the user's messages`,
    );
  }
  const texts = Array.isArray(parts)
    ? parts.filter(
        (part): part is { type: 'text'; text: string } =>
          typeof part === 'object' &&
          part !== null &&
          (part as { type?: unknown }).type === 'text' &&
          typeof (part as { text?: unknown }).text === 'string',
      )
    : [];
  const text = texts.map((part) => part.text).join('');
  if (text === '') {
    throw new BadRequest('the last message has no text: its "parts" need a { type: "text", text }');
  }
  if (messageId !== undefined && (typeof messageId !== 'string' || messageId.length > 200)) {
    throw new BadRequest('the last message\'s "id" must be a string of at most 200 characters');
  }
  return {
    threadId: id,
    text,
    ...(messageId === undefined || messageId === '' ? {} : { messageId }),
  };
}

/** useChat's resume URL, `…/<id>/stream`, else `?id=<id>`. */
function defaultChatIdOf(request: Request): string | undefined {
  const url = new URL(request.url);
  const segments = url.pathname.split('/').filter((segment) => segment !== '');
  if (segments.length >= 2 && segments.at(-1) === 'stream') {
    return decodeURIComponent(segments.at(-2) as string);
  }
  return url.searchParams.get('id') ?? undefined;
}

/**
 * A Fetch-style handler (`Request` → `Response`) that serves a thread agent to the AI SDK's
 * `useChat` (its `DefaultChatTransport`): mount it on the chat endpoint (`POST /api/chat`) and on
 * its resume URL (`GET /api/chat/<id>/stream`).
 *
 * - `POST` with useChat's body (`{ id, messages }`, or `{ id, message }`): sends the last
 *   message's text to thread `id` (the message's `id` as `messageId`, so a client retrying a
 *   lost response gets the same turn) and answers with that turn's UI message stream
 *   ({@link agentRunResponse}): the text from whichever worker makes the model call.
 * - `GET` (useChat's `resume`, or an SSE reconnect with `Last-Event-ID`): the stream of the
 *   thread's newest turn if it has not ended ({@link AgentThread.activeTurn}), from its start or
 *   after `Last-Event-ID`; `204 No Content` when no turn is running.
 *
 * A request it refuses gets a JSON body `{ error: { code, message } }`: 400 `INVALID_ARGUMENT`
 * (a body that is not JSON or not useChat's, a message without text, a bad chat id, the id of
 * another agent's thread, no chat id in a GET, a `Last-Event-ID` that is not a cursor), 409 `THREAD_BUSY` / `THREAD_FULL` (nothing was
 * recorded), 413 `INVALID_ARGUMENT` (a body over {@link chatBodyBytesMax}), 405 for other methods.
 * Other errors (the store down) are thrown, for the framework's error handling.
 *
 * @example
 * // app/api/chat/route.ts and app/api/chat/[id]/stream/route.ts (Next.js), Hono, Bun, Deno
 * const chat = threadChatHandler(agents, support);
 * export { chat as GET, chat as POST };
 */
export function threadChatHandler<O>(
  agents: ThreadChats,
  agent: Agent<O>,
  options: ThreadChatHandlerOptions = {},
): (request: Request) => Promise<Response> {
  const { headers } = options;
  const chatIdOf = options.chatIdOf ?? defaultChatIdOf;
  const invalid = (message: string) =>
    refusal(400, AgentErrorCode.INVALID_ARGUMENT, message, headers);

  /** A thread call's refusal as a response; anything else is thrown on. */
  const refused = (error: unknown): Response => {
    if (isLoomError(error, AgentErrorCode.INVALID_ARGUMENT)) return invalid(error.message);
    if (
      isLoomError(error, AgentErrorCode.THREAD_BUSY) ||
      isLoomError(error, AgentErrorCode.THREAD_FULL)
    ) {
      return refusal(409, error.code, error.message, headers);
    }
    throw error;
  };

  const post = async (request: Request): Promise<Response> => {
    const raw = await request.text();
    if (new TextEncoder().encode(raw).byteLength > chatBodyBytesMax) {
      return refusal(
        413,
        AgentErrorCode.INVALID_ARGUMENT,
        `the body is over ${chatBodyBytesMax} bytes (chatBodyBytesMax)`,
        headers,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return invalid('the body is not JSON: send useChat’s { id, messages }');
    }
    let sent: { threadId: string; text: string; messageId?: string };
    try {
      sent = messageOf(body);
    } catch (error) {
      if (error instanceof BadRequest) return invalid(error.message);
      throw error;
    }
    let runId: string;
    try {
      const turn = await agents
        .thread(agent, sent.threadId)
        .send(sent.text, sent.messageId === undefined ? {} : { messageId: sent.messageId });
      runId = turn.runId;
    } catch (error) {
      return refused(error);
    }
    // A new turn's stream, from its start: an event id of another stream means nothing here.
    return agentRunResponse(agents, runId, {
      request: new Request(request.url, { signal: request.signal }),
      ...(headers === undefined ? {} : { headers }),
    });
  };

  const get = async (request: Request): Promise<Response> => {
    const threadId = chatIdOf(request);
    if (threadId === undefined || threadId === '') {
      return invalid(
        `no chat id in ${new URL(request.url).pathname}: resume at …/<id>/stream or ?id=<id>`,
      );
    }
    const after = request.headers.get('last-event-id') ?? '';
    let runId: string | undefined;
    try {
      if (after !== '') parseCursor(after); // refused before anything is read
      runId = (await agents.thread(agent, threadId).activeTurn())?.runId;
    } catch (error) {
      return refused(error);
    }
    if (runId === undefined)
      return new Response(null, { status: 204, headers: new Headers(headers) });
    return agentRunResponse(agents, runId, {
      request,
      ...(headers === undefined ? {} : { headers }),
    });
  };

  return async (request) => {
    if (request.method === 'POST') return post(request);
    if (request.method === 'GET') return get(request);
    return refusal(
      405,
      AgentErrorCode.INVALID_ARGUMENT,
      `${request.method} is not served here: POST sends a message, GET resumes its stream`,
      headers,
    );
  };
}

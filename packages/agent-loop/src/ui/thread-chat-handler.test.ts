// threadChatHandler over real HTTP (node:http through nodeListener, read by fetch): useChat's POST
// sends to a thread and streams its turn; the resume GET streams the newest unsettled turn from
// its start or after Last-Event-ID, and answers 204 when none runs; bad requests are 400s with a
// JSON body naming the problem.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openMemory } from '@loom/event-runtime';
import { StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { type AgentRuntime, createAgentRuntime, defineAgent } from '../index.js';
import { nodeListener } from './node-listener.js';
import { threadChatHandler } from './thread-chat-handler.js';

const deadlineMs = 10_000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The agent: asks a person when the message says "ask", else answers at once. */
const model = new StubModel({
  script: (request) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return { text: `noted: ${last.content}` };
    const users = request.messages.filter((m) => m.role === 'user');
    const text = users.at(-1)?.content ?? '';
    return text.includes('ask')
      ? { toolCalls: [{ tool: 'ask_human', input: { question: 'Which order?' } }] }
      : { text: `re: ${text}` };
  },
});
const support = defineAgent({
  name: 'support',
  model,
  instructions: 'Help.',
  tools: [],
  askHuman: true,
});
const other = defineAgent({ name: 'other', model, instructions: '', tools: [] });

async function serve(): Promise<{ agents: AgentRuntime; base: string }> {
  const flows = createRuntime({ backend: openMemory(), timerPollMs: 20 });
  const agents = createAgentRuntime({ flows, agents: [support, other] });
  const server = createServer(nodeListener(threadChatHandler(agents, support)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () => flows.shutdown(),
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { agents, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

interface SseEvent {
  id: string | undefined;
  data: string;
}

/** Reads an SSE response until `[DONE]` or until `stop` says so (then drops the connection). */
async function readSse(
  response: Response,
  stop: (events: SseEvent[]) => boolean = () => false,
): Promise<SseEvent[]> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let buffer = '';
  const timer = setTimeout(() => void reader.cancel(new Error('deadline')), deadlineMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended without [DONE] after ${events.length} events`);
      buffer += decoder.decode(value, { stream: true });
      for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const id = /^id: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1] ?? '';
        events.push({ id, data });
        if (data === '[DONE]' || stop(events)) return events;
      }
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
}

const chunksOf = (events: SseEvent[]) =>
  events
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as { type: string; delta?: string; [key: string]: unknown });
const textOf = (events: SseEvent[]) =>
  chunksOf(events)
    .filter((c) => c.type === 'text-delta')
    .map((c) => c.delta)
    .join('');

/** useChat's POST body (DefaultChatTransport): the chat id and every message so far. */
function useChatBody(id: string, text: string, messageId = 'm1') {
  return JSON.stringify({
    id,
    trigger: 'submit-message',
    messages: [{ id: messageId, role: 'user', parts: [{ type: 'text', text }] }],
  });
}
const post = (base: string, body: string) =>
  fetch(`${base}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });

describe('threadChatHandler: a thread agent behind useChat, over HTTP', () => {
  it('POST sends the last user message to the thread and streams its turn; a resend of the same message id gets the same turn', async () => {
    const { agents, base } = await serve();
    const response = await post(base, useChatBody('chat-1', 'hello'));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    const events = await readSse(response);
    expect(textOf(events)).toBe('re: hello');
    expect(chunksOf(events).at(-1)).toMatchObject({
      type: 'finish',
      messageMetadata: { runId: 'chat-1/1', reason: 'goal_completed' },
    });
    // A client that lost the response posts the same message again: no second message.
    const again = await readSse(await post(base, useChatBody('chat-1', 'hello')));
    expect(textOf(again)).toBe('re: hello');
    const messages = await agents.thread(support, 'chat-1').messages();
    expect(messages.map((m) => `${m.role} ${m.message}`)).toEqual(['user 1', 'assistant 1']);
    // Nothing runs now: the resume GET says so.
    expect((await fetch(`${base}/api/chat/chat-1/stream`)).status).toBe(204);
  });

  it('GET resumes the turn waiting for a person, from its start and after Last-Event-ID, and is 204 once it ended', async () => {
    const { agents, base } = await serve();
    expect((await fetch(`${base}/api/chat/chat-2/stream`)).status).toBe(204); // no thread yet
    const asked = (events: SseEvent[]) =>
      chunksOf(events).some((c) => c.type === 'data-loom-question');
    const first = await readSse(await post(base, useChatBody('chat-2', 'please ask')), asked);
    expect(chunksOf(first).find((c) => c.type === 'tool-input-available')).toMatchObject({
      toolName: 'ask_human',
      input: { question: 'Which order?' },
    });
    // The page reloads: useChat's resume GET gets the turn from its start.
    const resumed = await readSse(await fetch(`${base}/api/chat/chat-2/stream`), asked);
    expect(chunksOf(resumed)[0]).toMatchObject({ type: 'start', messageId: 'chat-2/1' });
    const lastId = resumed.findLast((e) => e.id !== undefined)?.id;
    expect(lastId).toBeDefined();

    const question = chunksOf(resumed).find((c) => c.type === 'data-loom-question')?.data as
      | { id: string; question: string }
      | undefined;
    expect(question?.question).toBe('Which order?');
    expect((await agents.questions('chat-2/1')).map((q) => q.status)).toEqual(['pending']);
    await agents.answer(question?.id as string, { by: 'ana', text: 'A-17' });
    // An SSE reconnect: only what follows the last event it had, nothing twice.
    const rest = await readSse(
      await fetch(`${base}/api/chat?id=chat-2`, { headers: { 'last-event-id': lastId as string } }),
    );
    const restChunks = chunksOf(rest);
    expect(restChunks.some((c) => c.type === 'start')).toBe(false);
    expect(restChunks.filter((c) => c.type === 'data-loom-question')).toHaveLength(0);
    // The reply (the model echoes the tool result it got: the answer, who gave it, when).
    expect(textOf(rest)).toMatch(/^noted: \{"text":"A-17","by":"ana",/);
    expect(restChunks.at(-1)).toMatchObject({ type: 'finish' });
    expect((await fetch(`${base}/api/chat/chat-2/stream`)).status).toBe(204);
  });

  it('refuses what is not a useChat message with 400 and a JSON body naming the problem', async () => {
    const { agents, base } = await serve();
    await agents.thread(other, 'not-support').send('hi');
    const cases: [string, RequestInit & { url?: string }, number, RegExp][] = [
      ['not JSON', { method: 'POST', body: '{' }, 400, /not JSON/],
      ['an array', { method: 'POST', body: '[]' }, 400, /not a JSON object/],
      ['no id', { method: 'POST', body: JSON.stringify({ messages: [] }) }, 400, /no chat id/],
      ['no messages', { method: 'POST', body: JSON.stringify({ id: 'c' }) }, 400, /no message/],
      [
        'an assistant message last',
        {
          method: 'POST',
          body: JSON.stringify({ id: 'c', messages: [{ role: 'assistant', parts: [] }] }),
        },
        400,
        /role is "assistant"/,
      ],
      [
        'no text',
        {
          method: 'POST',
          body: JSON.stringify({
            id: 'c',
            messages: [{ role: 'user', parts: [{ type: 'file' }] }],
          }),
        },
        400,
        /no text/,
      ],
      [
        'a thread id with /',
        { method: 'POST', body: useChatBody('a/b', 'hi') },
        400,
        /without '\/'/,
      ],
      [
        'another agent’s thread',
        { method: 'POST', body: useChatBody('not-support', 'hi') },
        400,
        /not a thread of agent 'support'/,
      ],
      ['a GET without an id', { method: 'GET', url: '/api/chat' }, 400, /no chat id/],
      [
        'a GET of another agent’s thread',
        { method: 'GET', url: '/api/chat/not-support/stream' },
        400,
        /not a thread of agent/,
      ],
      [
        'a Last-Event-ID that is not a cursor',
        { method: 'GET', url: '/api/chat/c/stream', headers: { 'last-event-id': 'garbage' } },
        400,
        /not a stream cursor/,
      ],
      ['DELETE', { method: 'DELETE' }, 405, /POST sends a message/],
    ];
    for (const [what, { url, ...init }, status, message] of cases) {
      const response = await fetch(`${base}${url ?? '/api/chat'}`, init);
      expect(response.status, what).toBe(status);
      expect(response.headers.get('content-type'), what).toBe('application/json');
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code, what).toBe('INVALID_ARGUMENT');
      expect(body.error.message, what).toMatch(message);
    }
    // None of them sent a message.
    expect(await agents.thread(support, 'c').messages()).toEqual([]);
    expect(await agents.thread(other, 'not-support').messages()).toHaveLength(2);
  });
});

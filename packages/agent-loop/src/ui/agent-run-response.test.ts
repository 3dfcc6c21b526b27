// agentRunResponse over real HTTP: a node:http server on 127.0.0.1 answers with the UI message
// stream of a run another agent runtime drives (on one memory backend: the text reaches the
// server's runtime through the live channel only), read by fetch, checked chunk by chunk
// against the AI SDK's UIMessageChunk shapes, with a forced reconnect by Last-Event-ID.
// (The `ai` package's own reader is run on the writer's chunks in ui-chunk-writer.test.ts, and the
// real useChat in Chromium in test/browser/usechat-browser.test.ts.)
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openMemory } from '@loom/event-runtime';
import { type ModelProvider, StubModel } from '@loom/reasoning';
import { createRuntime } from '@loom/workflow-runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { ChatCompletionsServer } from '../../demo/chat-completions-server.test-support.js';
import { openAiModel } from '../../demo/openai-model.js';
import { type AgentRuntime, createAgentRuntime, defineAgent, defineTool } from '../index.js';
import { agentRunResponse } from './agent-run-response.js';

const deadlineMs = 10_000;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The keys each chunk type may have: `UIMessageChunk` of the `ai` package (strict objects). */
const allowedKeys: Record<string, { required: string[]; optional: string[] }> = {
  start: { required: [], optional: ['messageId', 'messageMetadata'] },
  'start-step': { required: [], optional: [] },
  'finish-step': { required: [], optional: [] },
  'reset-step': { required: [], optional: [] },
  'text-start': { required: ['id'], optional: ['providerMetadata'] },
  'text-delta': { required: ['id', 'delta'], optional: ['providerMetadata'] },
  'text-end': { required: ['id'], optional: ['providerMetadata'] },
  'tool-input-available': {
    required: ['toolCallId', 'toolName', 'input'],
    optional: ['providerExecuted', 'providerMetadata', 'dynamic', 'title'],
  },
  'tool-output-available': {
    required: ['toolCallId', 'output'],
    optional: ['providerExecuted', 'dynamic', 'preliminary'],
  },
  'tool-output-error': {
    required: ['toolCallId', 'errorText'],
    optional: ['providerExecuted', 'dynamic'],
  },
  'tool-approval-request': { required: ['approvalId', 'toolCallId'], optional: [] },
  finish: { required: [], optional: ['finishReason', 'messageMetadata'] },
  error: { required: ['errorText'], optional: [] },
};

function checkChunk(chunk: Record<string, unknown>): void {
  const type = chunk.type as string;
  const keys = Object.keys(chunk).filter((key) => key !== 'type');
  const shape = type.startsWith('data-')
    ? { required: ['data'], optional: ['id', 'transient'] }
    : allowedKeys[type];
  expect(shape, `chunk type ${type}`).toBeDefined();
  for (const key of shape?.required ?? []) expect(keys, `${type} needs ${key}`).toContain(key);
  for (const key of keys) {
    expect(
      [...(shape?.required ?? []), ...(shape?.optional ?? [])],
      `${type} has ${key}`,
    ).toContain(key);
  }
  for (const key of ['id', 'delta', 'toolCallId', 'toolName', 'approvalId', 'errorText']) {
    if (key in chunk) expect(typeof chunk[key]).toBe('string');
  }
}

interface SseEvent {
  id: string | undefined;
  data: string;
}

/**
 * Reads an SSE response until `[DONE]`, or until `stop` says so (then aborts the connection).
 * Returns the events and the last event id seen.
 */
async function readSse(
  url: string,
  lastEventId: string | undefined,
  stop: (events: SseEvent[]) => boolean = () => false,
): Promise<{ events: SseEvent[]; lastId: string | undefined; headers: Headers }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error('deadline')), deadlineMs);
  const response = await fetch(url, {
    headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId },
    signal: abort.signal,
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  let lastId = lastEventId;
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut = buffer.indexOf('\n\n');
      while (cut !== -1) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        cut = buffer.indexOf('\n\n');
        let id: string | undefined;
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('id: ')) id = line.slice(4);
          if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (id !== undefined) lastId = id;
        events.push({ id, data });
        if (data === '[DONE]') return { events, lastId, headers: response.headers };
        if (stop(events)) {
          abort.abort();
          return { events, lastId, headers: response.headers };
        }
      }
    }
    throw new Error(`the stream ended without [DONE] after ${events.length} events`);
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
}

/** A server answering GET /runs/<id> with agentRunResponse over `agents`. */
async function serve(agents: AgentRuntime): Promise<string> {
  const server: Server = createServer(async (req, res) => {
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') headers.set(name, value);
    }
    const request = new Request(`http://127.0.0.1${req.url}`, { headers, signal: abort.signal });
    const runId = decodeURIComponent((req.url ?? '').slice('/runs/'.length));
    const response = agentRunResponse(agents, runId, { request });
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined));
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done || value === undefined) break;
      res.write(value);
    }
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const answer = 'The refund of 40 EUR is on its way to ana.';

describe('agentRunResponse: the UI message stream of a run, over HTTP', () => {
  it('streams a run that waits for an approval and then writes its answer, resumed by Last-Event-ID', async () => {
    const words = answer.split(' ');
    const seenWords = { count: 0 };
    const stub = new StubModel({
      script: (request) =>
        request.messages.some((message) => message.role === 'tool')
          ? { text: answer }
          : { toolCalls: [{ tool: 'send_refund', input: { amount: 40 } }] },
    });
    // After each word but the last, the model waits until the HTTP client has read that word.
    const model: ModelProvider = {
      id: 'gated',
      generate: (request) => stub.generate(request),
      async *stream(request) {
        let n = 0;
        for await (const delta of stub.stream(request)) {
          yield delta;
          if (delta.type !== 'text' || n >= words.length - 1) continue;
          const deadline = Date.now() + deadlineMs;
          while (seenWords.count <= n) {
            if (Date.now() > deadline) throw new Error(`word ${n} never reached the client`);
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          n++;
        }
      },
    };
    const refund = defineTool({
      name: 'send_refund',
      description: 'Send a refund',
      input: { type: 'object', properties: { amount: { type: 'number' } } },
      sideEffect: 'remote_mutation',
      run: async () => ({ sent: true }),
    });
    const agent = defineAgent({ name: 'refunds', model, instructions: '', tools: [refund] });
    const backend = openMemory();
    const driverFlows = createRuntime({ backend, closeBackend: false, timerPollMs: 20 });
    const drivers = createAgentRuntime({ flows: driverFlows, agents: [agent] });
    const serverFlows = createRuntime({ backend, closeBackend: false });
    const servers = createAgentRuntime({ flows: serverFlows, agents: [] });
    cleanups.push(
      () => backend.close(),
      () => driverFlows.shutdown(),
      () => serverFlows.shutdown(),
    );
    const base = await serve(servers);
    const url = `${base}/runs/refund-1`;

    const textOf = (events: SseEvent[]) =>
      events
        .map((e) => (e.data === '[DONE]' ? undefined : JSON.parse(e.data)))
        .filter((c) => c?.type === 'text-delta')
        .map((c) => c.delta as string)
        .join('');
    const countWords = (text: string) => {
      const done = text.split(' ').length - 1; // words followed by their space
      seenWords.count = Math.max(seenWords.count, done);
    };

    // The client connects before the run exists; the run asks for an approval.
    const started = drivers.start(agent, 'refund ana', { runId: 'refund-1' });
    let approved = false;
    const first = await readSse(url, undefined, (events) => {
      const last = events.at(-1)?.data ?? '';
      if (!approved && last.includes('tool-approval-request')) {
        approved = true;
        const { approvalId } = JSON.parse(last) as { approvalId: string };
        // Nobody wakes the run by hand: the driver's own timer poll (every 20 ms on the wall
        // clock) claims it once the decision is in its inbox, on memory as on SQLite and Postgres.
        void servers.approve(approvalId, { by: 'ops' });
      }
      countWords(textOf(events));
      // Forced reconnect once three words are shown.
      return seenWords.count >= 3;
    });
    expect(first.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(first.headers.get('content-type')).toBe('text/event-stream');
    expect(first.lastId).toBeDefined();
    const second = await readSse(url, first.lastId, (events) => {
      countWords(textOf([...first.events, ...events]));
      return false;
    });
    await (await started).result();

    const events = [...first.events, ...second.events];
    expect(events.at(-1)?.data).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as Record<string, unknown>);
    for (const chunk of chunks) checkChunk(chunk);
    // Every word was read by the client while the model call was still running.
    expect(seenWords.count).toBe(words.length - 1);
    expect(textOf(events)).toBe(answer);
    const types = chunks.map((c) => c.type);
    const compact = types.filter((t, i) => t !== 'text-delta' || types[i - 1] !== 'text-delta');
    expect(compact).toEqual([
      'start',
      'start-step',
      'tool-input-available',
      'tool-approval-request',
      'tool-output-available',
      'finish-step',
      'start-step',
      'text-start',
      'text-delta',
      'text-end',
      'finish-step',
      'data-loom-output',
      'finish',
    ]);
    // The answer as the run's output: for an agent without an output schema, the final text.
    expect(chunks.find((c) => c.type === 'data-loom-output')).toEqual({
      type: 'data-loom-output',
      id: 'refund-1',
      data: answer,
    });
    const toolCallId = chunks.find((c) => c.type === 'tool-input-available')?.toolCallId;
    expect(chunks.find((c) => c.type === 'tool-approval-request')?.toolCallId).toBe(toolCallId);
    expect(chunks.find((c) => c.type === 'tool-output-available')).toMatchObject({
      toolCallId,
      output: { sent: true },
    });
    expect(chunks.at(-1)).toMatchObject({
      type: 'finish',
      finishReason: 'stop',
      messageMetadata: { runId: 'refund-1', reason: 'goal_completed', turns: 2 },
    });

    // A client that comes later without an event id gets the whole run, the text as recorded.
    const replay = await readSse(url, undefined);
    const replayed = replay.events.slice(0, -1).map((e) => JSON.parse(e.data));
    for (const chunk of replayed) checkChunk(chunk);
    expect(textOf(replay.events)).toBe(answer);
    expect(replayed.filter((c) => c.type === 'text-delta')).toHaveLength(1);
  });

  it('a run whose model call fails sends an error chunk with the reason and the provider message before finish', async () => {
    // The model is OpenAI's wire format over HTTP (@ai-sdk/openai-compatible through fromAiSdk),
    // refusing the call the way OpenAI refuses an unknown model: 404 and its error body.
    const refusal = 'The model `gpt-nope` does not exist or you do not have access to it.';
    const wire = await ChatCompletionsServer.start({
      move: () => ({ refuse: { status: 404, message: refusal } }),
    });
    cleanups.push(() => wire.close());
    const model = openAiModel({ baseUrl: wire.baseUrl, apiKey: 'local', model: 'gpt-nope' });
    const agent = defineAgent({ name: 'support', model, instructions: '', tools: [] });
    const backend = openMemory();
    const driverFlows = createRuntime({ backend, closeBackend: false, timerPollMs: 20 });
    const drivers = createAgentRuntime({ flows: driverFlows, agents: [agent] });
    const serverFlows = createRuntime({ backend, closeBackend: false });
    const servers = createAgentRuntime({ flows: serverFlows, agents: [] });
    cleanups.push(
      () => backend.close(),
      () => driverFlows.shutdown(),
      () => serverFlows.shutdown(),
    );
    const url = `${await serve(servers)}/runs/broken-1`;

    // The client connects before the run exists, as a chat's does; a second one comes after the
    // run ended and gets the same ending from the log.
    const started = drivers.start(agent, 'where is my order?', { runId: 'broken-1' });
    const live = await readSse(url, undefined);
    const result = await (await started).result();
    expect(result).toMatchObject({ reason: 'model_failed' });
    expect(wire.requests.length).toBeGreaterThan(0);
    const later = await readSse(url, undefined);

    for (const read of [live, later]) {
      expect(read.events.at(-1)?.data).toBe('[DONE]');
      const chunks = read.events.slice(0, -1).map((e) => JSON.parse(e.data));
      for (const chunk of chunks) checkChunk(chunk);
      expect(chunks.map((c) => c.type)).toEqual([
        'start',
        'start-step',
        'finish-step',
        'error',
        'finish',
      ]);
      const errorText = chunks.find((c) => c.type === 'error')?.errorText as string;
      expect(errorText.startsWith('model_failed: ')).toBe(true);
      expect(errorText).toContain(refusal);
      expect(errorText).toBe(`model_failed: ${result.error}`);
      expect(chunks.at(-1)).toMatchObject({
        type: 'finish',
        finishReason: 'error',
        messageMetadata: { runId: 'broken-1', reason: 'model_failed', turns: 0 },
      });
    }
  });

  it('refuses a Last-Event-ID that is not a cursor', async () => {
    const backend = openMemory();
    const flows = createRuntime({ backend });
    cleanups.push(() => flows.shutdown());
    const agents = createAgentRuntime({ flows, agents: [] });
    const request = new Request('http://127.0.0.1/runs/x', {
      headers: { 'last-event-id': 'garbage' },
    });
    expect(() => agentRunResponse(agents, 'x', { request })).toThrow(/not a stream cursor/);
  });
});

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ManualClock } from '@loom/event-runtime/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isLoomError } from '../errors.js';
import type { ModelDelta, ModelProvider, ModelRequest, ModelResponse } from '../model-provider.js';
import { withRetry } from '../retry/with-retry.js';
import { type AiSdkProviderOptions, fromAiSdk } from './ai-sdk-provider.js';
import { collect, failure, openAiEvent, WireServer } from './wire-server.test-support.js';

let wire: WireServer;
beforeEach(async () => {
  wire = await WireServer.start();
});
afterEach(async () => {
  await wire.close();
});

function provider(
  options: AiSdkProviderOptions = {},
  settings: { supportsStructuredOutputs?: boolean } = {},
): ModelProvider {
  const local = createOpenAICompatible({
    name: 'local',
    baseURL: `${wire.url}/v1`,
    apiKey: 'test-key',
    includeUsage: true,
    ...settings,
  });
  return fromAiSdk(local.chatModel('qwen2.5-7b'), {
    prices: { 'qwen2.5-7b': { inputUsdPerMTok: 1, outputUsdPerMTok: 2 } },
    ...options,
  });
}

const searchTool = {
  name: 'search',
  description: 'Search the web',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
};
const request: ModelRequest = {
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Find loom' },
    {
      role: 'assistant',
      content: '',
      toolCalls: [{ callId: 'c0', tool: 'search', input: { q: 'x' } }],
    },
    { role: 'tool', callId: 'c0', tool: 'search', content: 'nothing', isError: true },
  ],
  tools: [searchTool],
};

function completion(message: unknown, finish: string, usage = true) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'qwen2.5-7b',
    choices: [{ index: 0, message, finish_reason: finish }],
    ...(usage
      ? {
          usage: {
            prompt_tokens: 120,
            completion_tokens: 30,
            total_tokens: 150,
            prompt_tokens_details: { cached_tokens: 100 },
          },
        }
      : {}),
  };
}

function chunk(delta: unknown, finish: string | null = null) {
  return openAiEvent({
    id: 'chatcmpl-2',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'qwen2.5-7b',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
}

const usageChunk = openAiEvent({
  id: 'chatcmpl-2',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'qwen2.5-7b',
  choices: [],
  usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
});

describe('the AI SDK adapter on the OpenAI chat-completions wire format', () => {
  it('a plain response maps text, tool calls, usage, cost and the request it sent', async () => {
    wire.reply({
      kind: 'json',
      body: completion(
        {
          role: 'assistant',
          content: 'Searching.',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'search', arguments: '{"q":"loom"}' },
            },
          ],
        },
        'tool_calls',
      ),
    });
    const response = await provider().generate(request);
    expect(response).toMatchObject({
      text: 'Searching.',
      toolCalls: [{ callId: 'call_1', tool: 'search', input: { q: 'loom' } }],
      invalidToolCalls: [],
      problem: null,
      finishReason: 'tool_calls',
      usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 100 },
      model: 'qwen2.5-7b',
      provider: 'local.chat:qwen2.5-7b',
    });
    // 20 uncached + 100 cached input at $1/MTok, 30 output at $2/MTok.
    expect(response.costUsd).toBeCloseTo((120 * 1 + 30 * 2) / 1e6, 12);
    const sent = wire.requests[0]?.body as {
      messages: { role: string; tool_call_id?: string }[];
      tools: { function: { name: string } }[];
    };
    expect(wire.requests[0]?.path).toBe('/v1/chat/completions');
    expect(sent.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(sent.messages[3]?.tool_call_id).toBe('c0');
    expect(sent.tools[0]?.function.name).toBe('search');
    expect(JSON.parse(JSON.stringify(response))).toEqual(response);
  });

  it('responseFormat asks for structured output: a JSON schema where the server supports it, else JSON mode', async () => {
    const schema = {
      type: 'object',
      properties: { colour: { type: 'string' } },
      required: ['colour'],
      additionalProperties: false,
    };
    const answer = {
      kind: 'json' as const,
      body: completion({ role: 'assistant', content: '{"colour":"teal"}' }, 'stop'),
    };
    wire.reply(answer, answer, answer);
    const sentFormat = (n: number) =>
      ((wire.requests[n]?.body ?? {}) as { response_format?: unknown }).response_format;
    const asked: ModelRequest = {
      messages: [{ role: 'user', content: 'Which colour?' }],
      responseFormat: { type: 'json', schema, name: 'paint' },
    };
    const structured = await provider({}, { supportsStructuredOutputs: true }).generate(asked);
    expect(structured.text).toBe('{"colour":"teal"}');
    expect(sentFormat(0)).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'paint', schema },
    });
    await provider().generate(asked);
    expect(sentFormat(1)).toEqual({ type: 'json_object' });
    // Without responseFormat, nothing is asked for.
    await provider().generate({ messages: [{ role: 'user', content: 'Which colour?' }] });
    expect(sentFormat(2)).toBeUndefined();
  });

  it('bad model output becomes typed data: arguments not JSON, an unknown tool', async () => {
    wire.reply({
      kind: 'json',
      body: completion(
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'search', arguments: '{"q": "lo' } },
            { id: 'b', type: 'function', function: { name: 'rm_rf', arguments: '{}' } },
          ],
        },
        'tool_calls',
      ),
    });
    const response = await provider().generate(request);
    expect(response.toolCalls).toEqual([]);
    expect(response.invalidToolCalls).toMatchObject([
      { callId: 'a', tool: 'search', rawInput: '{"q": "lo', reason: 'input_not_json' },
      { callId: 'b', tool: 'rm_rf', rawInput: '{}', reason: 'unknown_tool' },
    ]);
    expect(response.problem?.kind).toBe('invalid_tool_calls');
  });

  it('text where a tool call was required, and an empty answer, are problems, not crashes', async () => {
    wire.reply(
      { kind: 'json', body: completion({ role: 'assistant', content: 'I refuse.' }, 'stop') },
      { kind: 'json', body: completion({ role: 'assistant', content: '' }, 'stop', false) },
    );
    const required = await provider().generate({ ...request, toolChoice: 'required' });
    expect(required.problem?.kind).toBe('tool_call_required');
    expect((wire.requests[0]?.body as { tool_choice: unknown } | undefined)?.tool_choice).toBe(
      'required',
    );
    const empty = await provider().generate(request);
    expect(empty.problem?.kind).toBe('empty');
    expect(empty.usage).toEqual({ inputTokens: null, outputTokens: null, cachedInputTokens: null });
    expect(empty.costUsd).toBeNull();
  });

  it('a streamed response yields text and tool-argument deltas; its finish equals generate', async () => {
    const events = [
      chunk({ role: 'assistant', content: 'Sear' }),
      chunk({ content: 'ching.' }),
      chunk({
        tool_calls: [
          { index: 0, id: 'call_9', type: 'function', function: { name: 'search', arguments: '' } },
        ],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"loom"}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk,
      openAiEvent('[DONE]'),
    ];
    wire.reply({ kind: 'sse', events });
    const deltas = await collect(provider().stream(request));
    expect(deltas.filter((d) => d.type === 'text').map((d) => d.text)).toEqual(['Sear', 'ching.']);
    expect(deltas.filter((d) => d.type === 'tool_call_input').map((d) => d.inputText)).toEqual([
      '{"q":',
      '"loom"}',
    ]);
    const last = deltas.at(-1);
    expect(last?.type).toBe('finish');
    const streamed = (last as { response: ModelResponse }).response;
    expect(streamed).toMatchObject({
      text: 'Searching.',
      toolCalls: [{ callId: 'call_9', tool: 'search', input: { q: 'loom' } }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 50, outputTokens: 7 },
    });
    expect((wire.requests[0]?.body as { stream: boolean } | undefined)?.stream).toBe(true);

    // The same answer, not streamed, gives the same response (latency aside).
    wire.reply({
      kind: 'json',
      body: {
        ...completion(
          {
            role: 'assistant',
            content: 'Searching.',
            tool_calls: [
              {
                id: 'call_9',
                type: 'function',
                function: { name: 'search', arguments: '{"q":"loom"}' },
              },
            ],
          },
          'tool_calls',
          false,
        ),
        usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 },
      },
    });
    const generated = await provider().generate(request);
    expect({ ...streamed, latencyMs: 0 }).toEqual({ ...generated, latencyMs: 0 });
  });

  it('429 with retry-after is MODEL_RATE_LIMITED carrying retryAfterMs', async () => {
    wire.reply(
      {
        kind: 'json',
        status: 429,
        headers: { 'retry-after': '2' },
        body: { error: { message: 'slow down' } },
      },
      {
        kind: 'json',
        status: 429,
        headers: { 'retry-after-ms': '350' },
        body: { error: { message: 'slow down' } },
      },
    );
    const seconds = await failure(provider().generate(request));
    expect(isLoomError(seconds, 'MODEL_RATE_LIMITED')).toBe(true);
    expect((seconds as { fields: { retryAfterMs?: number } }).fields.retryAfterMs).toBe(2_000);
    const ms = await failure(provider().generate(request));
    expect((ms as { fields: { retryAfterMs?: number } }).fields.retryAfterMs).toBe(350);
  });

  it('500 and 503 are MODEL_UNAVAILABLE; 400 is MODEL_BAD_REQUEST with the body', async () => {
    wire.reply(
      { kind: 'json', status: 500, body: { error: { message: 'boom' } } },
      { kind: 'json', status: 503, body: { error: { message: 'overloaded' } } },
      { kind: 'json', status: 400, body: { error: { message: 'unknown model' } } },
    );
    const p = provider();
    const e500 = await failure(p.generate(request));
    expect(e500).toMatchObject({ code: 'MODEL_UNAVAILABLE', fields: { status: 500 } });
    const e503 = await failure(collect(p.stream(request)));
    expect(e503).toMatchObject({ code: 'MODEL_UNAVAILABLE', fields: { status: 503 } });
    const e400 = await failure(p.generate(request));
    expect(e400).toMatchObject({ code: 'MODEL_BAD_REQUEST', fields: { status: 400 } });
    expect((e400 as { fields: { body: string } }).fields.body).toContain('unknown model');
  });

  it('a refused connection is MODEL_UNAVAILABLE', async () => {
    const url = wire.url;
    await wire.close();
    const gone = fromAiSdk(
      createOpenAICompatible({ name: 'gone', baseURL: `${url}/v1` }).chatModel('m'),
    );
    const error = await failure(gone.generate(request));
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    wire = await WireServer.start(); // for afterEach
  });

  it('malformed JSON, plain or in a stream, is MODEL_BAD_RESPONSE', async () => {
    wire.reply(
      { kind: 'raw', body: '{"id": "x", "choices": [' },
      { kind: 'sse', events: [chunk({ content: 'ok' }), 'data: {"choices": [{"delta": \n\n'] },
    );
    const plain = await failure(provider().generate(request));
    expect(plain).toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
    const streamed = await failure(collect(provider().stream(request)));
    expect(streamed).toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
  });

  it('a stream cut off mid-way is MODEL_BAD_RESPONSE after the deltas that arrived', async () => {
    wire.reply({
      kind: 'sse',
      events: [chunk({ content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'), usageChunk],
      cutAfter: 2,
    });
    const seen: ModelDelta[] = [];
    const error = await failure(
      (async () => {
        for await (const delta of provider().stream(request)) seen.push(delta);
      })(),
    );
    expect(error).toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
    expect(seen.map((d) => d.type)).not.toContain('finish');
  });

  it('a stream the server ends cleanly without finish_reason or [DONE] is MODEL_BAD_RESPONSE', async () => {
    wire.reply({ kind: 'sse', events: [chunk({ role: 'assistant', content: 'Hel' })] });
    const seen: ModelDelta[] = [];
    const error = await failure(
      (async () => {
        for await (const delta of provider().stream(request)) seen.push(delta);
      })(),
    );
    expect(error).toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
    expect(seen).toEqual([{ type: 'text', text: 'Hel' }]);
  });

  it('a stream that stalls after its first delta is MODEL_TIMEOUT after idleTimeoutMs', async () => {
    wire.reply({
      kind: 'sse',
      events: [chunk({ content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'), usageChunk],
      stallAfter: 1,
    });
    const error = await failure(collect(provider({ idleTimeoutMs: 150 }).stream(request)));
    expect(error).toMatchObject({
      code: 'MODEL_TIMEOUT',
      fields: { option: 'idleTimeoutMs', timeoutMs: 150 },
    });
  });

  it('generate has its own timeout: an answer slower than timeoutMs but within generateTimeoutMs succeeds', async () => {
    wire.reply(
      {
        kind: 'json',
        delayMs: 400,
        body: completion({ role: 'assistant', content: 'slow' }, 'stop'),
      },
      { kind: 'hang' },
    );
    expect((await provider({ timeoutMs: 100 }).generate(request)).text).toBe('slow');
    const late = await failure(provider({ generateTimeoutMs: 150 }).generate(request));
    expect(late).toMatchObject({
      code: 'MODEL_TIMEOUT',
      fields: { option: 'generateTimeoutMs', timeoutMs: 150 },
    });
  });

  it('a first byte slower than timeoutMs is MODEL_TIMEOUT, plain and streamed', async () => {
    wire.reply({ kind: 'hang' }, { kind: 'hang' });
    const p = provider({ timeoutMs: 150, generateTimeoutMs: 150 });
    const plain = await failure(p.generate(request));
    expect(plain).toMatchObject({ code: 'MODEL_TIMEOUT', fields: { timeoutMs: 150 } });
    const streamed = await failure(collect(p.stream(request)));
    expect(streamed).toMatchObject({ code: 'MODEL_TIMEOUT' });
  });

  it("the caller's abort rejects with the caller's reason, not a model error", async () => {
    wire.reply({ kind: 'hang' });
    const controller = new AbortController();
    const pending = failure(provider().generate({ ...request, signal: controller.signal }));
    await expect.poll(() => wire.requests.length, { timeout: 5_000 }).toBe(1);
    controller.abort(new Error('user cancelled'));
    expect(((await pending) as Error).message).toBe('user cancelled');
  });

  it('warm() runs the given warm-up before the first call; without one it sends nothing', async () => {
    wire.reply(
      { kind: 'json', body: { data: [] } },
      {
        kind: 'json',
        body: completion({ role: 'assistant', content: 'hi' }, 'stop'),
      },
    );
    const local = createOpenAICompatible({ name: 'local', baseURL: `${wire.url}/v1` });
    const warmed = fromAiSdk(local.chatModel('m'), {
      warm: async () => (await fetch(`${wire.url}/v1/models`)).arrayBuffer(),
    });
    await warmed.warm?.();
    expect(wire.requests.map((r) => r.path)).toEqual(['/v1/models']);
    await warmed.generate(request);
    expect(wire.requests.map((r) => r.path)).toEqual(['/v1/models', '/v1/chat/completions']);
    await fromAiSdk(local.chatModel('m')).warm?.();
    expect(wire.requests).toHaveLength(2);
  });

  it('hostile text (lone surrogates, control characters, 1 MB) survives the JSON round trip', async () => {
    const hostile = `\ud800 lone \udfff, NUL \u0000, bell \u0007, ${'x'.repeat(1_000_000)}`;
    wire.reply({ kind: 'json', body: completion({ role: 'assistant', content: hostile }, 'stop') });
    const response = await provider().generate(request);
    expect(JSON.parse(JSON.stringify(response)).text).toBe(response.text);
    expect(response.text.length).toBe(hostile.length);
  });

  it('withRetry over the wire waits the 429 retry-after, then the call succeeds', async () => {
    wire.reply(
      {
        kind: 'json',
        status: 429,
        headers: { 'retry-after': '3' },
        body: { error: { message: 'slow' } },
      },
      { kind: 'json', body: completion({ role: 'assistant', content: 'made it' }, 'stop') },
    );
    const time = new ManualClock();
    const retried = withRetry(provider(), {
      attempts: 2,
      backoff: { initialMs: 10, jitter: 'none' },
      clock: time,
    });
    const pending = retried.generate(request);
    await expect.poll(() => time.pendingTimers, { timeout: 5_000 }).toBe(1);
    expect(time.delaysMs).toEqual([3_000]);
    expect(wire.requests).toHaveLength(1);
    await time.advance(3_000);
    await expect.poll(() => time.pendingTimers, { timeout: 5_000 }).toBe(1);
    await time.advance(10);
    expect((await pending).text).toBe('made it');
    expect(wire.requests).toHaveLength(2);
  });
});

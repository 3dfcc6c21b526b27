import { createAnthropic } from '@ai-sdk/anthropic';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ModelDelta, ModelProvider, ModelRequest, ModelResponse } from '../model-provider.js';
import { type AiSdkProviderOptions, fromAiSdk } from './ai-sdk-provider.js';
import { anthropicEvent, collect, failure, WireServer } from './wire-server.test-support.js';

let wire: WireServer;
beforeEach(async () => {
  wire = await WireServer.start();
});
afterEach(async () => {
  await wire.close();
});

function provider(options: AiSdkProviderOptions = {}): ModelProvider {
  const anthropic = createAnthropic({ baseURL: `${wire.url}/v1`, apiKey: 'test-key' });
  return fromAiSdk(anthropic('claude-sonnet-4-5'), options);
}

const request: ModelRequest = {
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Weather in Paris?' },
  ],
  tools: [
    {
      name: 'weather',
      description: 'Current weather',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    },
  ],
};

function message(content: unknown[], stopReason: string) {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-5-20250929',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 200, output_tokens: 40, cache_read_input_tokens: 150 },
  };
}

function streamOf(blocks: string[], stopReason: string): string[] {
  return [
    anthropicEvent({
      type: 'message_start',
      message: {
        id: 'msg_2',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5-20250929',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 90, output_tokens: 1, cache_read_input_tokens: 0 },
      },
    }),
    ...blocks,
    anthropicEvent({
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 12 },
    }),
    anthropicEvent({ type: 'message_stop' }),
  ];
}

const textBlock = [
  anthropicEvent({
    type: 'content_block_start',
    index: 0,
    content_block: { type: 'text', text: '' },
  }),
  anthropicEvent({
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text: 'Let me ' },
  }),
  anthropicEvent({
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text: 'check.' },
  }),
  anthropicEvent({ type: 'content_block_stop', index: 0 }),
];

function toolBlock(parts: string[]): string[] {
  return [
    anthropicEvent({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} },
    }),
    ...parts.map((partial_json) =>
      anthropicEvent({
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'input_json_delta', partial_json },
      }),
    ),
    anthropicEvent({ type: 'content_block_stop', index: 1 }),
  ];
}

describe('the AI SDK adapter on the Anthropic Messages wire format', () => {
  it('a plain response maps text, tool_use, usage with cache reads, and the system prompt', async () => {
    wire.reply({
      kind: 'json',
      body: message(
        [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        ],
        'tool_use',
      ),
    });
    const response = await provider().generate(request);
    expect(response).toMatchObject({
      text: 'Let me check.',
      toolCalls: [{ callId: 'toolu_1', tool: 'weather', input: { city: 'Paris' } }],
      invalidToolCalls: [],
      problem: null,
      finishReason: 'tool_calls',
      usage: { outputTokens: 40, cachedInputTokens: 150 },
      costUsd: null,
    });
    const sent = wire.requests[0];
    expect(sent?.path).toBe('/v1/messages');
    expect(sent?.headers['x-api-key']).toBe('test-key');
    const body = sent?.body as { system: unknown; tools: { name: string }[]; stream?: boolean };
    expect(JSON.stringify(body.system)).toContain('You are terse.');
    expect(body.tools.map((t) => t.name)).toEqual(['weather']);
  });

  it('a streamed response yields text and input_json deltas; its finish equals generate', async () => {
    wire.reply({
      kind: 'sse',
      events: streamOf([...textBlock, ...toolBlock(['{"city":', ' "Paris"}'])], 'tool_use'),
    });
    const deltas = await collect(provider().stream(request));
    expect(deltas.filter((d) => d.type === 'text').map((d) => d.text)).toEqual([
      'Let me ',
      'check.',
    ]);
    expect(deltas.filter((d) => d.type === 'tool_call_start')).toEqual([
      { type: 'tool_call_start', callId: 'toolu_1', tool: 'weather' },
    ]);
    expect(deltas.filter((d) => d.type === 'tool_call_input').map((d) => d.inputText)).toEqual([
      '{"city":',
      ' "Paris"}',
    ]);
    const streamed = (deltas.at(-1) as { response: ModelResponse }).response;
    expect(streamed).toMatchObject({
      text: 'Let me check.',
      toolCalls: [{ callId: 'toolu_1', tool: 'weather', input: { city: 'Paris' } }],
      finishReason: 'tool_calls',
      usage: { outputTokens: 12 },
    });

    wire.reply({
      kind: 'json',
      body: {
        ...message(
          [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          ],
          'tool_use',
        ),
        usage:
          streamed.usage.inputTokens === null
            ? {}
            : {
                input_tokens: streamed.usage.inputTokens,
                output_tokens: 12,
                cache_read_input_tokens: 0,
              },
      },
    });
    const generated = await provider().generate(request);
    expect({ ...streamed, latencyMs: 0 }).toEqual({ ...generated, latencyMs: 0 });
  });

  it('streamed tool arguments that never become JSON are an invalid call, kept verbatim', async () => {
    wire.reply({
      kind: 'sse',
      events: streamOf(toolBlock(['{"city": "Par']), 'tool_use'),
    });
    const deltas = await collect(provider().stream(request));
    const response = (deltas.at(-1) as { response: ModelResponse }).response;
    expect(response.toolCalls).toEqual([]);
    expect(response.invalidToolCalls).toMatchObject([
      { callId: 'toolu_1', tool: 'weather', reason: 'input_not_json' },
    ]);
    expect(response.invalidToolCalls[0]?.rawInput).toContain('"Par');
  });

  it('429 with retry-after, 529 overloaded, 500 and a bad key map to typed codes', async () => {
    const err = (type: string, msg: string) => ({ type: 'error', error: { type, message: msg } });
    wire.reply(
      {
        kind: 'json',
        status: 429,
        headers: { 'retry-after': '7' },
        body: err('rate_limit_error', 'slow'),
      },
      {
        kind: 'json',
        status: 529,
        headers: { 'retry-after': '4' },
        body: err('overloaded_error', 'busy'),
      },
      { kind: 'json', status: 500, body: err('api_error', 'boom') },
      { kind: 'json', status: 401, body: err('authentication_error', 'bad key') },
    );
    const p = provider();
    expect(await failure(p.generate(request))).toMatchObject({
      code: 'MODEL_RATE_LIMITED',
      fields: { retryAfterMs: 7_000, status: 429 },
    });
    expect(await failure(p.generate(request))).toMatchObject({
      code: 'MODEL_UNAVAILABLE',
      fields: { status: 529, retryAfterMs: 4_000 },
    });
    expect(await failure(collect(p.stream(request)))).toMatchObject({
      code: 'MODEL_UNAVAILABLE',
      fields: { status: 500 },
    });
    expect(await failure(p.generate(request))).toMatchObject({
      code: 'MODEL_BAD_REQUEST',
      fields: { status: 401 },
    });
  });

  it('an overloaded error inside the stream is MODEL_UNAVAILABLE', async () => {
    wire.reply({
      kind: 'sse',
      events: [
        ...streamOf([], 'end_turn').slice(0, 1),
        anthropicEvent({
          type: 'error',
          error: { type: 'overloaded_error', message: 'Overloaded' },
        } as never),
      ],
    });
    expect(await failure(collect(provider().stream(request)))).toMatchObject({
      code: 'MODEL_UNAVAILABLE',
    });
  });

  it('malformed JSON and a stream cut mid-way are MODEL_BAD_RESPONSE', async () => {
    wire.reply(
      { kind: 'raw', body: '{"type":"message","content":[' },
      { kind: 'sse', events: streamOf(textBlock, 'end_turn'), cutAfter: 3 },
    );
    expect(await failure(provider().generate(request))).toMatchObject({
      code: 'MODEL_BAD_RESPONSE',
    });
    const seen: ModelDelta[] = [];
    const cut = await failure(
      (async () => {
        for await (const delta of provider().stream(request)) seen.push(delta);
      })(),
    );
    expect(cut).toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
    expect(seen).toContainEqual({ type: 'text', text: 'Let me ' });
    expect(seen.map((d) => d.type)).not.toContain('finish');
  });

  it('a first byte slower than timeoutMs is MODEL_TIMEOUT', async () => {
    wire.reply({ kind: 'hang' }, { kind: 'hang' });
    const p = provider({ timeoutMs: 150, generateTimeoutMs: 150 });
    expect(await failure(p.generate(request))).toMatchObject({ code: 'MODEL_TIMEOUT' });
    expect(await failure(collect(p.stream(request)))).toMatchObject({ code: 'MODEL_TIMEOUT' });
  });

  it('a stream the server ends cleanly before message_stop is MODEL_BAD_RESPONSE, not a finish', async () => {
    // message_start, the text block's start, one text delta; then res.end().
    wire.reply({ kind: 'sse', events: streamOf(textBlock, 'end_turn').slice(0, 3) });
    const seen: ModelDelta[] = [];
    const cut = await failure(
      (async () => {
        for await (const delta of provider().stream(request)) seen.push(delta);
      })(),
    );
    expect(cut).toMatchObject({ code: 'MODEL_BAD_RESPONSE' });
    expect(seen).toEqual([{ type: 'text', text: 'Let me ' }]);
  });

  it('reasoning parts longer than timeoutMs do not time out: any part stops the first-byte timer', async () => {
    const thinking = [
      anthropicEvent({
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      }),
      ...['Hmm', ' the', ' weather', ' in', ' Paris'].map((thought) =>
        anthropicEvent({
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'thinking_delta', thinking: thought },
        }),
      ),
      anthropicEvent({
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: 'sig' },
      }),
      anthropicEvent({ type: 'content_block_stop', index: 0 }),
    ];
    const answer = textBlock.map((event) => event.replaceAll('"index":0', '"index":1'));
    // 8 gaps of 100 ms: the first text delta comes long after the 300 ms first-byte timeout.
    wire.reply({ kind: 'sse', events: streamOf([...thinking, ...answer], 'end_turn'), gapMs: 100 });
    const deltas = await collect(provider({ timeoutMs: 300 }).stream(request));
    expect(deltas.at(-1)).toMatchObject({ type: 'finish', response: { text: 'Let me check.' } });
  });

  it('a stream that stalls after its first delta is MODEL_TIMEOUT after idleTimeoutMs', async () => {
    wire.reply({ kind: 'sse', events: streamOf(textBlock, 'end_turn'), stallAfter: 3 });
    const seen: ModelDelta[] = [];
    const stalled = await failure(
      (async () => {
        for await (const delta of provider({ idleTimeoutMs: 150 }).stream(request)) {
          seen.push(delta);
        }
      })(),
    );
    expect(stalled).toMatchObject({
      code: 'MODEL_TIMEOUT',
      fields: { option: 'idleTimeoutMs', timeoutMs: 150 },
    });
    expect(seen).toEqual([{ type: 'text', text: 'Let me ' }]);
  });
});

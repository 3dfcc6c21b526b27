import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { collectResponse } from '../collect-response.js';
import { isLoomError } from '../errors.js';
import type { ModelDelta, ModelRequest } from '../model-provider.js';
import { advancingTimer, StubModel, stubRequestsKept, stubTokens } from './stub-model.js';

const tools = [{ name: 'search', description: 'Search', inputSchema: { type: 'object' } }];
const request: ModelRequest = { messages: [{ role: 'user', content: 'find loom' }], tools };

function stub(options: Partial<ConstructorParameters<typeof StubModel>[0]> = {}) {
  const clock = new ManualClock();
  const model = new StubModel({
    script: [{ text: 'Hello there, world.' }],
    clock,
    setTimer: advancingTimer(clock),
    ...options,
  });
  return { clock, model };
}

describe('StubModel', () => {
  it('answers its script in order, with deterministic call ids and token usage', async () => {
    const { model } = stub({
      script: [{ toolCalls: [{ tool: 'search', input: { q: 'loom' } }] }, { text: 'Done.' }],
    });
    const first = await model.generate(request);
    expect(first.toolCalls).toEqual([{ callId: 'stub-0-0', tool: 'search', input: { q: 'loom' } }]);
    expect(first.finishReason).toBe('tool_calls');
    expect(first.usage).toEqual({
      inputTokens: stubTokens(JSON.stringify([request.messages, tools])),
      outputTokens: stubTokens('search{"q":"loom"}'),
      cachedInputTokens: 0,
    });
    const second = await model.generate(request);
    expect(second).toMatchObject({ text: 'Done.', finishReason: 'stop', problem: null });
    expect(model.calls).toBe(2);
    const third = await model.generate(request).catch((error: unknown) => error);
    expect(isLoomError(third, 'STUB_SCRIPT_EXHAUSTED')).toBe(true);
  });

  it('a function script answers from the request and the call index', async () => {
    const { model } = stub({
      script: (req, index) => ({ text: `${index}:${req.messages.length}` }),
    });
    expect((await model.generate(request)).text).toBe('0:1');
    expect((await model.generate(request)).text).toBe('1:1');
  });

  it("a function script may answer with a promise, and its rejection is the call's", async () => {
    const { model } = stub({
      script: async (_req, index) => {
        if (index === 1) throw new Error('script broke');
        return { toolCalls: [{ tool: 'search', input: { q: 'later' } }] };
      },
    });
    const streamed = await collectResponse(model.stream(request));
    expect(streamed.toolCalls).toEqual([
      { callId: 'stub-0-0', tool: 'search', input: { q: 'later' } },
    ]);
    await expect(model.generate(request)).rejects.toThrow('script broke');
  });

  it('latency is simulated on the injected clock and reported exactly', async () => {
    const { model, clock } = stub({
      latencyMs: 50,
      script: [{ text: 'a' }, { text: 'b', latencyMs: 7 }],
    });
    const before = clock.now();
    const first = await model.generate(request);
    expect(first.latencyMs).toBe(50);
    expect(clock.now() - before).toBe(50);
    expect((await model.generate(request)).latencyMs).toBe(7);
  });

  it("a stream's deltas rebuild the text, and its finish equals generate's answer", async () => {
    const turns = [
      { text: 'Hello there, world.', toolCalls: [{ tool: 'search', input: { q: 'x' } }] },
    ];
    const deltas: ModelDelta[] = [];
    for await (const delta of stub({ script: turns }).model.stream(request)) deltas.push(delta);
    const text = deltas.flatMap((d) => (d.type === 'text' ? [d.text] : [])).join('');
    expect(text).toBe('Hello there, world.');
    expect(deltas.filter((d) => d.type === 'text').length).toBeGreaterThan(1);
    expect(deltas.at(-1)?.type).toBe('finish');
    const generated = await stub({ script: turns }).model.generate(request);
    expect(await collectResponse(stub({ script: turns }).model.stream(request))).toEqual(generated);
  });

  it('arguments that are JSON but not an object are an invalid call (input_not_object)', async () => {
    const { model } = stub({
      script: [
        {
          toolCalls: [
            { tool: 'search', rawInput: '5' },
            { tool: 'search', rawInput: 'null' },
            { tool: 'search', rawInput: '[1]' },
            { tool: 'search', rawInput: '"q"' },
            { tool: 'search', rawInput: '{"q":"x"}' },
          ],
        },
      ],
    });
    const response = await model.generate(request);
    expect(response.invalidToolCalls.map((c) => [c.rawInput, c.reason])).toEqual([
      ['5', 'input_not_object'],
      ['null', 'input_not_object'],
      ['[1]', 'input_not_object'],
      ['"q"', 'input_not_object'],
    ]);
    expect(response.invalidToolCalls[0]?.message).toContain('JSON object');
    expect(response.toolCalls.map((c) => c.input)).toEqual([{ q: 'x' }]);
  });

  it('keeps only the last stubRequestsKept requests, so a long benchmark does not grow it', async () => {
    const { model } = stub({ script: () => ({ text: 'ok' }) });
    for (let i = 0; i < stubRequestsKept + 5; i++) {
      await model.generate({ messages: [{ role: 'user', content: `q${i}` }] });
    }
    expect(model.calls).toBe(stubRequestsKept + 5);
    expect(model.requests).toHaveLength(stubRequestsKept);
    expect(model.requests[0]?.messages[0]?.content).toBe('q5');
    expect(model.requests.at(-1)?.messages[0]?.content).toBe(`q${stubRequestsKept + 4}`);
  });

  it('scripted bad output becomes invalid calls and problems', async () => {
    const { model } = stub({
      script: [
        {
          toolCalls: [
            { tool: 'search', rawInput: '{"q":' },
            { tool: 'nope', input: {} },
          ],
        },
        {},
        { text: 'no call' },
      ],
    });
    const bad = await model.generate(request);
    expect(bad.invalidToolCalls.map((c) => c.reason)).toEqual(['input_not_json', 'unknown_tool']);
    expect(bad.problem?.kind).toBe('invalid_tool_calls');
    expect((await model.generate(request)).problem?.kind).toBe('empty');
    const required = await model.generate({ ...request, toolChoice: { tool: 'search' } });
    expect(required.problem?.kind).toBe('tool_call_required');
  });

  it('scripted failures throw the typed error, in a stream after the given deltas', async () => {
    const { model } = stub({
      script: [
        { fail: { code: 'MODEL_RATE_LIMITED', retryAfterMs: 300 } },
        { text: 'one two three', fail: { code: 'MODEL_UNAVAILABLE', afterDeltas: 2 } },
      ],
    });
    const limited = await model.generate(request).catch((error: unknown) => error);
    expect(limited).toMatchObject({ code: 'MODEL_RATE_LIMITED', fields: { retryAfterMs: 300 } });
    const seen: ModelDelta[] = [];
    const cut = await (async () => {
      for await (const delta of model.stream(request)) seen.push(delta);
    })().catch((error: unknown) => error);
    expect(cut).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    expect(seen).toHaveLength(2);
  });

  it('costs follow the price table, and are null (unknown) without one', async () => {
    const priced = stub({
      script: [{ text: 'abcd' }],
      model: 'm1',
      prices: { m1: { inputUsdPerMTok: 3, outputUsdPerMTok: 15 } },
    }).model;
    const answer = await priced.generate(request);
    const input = answer.usage.inputTokens as number;
    expect(answer.costUsd).toBeCloseTo((input * 3 + 1 * 15) / 1e6, 12);
    expect((await stub().model.generate(request)).costUsd).toBeNull();
  });

  it('refuses a tool choice naming a tool the request does not offer', async () => {
    const error = await stub()
      .model.generate({ ...request, toolChoice: { tool: 'ghost' } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', fields: { option: 'toolChoice' } });
  });

  it('an aborted request rejects with its reason and records nothing more', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const error = await stub()
      .model.generate({ ...request, signal: controller.signal })
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe('stop');
  });
});

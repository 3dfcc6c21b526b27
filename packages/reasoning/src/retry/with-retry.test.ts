import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { collectResponse } from '../collect-response.js';
import type { ModelDelta, ModelRequest } from '../model-provider.js';
import { StubModel, type StubTurn } from '../stub/stub-model.js';
import { withRetry } from './with-retry.js';

const request: ModelRequest = { messages: [{ role: 'user', content: 'hi' }] };

function setup(script: StubTurn[], attempts = 3, retryAfterMsMax?: number) {
  const time = new ManualClock();
  const model = new StubModel({ script });
  const retried = withRetry(model, {
    attempts,
    backoff: { initialMs: 100, factor: 2, jitter: 'none' },
    clock: time,
    ...(retryAfterMsMax !== undefined ? { retryAfterMsMax } : {}),
  });
  return { time, model, retried };
}

describe('withRetry', () => {
  it('retries a rate limit after the retry-after it asked for, then the backoff', async () => {
    const { time, model, retried } = setup([
      { fail: { code: 'MODEL_RATE_LIMITED', retryAfterMs: 2_000 } },
      { fail: { code: 'MODEL_UNAVAILABLE' } },
      { text: 'ok' },
    ]);
    const pending = retried.generate(request);
    await time.runAll();
    expect((await pending).text).toBe('ok');
    expect(model.calls).toBe(3);
    // 2 000 asked by the server before the first backoff (100); the 503 waits the backoff (200).
    expect(time.delaysMs).toEqual([2_000, 100, 200]);
  });

  it('honours the retry-after of an outage (a 503 or 529 may carry one) too', async () => {
    const { time, model, retried } = setup([
      { fail: { code: 'MODEL_UNAVAILABLE', retryAfterMs: 1_500 } },
      { text: 'ok' },
    ]);
    const pending = retried.generate(request);
    await time.runAll();
    expect((await pending).text).toBe('ok');
    expect(model.calls).toBe(2);
    expect(time.delaysMs).toEqual([1_500, 100]);
  });

  it('does not retry a bad request or a bad response', async () => {
    const { time, model, retried } = setup([
      { fail: { code: 'MODEL_BAD_REQUEST' } },
      { text: 'never' },
    ]);
    const error = await retried.generate(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MODEL_BAD_REQUEST' });
    expect(model.calls).toBe(1);
    expect(time.delaysMs).toEqual([]);
  });

  it('after the last attempt the caller sees the model code with the attempt count', async () => {
    const { time, retried } = setup(
      [{ fail: { code: 'MODEL_UNAVAILABLE' } }, { fail: { code: 'MODEL_UNAVAILABLE' } }],
      2,
    );
    const pending = retried.generate(request).catch((e: unknown) => e);
    await time.runAll();
    expect(await pending).toMatchObject({ code: 'MODEL_UNAVAILABLE', fields: { attempts: 2 } });
  });

  it('a retry-after over the cap goes straight to the caller (a router can move on)', async () => {
    const { model, retried } = setup(
      [{ fail: { code: 'MODEL_RATE_LIMITED', retryAfterMs: 3_600_000 } }, { text: 'late' }],
      3,
      60_000,
    );
    const error = await retried.generate(request).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'MODEL_RATE_LIMITED',
      fields: { retryAfterMs: 3_600_000 },
    });
    expect(model.calls).toBe(1);
  });

  it('a stream is retried before its first delta, never after', async () => {
    const before = setup([{ fail: { code: 'MODEL_UNAVAILABLE' } }, { text: 'fine now' }]);
    const pending = collectResponse(before.retried.stream(request));
    await before.time.runAll();
    expect((await pending).text).toBe('fine now');
    expect(before.model.calls).toBe(2);

    const after = setup([
      { text: 'one two three', fail: { code: 'MODEL_UNAVAILABLE', afterDeltas: 1 } },
      { text: 'never' },
    ]);
    const seen: ModelDelta[] = [];
    const error = await (async () => {
      for await (const delta of after.retried.stream(request)) seen.push(delta);
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    expect(seen).toEqual([{ type: 'text', text: 'one ' }]);
    expect(after.model.calls).toBe(1);
  });
});

import { describe, expect, it } from 'vitest';
import { collectResponse } from '../collect-response.js';
import type { ModelDelta, ModelRequest } from '../model-provider.js';
import { StubModel, type StubTurn } from '../stub/stub-model.js';
import { createRouter } from './create-router.js';

const ask = (tags: string[]): ModelRequest => ({
  messages: [{ role: 'user', content: 'q' }],
  tags,
});
const model = (id: string, script: StubTurn[]) => new StubModel({ id, script });

describe('createRouter', () => {
  it('picks the first route carrying every requested tag, in route order', async () => {
    const big = model('big', [{ text: 'from big' }]);
    const small = model('small', [{ text: 'from small' }, { text: 'again' }]);
    const router = createRouter([
      { provider: big, tags: ['smart'] },
      { provider: small, tags: ['smart', 'cheap'] },
    ]);
    expect((await router.generate(ask(['cheap', 'smart']))).provider).toBe('small');
    expect((await router.generate(ask(['smart']))).provider).toBe('big');
    expect(router.candidates(['smart']).map((r) => r.id)).toEqual(['big', 'small']);
    expect(router.candidates([]).map((r) => r.id)).toEqual(['big', 'small']);
    expect(router.candidates(['smart', 'fast'])).toEqual([]);
    const error = await router.generate(ask(['fast'])).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NO_ROUTE', fields: { tags: ['fast'] } });
  });

  it('falls back on MODEL_UNAVAILABLE and rate limits, recording each route it left', async () => {
    const a = model('a', [{ fail: { code: 'MODEL_UNAVAILABLE' } }]);
    const b = model('b', [{ fail: { code: 'MODEL_RATE_LIMITED', retryAfterMs: 500 } }]);
    const c = model('c', [{ text: 'c answers' }]);
    const router = createRouter([
      { provider: a, tags: ['t'] },
      { provider: b, tags: ['t'] },
      { provider: c, tags: ['t'] },
    ]);
    const answer = await router.generate(ask(['t']));
    expect(answer.text).toBe('c answers');
    expect(answer.fallbacks.map((f) => [f.route, f.code])).toEqual([
      ['a', 'MODEL_UNAVAILABLE'],
      ['b', 'MODEL_RATE_LIMITED'],
    ]);
    expect([a.calls, b.calls, c.calls]).toEqual([1, 1, 1]);
  });

  it('does not fall back on a bad request; when every route fails it says so with the trail', async () => {
    const bad = createRouter([
      { provider: model('a', [{ fail: { code: 'MODEL_BAD_REQUEST' } }]), tags: [] },
      { provider: model('b', [{ text: 'unused' }]), tags: [] },
    ]);
    expect(await bad.generate(ask([])).catch((e: unknown) => e)).toMatchObject({
      code: 'MODEL_BAD_REQUEST',
    });
    const down = createRouter([
      { provider: model('a', [{ fail: { code: 'MODEL_UNAVAILABLE' } }]), tags: [] },
      {
        provider: model('a', [{ fail: { code: 'MODEL_RATE_LIMITED', retryAfterMs: 9 } }]),
        tags: [],
      },
    ]);
    const error = await down.generate(ask([])).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'MODEL_RATE_LIMITED',
      fields: { retryAfterMs: 9, provider: 'a#2' },
    });
    expect((error as { fields: { fallbacks: unknown[] } }).fields.fallbacks).toHaveLength(2);
  });

  it('a stream falls back before its first delta, and never after', async () => {
    const before = createRouter([
      { provider: model('a', [{ text: 'x', fail: { code: 'MODEL_UNAVAILABLE' } }]), tags: [] },
      { provider: model('b', [{ text: 'b streams' }]), tags: [] },
    ]);
    const answer = await collectResponse(before.stream(ask([])));
    expect(answer.provider).toBe('b');
    expect(answer.fallbacks.map((f) => f.route)).toEqual(['a']);

    const second = model('b', [{ text: 'never' }]);
    const after = createRouter([
      {
        provider: model('a', [
          { text: 'one two', fail: { code: 'MODEL_UNAVAILABLE', afterDeltas: 1 } },
        ]),
        tags: [],
      },
      { provider: second, tags: [] },
    ]);
    const seen: ModelDelta[] = [];
    const error = await (async () => {
      for await (const delta of after.stream(ask([]))) seen.push(delta);
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' });
    expect(seen).toEqual([{ type: 'text', text: 'one ' }]);
    expect(second.calls).toBe(0);
  });

  it('warm() warms each provider of the matching routes once', async () => {
    const shared = model('s', []);
    const other = model('o', []);
    const router = createRouter([
      { provider: shared, tags: ['x'] },
      { provider: shared, tags: ['x', 'y'] },
      { provider: other, tags: ['z'] },
    ]);
    await router.warm(['x']);
    expect([shared.warms, other.warms]).toEqual([1, 0]);
    await router.warm();
    expect([shared.warms, other.warms]).toEqual([2, 1]);
  });

  it('the index answers like a linear scan over random routes and tag sets', () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const pool = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const pick = (n: number) => pool.filter(() => next() < n / pool.length);
    const routes = Array.from({ length: 200 }, (_, i) => ({
      provider: model(`p${i}`, []),
      tags: pick(3),
    }));
    const router = createRouter(routes);
    for (let query = 0; query < 500; query++) {
      const tags = pick(1.5);
      const linear = routes.filter((r) => tags.every((t) => r.tags.includes(t)));
      expect(router.candidates(tags).map((r) => r.provider)).toEqual(linear.map((r) => r.provider));
    }
  });
});

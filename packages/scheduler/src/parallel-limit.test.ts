import { describe, expect, it, vi } from 'vitest';
import { isLoomError, type LoomError } from './errors.js';
import { ConcurrencyProbe, type Deferred, deferred, settle } from './internal/test-helpers.js';
import { parallelLimit } from './parallel-limit.js';

describe('parallelLimit: results and limits', () => {
  it('returns results in input order, not completion order', async () => {
    const gates = Array.from({ length: 6 }, () => deferred<number>());
    const result = parallelLimit([0, 1, 2, 3, 4, 5], 6, (i) => gates[i]!.promise);
    for (const i of [5, 3, 1, 0, 4, 2]) gates[i]!.resolve(i * 10);
    await expect(result).resolves.toEqual([0, 10, 20, 30, 40, 50]);
  });

  it.each([1, 2, 5])('keeps at most limit = %i calls in flight', async (limit) => {
    const probe = new ConcurrencyProbe();
    const items = Array.from({ length: 30 }, (_, i) => i);
    const result = await parallelLimit(items, limit, async (item, index) => {
      probe.enter();
      for (let turn = 0; turn < (item % 3) + 1; turn++) await settle();
      probe.leave();
      return index * 2;
    });
    expect(result).toEqual(items.map((i) => i * 2));
    expect(probe.maxActive).toBe(limit);
    expect(probe.started).toBe(30);
  });

  it('Infinity (or a limit at or above the item count) starts every call at once', async () => {
    for (const limit of [Number.POSITIVE_INFINITY, 10, 1000]) {
      const gates: Deferred<void>[] = [];
      const result = parallelLimit(
        Array.from({ length: 10 }, (_, i) => i),
        limit,
        async (i) => {
          const gate = deferred();
          gates.push(gate);
          await gate.promise;
          return i;
        },
      );
      expect(gates).toHaveLength(10);
      for (const gate of gates) gate.resolve();
      await expect(result).resolves.toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
  });

  it('accepts any iterable and an empty one', async () => {
    await expect(
      parallelLimit(new Set(['a', 'b']), 1, async (s) => s.toUpperCase()),
    ).resolves.toEqual(['A', 'B']);
    function* numbers() {
      yield 1;
      yield 2;
      yield 3;
    }
    await expect(parallelLimit(numbers(), 2, async (n) => n + 1)).resolves.toEqual([2, 3, 4]);
    let calls = 0;
    await expect(
      parallelLimit([], 3, async () => {
        calls++;
      }),
    ).resolves.toEqual([]);
    expect(calls).toBe(0);
  });

  it('passes the item, its index and one shared signal', async () => {
    const signals = new Set<AbortSignal>();
    const seen: [string, number][] = [];
    await parallelLimit(['x', 'y', 'z'], 2, async (item, index, { signal }) => {
      seen.push([item, index]);
      signals.add(signal);
    });
    expect(seen).toEqual([
      ['x', 0],
      ['y', 1],
      ['z', 2],
    ]);
    expect(signals.size).toBe(1);
    expect([...signals][0]?.aborted).toBe(false);
  });
});

describe.each([
  ['bounded', 2],
  ['unbounded', Number.POSITIVE_INFINITY],
])('parallelLimit (%s): failure', (_label, limit) => {
  it('rejects with the first error, starts nothing more, and aborts the calls in flight', async () => {
    const gates = Array.from({ length: 6 }, () => deferred<number>());
    const started: number[] = [];
    const aborted: number[] = [];
    const result = parallelLimit([0, 1, 2, 3, 4, 5], limit, (i, _index, { signal }) => {
      started.push(i);
      signal.addEventListener('abort', () => aborted.push(i));
      return gates[i]!.promise;
    });
    const failure = new Error('item 1 failed');
    gates[1]!.reject(failure);
    await expect(result).rejects.toBe(failure);
    await settle();
    // One signal is shared, so every started call's listener fires, the failed one's included.
    expect(aborted).toEqual(started);
    expect(started).toHaveLength(limit === 2 ? 2 : 6);
    // Calls still in flight may settle either way later; that changes nothing and is not unhandled.
    gates[0]!.reject(new Error('late failure'));
    for (const i of [2, 3, 4, 5]) gates[i]!.resolve(i);
    await settle();
    expect(started).toHaveLength(limit === 2 ? 2 : 6);
  });

  it('the in-flight calls see a SCHEDULE_ABORTED reason whose cause is the failure', async () => {
    const failure = new Error('boom');
    let reason: unknown;
    const result = parallelLimit([0, 1, 2], limit, (i, _index, { signal }) => {
      if (i === 0) {
        return new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            resolve(0);
          });
        });
      }
      return Promise.reject(failure);
    });
    await expect(result).rejects.toBe(failure);
    expect(isLoomError(reason, 'SCHEDULE_ABORTED')).toBe(true);
    expect((reason as LoomError).cause).toBe(failure);
  });

  it('a synchronous throw is a failure and stops further starts at once', async () => {
    let calls = 0;
    const result = parallelLimit([0, 1, 2, 3], limit, (i) => {
      calls++;
      if (i === 1) throw new Error('sync');
      return new Promise<number>(() => {});
    });
    await expect(result).rejects.toThrow('sync');
    expect(calls).toBe(2);
  });

  it("the caller's signal rejects with SCHEDULE_ABORTED, aborts calls in flight, starts no more", async () => {
    const controller = new AbortController();
    let started = 0;
    let sawAbort = 0;
    const result = parallelLimit(
      [0, 1, 2, 3, 4],
      limit,
      (_i, _index, { signal }) => {
        started++;
        return new Promise<number>((resolve) => {
          signal.addEventListener('abort', () => {
            sawAbort++;
            resolve(0);
          });
        });
      },
      { signal: controller.signal },
    );
    const startedBefore = started;
    controller.abort('enough');
    const error = await result.catch((e: unknown) => e as LoomError);
    expect(isLoomError(error, 'SCHEDULE_ABORTED')).toBe(true);
    expect((error as LoomError).cause).toBe('enough');
    await settle();
    expect(started).toBe(startedBefore);
    expect(sawAbort).toBe(startedBefore);
  });

  it('stops listening on the caller signal once done', async () => {
    const controller = new AbortController();
    const add = vi.spyOn(controller.signal, 'addEventListener');
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    await parallelLimit([1, 2, 3], limit, async (n) => n, { signal: controller.signal });
    await parallelLimit(
      [1, 2, 3],
      limit,
      async (n) => {
        if (n === 2) throw new Error('x');
        return n;
      },
      { signal: controller.signal },
    ).catch(() => {});
    expect(add).toHaveBeenCalledTimes(2);
    expect(remove).toHaveBeenCalledTimes(2);
  });
});

describe('parallelLimit: the lazy signal', () => {
  it('calls that never read context.signal make no AbortController', async () => {
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        made++;
      }
    };
    try {
      await parallelLimit([1, 2, 3], Number.POSITIVE_INFINITY, async (n) => n);
      await parallelLimit([1, 2, 3], 1, async (n) => n);
      expect(made).toBe(0);
      await parallelLimit([1, 2, 3], 2, async (n, _index, { signal }) => (signal.aborted ? 0 : n));
      expect(made).toBe(1);
    } finally {
      globalThis.AbortController = Original;
    }
  });

  it('a signal first read after a failure is already aborted, with the same reason', async () => {
    const gate = deferred();
    const failure = new Error('first');
    let late: AbortSignal | undefined;
    const result = parallelLimit([0, 1], 2, async (i, _index, context) => {
      if (i === 0) throw failure;
      await gate.promise;
      late = context.signal;
    });
    await expect(result).rejects.toBe(failure);
    gate.resolve();
    await settle();
    expect(late?.aborted).toBe(true);
    expect((late!.reason as LoomError).cause).toBe(failure);
  });
});

describe('parallelLimit: bad input', () => {
  it('a signal aborted before the call rejects with SCHEDULE_ABORTED and calls nothing', async () => {
    let calls = 0;
    const error = await parallelLimit(
      [1, 2],
      1,
      async () => {
        calls++;
      },
      { signal: AbortSignal.abort('early') },
    ).catch((e: unknown) => e);
    expect(isLoomError(error, 'SCHEDULE_ABORTED')).toBe(true);
    expect(calls).toBe(0);
  });

  it.each([
    ['limit', [1], 0, async () => {}],
    ['limit', [1], -1, async () => {}],
    ['limit', [1], Number.NaN, async () => {}],
    ['limit', [1], 1.5, async () => {}],
    ['limit', [1], '2', async () => {}],
    ['limit', [1], Number.NEGATIVE_INFINITY, async () => {}],
    ['fn', [1], 1, 'not a function'],
    ['fn', [1], 1, undefined],
    ['items', null, 1, async () => {}],
    ['items', 42, 1, async () => {}],
  ])('a bad %s rejects with INVALID_ARGUMENT', async (argument, items, limit, fn) => {
    const error = await parallelLimit(items as never, limit as never, fn as never).catch(
      (e: unknown) => e as LoomError,
    );
    expect(isLoomError(error, 'INVALID_ARGUMENT')).toBe(true);
    expect((error as LoomError).fields.argument).toBe(argument);
  });

  it('a bad signal option rejects with INVALID_ARGUMENT', async () => {
    const error = await parallelLimit([1], 1, async () => {}, { signal: 'stop' as never }).catch(
      (e: unknown) => e as LoomError,
    );
    expect((error as LoomError).fields.argument).toBe('signal');
  });
});

import { ForwardingEventStore, InMemoryEventStore, type ReadOptions } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import { cleanupsAfterEach, codeOf, testBackends, until } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { defineQuery } from './define-query.js';
import { defineUpdate } from './define-update.js';
import { createRuntime, type Runtime } from './flow-runtime.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** A schema of `T` checking with `check` at run time. */
function schemaOf<T>(check: (value: unknown) => string | undefined): StandardSchemaV1<T, T> {
  return {
    '~standard': {
      version: 1,
      vendor: 'loom-test',
      validate: (value) => {
        const problem = check(value);
        return problem === undefined ? { value: value as T } : { issues: [{ message: problem }] };
      },
    },
  };
}

const skuSchema = schemaOf<{ sku: string }>((value) =>
  typeof (value as { sku?: unknown })?.sku === 'string' ? undefined : 'sku must be a string',
);
const prefixSchema = schemaOf<string>((value) =>
  typeof value === 'string' ? undefined : 'a string',
);

const itemCount = defineQuery<void, number>('item-count');
const itemsStarting = defineQuery<string, string[]>('items-starting', { arg: prefixSchema });
const neverRegistered = defineQuery<void, number>('never-registered');
const addItem = defineUpdate<{ sku: string }, { count: number }>('add-item', {
  arg: skuSchema,
  validate: (arg) => (arg.sku === 'banned' ? 'that sku is banned' : undefined),
});

/** Effects the cart ran, per sku: a query must never run one. */
const priced: string[] = [];

/** Takes up to three items by update, pricing each in a step; answers each with the count. */
const cart = defineFlow({ name: 'cart' }, async (ctx) => {
  const items: string[] = [];
  ctx.onQuery(itemCount, () => items.length);
  ctx.onQuery(itemsStarting, (prefix) => items.filter((item) => item.startsWith(prefix)));
  while (items.length < 3) {
    const request = await ctx.waitForUpdate(addItem, { timeout: '1h' });
    if (!request.received) break;
    await ctx.step(`price-${request.updateId}`, () => {
      priced.push(request.arg.sku);
      return request.arg.sku.length;
    });
    items.push(request.arg.sku);
    await request.answer({ count: items.length });
  }
  return items;
});

/** Opens while the test holds it: the step `slow` of `gated` waits here. */
let gate: { open(): void; opened: Promise<void> } = newGate();
function newGate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

const stage = defineQuery<void, string>('stage');
/** A flow driven by the test's runtime that sits inside a step's effect until the gate opens. */
const gated = defineFlow({ name: 'gated' }, async (ctx) => {
  let at = 'before';
  ctx.onQuery(stage, () => at);
  at = await ctx.step('first', () => 'after first');
  await ctx.step('slow', () => gate.opened.then(() => 'slow done'));
  at = 'after slow';
  return at;
});
/** Two versions of one flow's code: the second asks for another step where the log has `one`. */
const drifted = [
  defineFlow({ name: 'drift' }, async (ctx) => {
    ctx.onQuery(stage, () => 'old code');
    await ctx.step('one', () => 1);
    await ctx.waitForSignal('never');
  }),
  defineFlow({ name: 'drift' }, async (ctx) => {
    ctx.onQuery(stage, () => 'new code');
    await ctx.step('renamed', () => 1);
    await ctx.waitForSignal('never');
  }),
] as const;
/** Catches a failed step and a timed-out signal wait: a replay must take both paths again. */
const recovers = defineFlow({ name: 'recovers' }, async (ctx) => {
  const seen: string[] = [];
  ctx.onQuery(stage, () => seen.join(', '));
  try {
    await ctx.step('charge', () => {
      throw new Error('card declined');
    });
  } catch (error) {
    seen.push(
      `${(error as { code: string }).code} ${(error as Error).message.includes('card declined')}`,
    );
  }
  const wait = await ctx.waitForSignal('late', { timeout: '1m' });
  seen.push(wait.received ? 'signal' : 'timed out');
  seen.push(`${ctx.random() < 1}`);
  await ctx.waitForSignal('never');
});
const strictAnswer = defineUpdate<void, number>('strict', {
  result: schemaOf<number>((value) => (typeof value === 'number' ? undefined : 'a number')),
});
const wrongAnswer = defineFlow({ name: 'wrong-answer' }, async (ctx) => {
  const request = await ctx.waitForUpdate(strictAnswer);
  if (!request.received) return 'none';
  try {
    await request.answer('not a number' as never);
  } catch (error) {
    return (error as { code: string }).code;
  }
  return 'answered';
});

/** Answers per its argument: a number, a value its result schema refuses, or a throw. */
const pick = defineQuery<string, number>('pick', {
  result: schemaOf<number>((value) => (typeof value === 'number' ? undefined : 'a number')),
});
const picky = defineFlow({ name: 'picky', version: '3' }, async (ctx) => {
  ctx.onQuery(pick, (arg) => {
    if (arg === 'throw') throw new Error('no such field');
    if (arg === 'throw-string') throw 'plain refusal';
    if (arg === 'text') return 'forty-two' as never;
    return 42;
  });
  await ctx.waitForSignal('never');
});
/** An update whose validator throws (an Error, or not one) instead of returning a refusal. */
const guarded = defineUpdate<string, string>('guarded', {
  validate: (arg) => {
    if (arg === 'error') throw new Error('validator crashed');
    throw 'validator threw a string';
  },
});
const raw = defineUpdate<void, unknown>('raw');
/** Answers its update with a value that is not JSON: the answer's step fails, the flow goes on. */
const badAnswer = defineFlow({ name: 'bad-answer' }, async (ctx) => {
  const request = await ctx.waitForUpdate(raw);
  if (!request.received) return 'none';
  try {
    await request.answer({ big: 10n });
  } catch (error) {
    return (error as { code: string }).code;
  }
  return 'answered';
});

/** Compile-time checks, never run: each `@ts-expect-error` fails the build if its line compiles. */
export function callerTypes(runtime: Runtime): void {
  void runtime.query(itemCount, 'c').then((count: number) => count);
  void runtime.query(itemsStarting, 'c', 'a');
  // @ts-expect-error the argument is the query's
  void runtime.query(itemsStarting, 'c', 7);
  void runtime.update(addItem, 'c', { sku: 'a' }).then((answer) => answer.count);
  // @ts-expect-error the argument is the update's
  void runtime.update(addItem, 'c', { sku: 1 });
}

for (const [backend, open] of testBackends('queries')) {
  describe(`queries and updates on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();
    const make = async () => {
      const clock = new ManualClock();
      const made = await open(clock);
      const store = made.store;
      const runtime = createRuntime({
        store,
        clock,
        flows: [cart, gated, drifted[0], wrongAnswer, recovers, picky, badAnswer],
        timerPollMs: 0,
        inlineWaitMs: 0,
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await made.drop();
        await store.close();
      });
      /** Resolves once this node stopped driving `id` (it suspended). */
      const suspended = (id: string) =>
        until(`${id} suspends`, () => !runtime.activeExecutions.includes(id));
      /** Sends an update, wakes the execution once its inbox has it, returns the answer. */
      const updated = async (id: string, sku: string, updateId: string) => {
        const signals = (await store.readSignals(id)).length;
        const answer = runtime.update(addItem, id, { sku }, { updateId });
        let answered = false;
        const settle = () => {
          answered = true;
        };
        answer.then(settle, settle);
        await until('the update is journaled', async () => {
          return (await store.readSignals(id)).length > signals;
        });
        // wakeDue lists what it resumed and still drives: a run that took the update, answered
        // and suspended again before wakeDue looked is not listed (failed once on a loaded
        // Postgres run: "c-2 wakes: not within 20 s"), so its answer also counts as woken.
        await until(
          `${id} wakes`,
          async () => answered || (await runtime.wakeDue(10)).includes(id),
        );
        return answer;
      };
      const events = async (id: string) => (await store.read(id)).length;
      return { runtime, store, clock, suspended, updated, events, made };
    };

    it('an update is answered by the flow, and a query reads the state it left, writing nothing', async () => {
      const { runtime, suspended, updated, events } = await make();
      priced.length = 0;
      await runtime.start(cart, undefined as never, { executionId: 'c-1' });
      await suspended('c-1');
      expect(await runtime.query(itemCount, 'c-1')).toBe(0);
      expect(await updated('c-1', 'apple', 'u-1')).toEqual({ count: 1 });
      await suspended('c-1');
      expect(await updated('c-1', 'avocado', 'u-2')).toEqual({ count: 2 });
      await suspended('c-1');
      const before = await events('c-1');
      expect(await runtime.query(itemCount, 'c-1')).toBe(2);
      expect(await runtime.query(itemsStarting, 'c-1', 'ap')).toEqual(['apple']);
      // The replay ran no effect and wrote nothing.
      expect(priced).toEqual(['apple', 'avocado']);
      expect(await events('c-1')).toBe(before);
      expect(await runtime.status('c-1')).toBe('running');
    });

    it('a second update with the same id writes nothing and gets the same answer', async () => {
      const { runtime, store, suspended, updated, events } = await make();
      priced.length = 0;
      await runtime.start(cart, undefined as never, { executionId: 'c-2' });
      await suspended('c-2');
      expect(await updated('c-2', 'pear', 'same')).toEqual({ count: 1 });
      await suspended('c-2');
      const before = await events('c-2');
      const again = await runtime.update(addItem, 'c-2', { sku: 'plum' }, { updateId: 'same' });
      expect(again).toEqual({ count: 1 });
      expect(await store.readSignals('c-2')).toHaveLength(1);
      expect(await events('c-2')).toBe(before);
      expect(priced).toEqual(['pear']);
    });

    it('an update its schema or validator refuses is INVALID_UPDATE and nothing is written', async () => {
      const { runtime, store, suspended, events } = await make();
      await runtime.start(cart, undefined as never, { executionId: 'c-3' });
      await suspended('c-3');
      const before = await events('c-3');
      const bySchema = runtime.update(addItem, 'c-3', { sku: 7 } as never, { updateId: 'x' });
      await expect(bySchema).rejects.toMatchObject({
        code: WorkflowErrorCode.INVALID_UPDATE,
        fields: { update: 'add-item', issues: ['sku must be a string'] },
      });
      const byValidator = runtime.update(addItem, 'c-3', { sku: 'banned' });
      await expect(byValidator).rejects.toMatchObject({
        code: WorkflowErrorCode.INVALID_UPDATE,
        fields: { reason: 'that sku is banned' },
      });
      expect(await codeOf(runtime.update(addItem, 'c-3', { sku: 'a' }, { updateId: '' }))).toBe(
        WorkflowErrorCode.INVALID_ARGUMENT,
      );
      expect(
        await codeOf(runtime.update(addItem, 'c-3', { sku: 'a' }, { timeout: 'soon' as never })),
      ).toBe(WorkflowErrorCode.INVALID_ARGUMENT);
      expect(await codeOf(runtime.update(addItem, 'c-3', { sku: 'a' }, null as never))).toBe(
        WorkflowErrorCode.INVALID_ARGUMENT,
      );
      expect(await codeOf(runtime.update({ name: 'add-item' } as never, 'c-3', { sku: 'a' }))).toBe(
        WorkflowErrorCode.INVALID_ARGUMENT,
      );
      expect(await codeOf(runtime.query('item-count' as never, 'c-3'))).toBe(
        WorkflowErrorCode.INVALID_ARGUMENT,
      );
      expect(await store.readSignals('c-3')).toEqual([]);
      expect(await events('c-3')).toBe(before);
    });

    it('bad queries are typed errors', async () => {
      const { runtime, suspended } = await make();
      await runtime.start(cart, undefined as never, { executionId: 'c-4' });
      await suspended('c-4');
      await expect(runtime.query(neverRegistered, 'c-4')).rejects.toMatchObject({
        code: WorkflowErrorCode.QUERY_NOT_HANDLED,
        fields: { registered: ['item-count', 'items-starting'] },
      });
      expect(await codeOf(runtime.query(itemsStarting, 'c-4', 5 as never))).toBe(
        WorkflowErrorCode.INVALID_QUERY,
      );
      expect(await codeOf(runtime.query(itemCount, 'missing'))).toBe('EXECUTION_NOT_FOUND');
    });

    it('a finished execution answers queries from its final state; a late update is not answered', async () => {
      const { runtime, suspended, updated } = await make();
      const handle = await runtime.start(cart, undefined as never, { executionId: 'c-5' });
      for (const [at, sku] of ['kiwi', 'kale', 'lime'].entries()) {
        await suspended('c-5');
        expect(await updated('c-5', sku, `u-${at}`)).toEqual({ count: at + 1 });
      }
      expect(await handle.result()).toEqual(['kiwi', 'kale', 'lime']);
      expect(await runtime.query(itemsStarting, 'c-5', 'k')).toEqual(['kiwi', 'kale']);
      // The same id again after the end: the answer is still in the log.
      expect(await runtime.update(addItem, 'c-5', { sku: 'kiwi' }, { updateId: 'u-0' })).toEqual({
        count: 1,
      });
      await expect(runtime.update(addItem, 'c-5', { sku: 'fig' })).rejects.toMatchObject({
        code: WorkflowErrorCode.UPDATE_NOT_ANSWERED,
        fields: { status: 'completed' },
      });
    });

    it('a query on an execution this runtime drives answers from its last durable point', async () => {
      const { runtime, store } = await make();
      gate = newGate();
      const handle = await runtime.start(gated, undefined as never, { executionId: 'g-1' });
      await until('the slow step started', async () =>
        (await store.read('g-1')).some(
          (event) =>
            event.type === 'step.started' && (event.payload as { name: string }).name === 'slow',
        ),
      );
      expect(runtime.activeExecutions).toContain('g-1');
      const before = await events('g-1');
      expect(await runtime.query(stage, 'g-1')).toBe('after first');
      expect(await events('g-1')).toBe(before);
      gate.open();
      expect(await handle.result()).toBe('after slow');
      expect(await runtime.query(stage, 'g-1')).toBe('after slow');
      async function events(id: string) {
        return (await store.read(id)).length;
      }
    });

    it('a query replayed under changed code is NON_DETERMINISM; a refused answer never reaches the log', async () => {
      const { runtime, store, clock, suspended } = await make();
      await runtime.start(drifted[0], undefined as never, { executionId: 'd-1' });
      await suspended('d-1');
      expect(await runtime.query(stage, 'd-1')).toBe('old code');
      const deployed = createRuntime({
        store,
        clock,
        flows: [drifted[1]],
        timerPollMs: 0,
        recoverEveryMs: 0,
      });
      try {
        await expect(deployed.query(stage, 'd-1')).rejects.toMatchObject({
          code: 'NON_DETERMINISM',
          fields: { expected: 'one', actual: 'renamed' },
        });
      } finally {
        await deployed.shutdown();
      }
      expect(await codeOf(runtime.query(stage, 'cart-never-started'))).toBe('EXECUTION_NOT_FOUND');
      // The result schema refuses the flow's answer: the flow sees INVALID_UPDATE, nothing is
      // journaled, and the caller learns the execution ended without answering.
      const wrong = await runtime.start(wrongAnswer, undefined as never, { executionId: 'w-1' });
      await suspended('w-1');
      const sent = runtime.update(strictAnswer, 'w-1', undefined, { updateId: 'strict-1' });
      await until(
        'the update is journaled',
        async () => (await store.readSignals('w-1')).length === 1,
      );
      await until('w-1 wakes', async () => (await runtime.wakeDue(10)).includes('w-1'));
      expect(await wrong.result()).toBe(WorkflowErrorCode.INVALID_UPDATE);
      await expect(sent).rejects.toMatchObject({ code: WorkflowErrorCode.UPDATE_NOT_ANSWERED });
      const steps = (await store.read('w-1')).filter((event) => event.type === 'step.started');
      expect(steps).toEqual([]);
    });

    it('a replay for a query takes the paths the log took: a failed step caught, a wait timed out', async () => {
      const { runtime, clock, suspended } = await make();
      await runtime.start(recovers, undefined as never, { executionId: 'r-1' });
      await suspended('r-1');
      expect(await runtime.query(stage, 'r-1')).toBe('STEP_FAILED true');
      await clock.advance(60_000);
      await until('r-1 wakes', async () => (await runtime.wakeDue(10)).includes('r-1'));
      await suspended('r-1');
      expect(await runtime.query(stage, 'r-1')).toBe('STEP_FAILED true, timed out, true');
    });

    it('a query names what it cannot answer: an unregistered flow, no handlers, a throwing handler, a refused result', async () => {
      const { runtime, store, clock, suspended, events } = await make();
      await runtime.start(cart, undefined as never, { executionId: 'c-7' });
      await runtime.start(picky, undefined as never, { executionId: 'p-1' });
      await runtime.start(wrongAnswer, undefined as never, { executionId: 'w-2' });
      await suspended('c-7');
      await suspended('p-1');
      await suspended('w-2');
      const before = await events('p-1');
      // Another process that registers neither flow cannot replay them.
      const elsewhere = createRuntime({
        store,
        clock,
        flows: [gated],
        timerPollMs: 0,
        recoverEveryMs: 0,
      });
      try {
        const unversioned = await elsewhere.query(itemCount, 'c-7').catch((error) => error);
        expect(unversioned).toMatchObject({
          code: 'FLOW_NOT_REGISTERED',
          fields: { executionId: 'c-7', flow: 'cart', version: null },
        });
        expect(unversioned.message).toContain("runs flow 'cart', which is not registered here");
        const versioned = await elsewhere.query(pick, 'p-1', 'ok').catch((error) => error);
        expect(versioned).toMatchObject({
          code: 'FLOW_NOT_REGISTERED',
          fields: { flow: 'picky', version: '3' },
        });
        expect(versioned.message).toContain("runs flow 'picky' version 3, which");
      } finally {
        await elsewhere.shutdown();
      }
      // A flow that registered no handler at all.
      const none = await runtime.query(stage, 'w-2').catch((error) => error);
      expect(none).toMatchObject({
        code: WorkflowErrorCode.QUERY_NOT_HANDLED,
        fields: { query: 'stage', registered: [] },
      });
      expect(none.message).toContain('(it registered none)');
      // The handler's answers, through the query's result schema.
      expect(await runtime.query(pick, 'p-1', 'ok')).toBe(42);
      const threw = await runtime.query(pick, 'p-1', 'throw').catch((error) => error);
      expect(threw).toMatchObject({
        code: WorkflowErrorCode.INVALID_QUERY,
        fields: { query: 'pick', executionId: 'p-1', reason: 'handler threw' },
      });
      expect(threw.message).toBe("the handler of query 'pick' threw: no such field");
      const threwString = await runtime.query(pick, 'p-1', 'throw-string').catch((error) => error);
      expect(threwString.message).toBe("the handler of query 'pick' threw: plain refusal");
      await expect(runtime.query(pick, 'p-1', 'text')).rejects.toMatchObject({
        code: WorkflowErrorCode.INVALID_QUERY,
        fields: { query: 'pick', executionId: 'p-1', issues: ['a number'] },
      });
      // No query wrote anything.
      expect(await events('p-1')).toBe(before);
    });

    it('update refusals before anything is written: options not an object, a throwing validator, no such execution', async () => {
      const { runtime, store, suspended, events } = await make();
      await runtime.start(cart, undefined as never, { executionId: 'c-8' });
      await suspended('c-8');
      const before = await events('c-8');
      const asArray = await runtime
        .update(addItem, 'c-8', { sku: 'a' }, [] as never)
        .catch((error) => error);
      expect(asArray).toMatchObject({
        code: WorkflowErrorCode.INVALID_ARGUMENT,
        fields: { update: 'add-item', path: 'options' },
      });
      expect(asArray.message).toContain('got an array');
      const asString = await runtime
        .update(addItem, 'c-8', { sku: 'a' }, 'u-1' as never)
        .catch((error) => error);
      expect(asString.message).toContain('got string');
      const crashed = await runtime.update(guarded, 'c-8', 'error').catch((error) => error);
      expect(crashed).toMatchObject({
        code: WorkflowErrorCode.INVALID_UPDATE,
        fields: { update: 'guarded', executionId: 'c-8', reason: 'validator crashed' },
      });
      expect(crashed.message).toContain('refused by its validator: validator crashed');
      await expect(runtime.update(guarded, 'c-8', 'string')).rejects.toMatchObject({
        code: WorkflowErrorCode.INVALID_UPDATE,
        fields: { reason: 'validator threw a string' },
      });
      expect(await store.readSignals('c-8')).toEqual([]);
      expect(await events('c-8')).toBe(before);
      // An accepted update to an execution the log does not have: the send's own error.
      expect(await codeOf(runtime.update(addItem, 'nobody', { sku: 'a' }))).toBe(
        'EXECUTION_NOT_FOUND',
      );
    });

    it('an answer that cannot be journaled (step.failed) is UPDATE_NOT_ANSWERED, live and when asked again', async () => {
      const { runtime, store, suspended } = await make();
      const handle = await runtime.start(badAnswer, undefined as never, { executionId: 'b-1' });
      await suspended('b-1');
      const sent = runtime.update(raw, 'b-1', undefined, { updateId: 'raw-1' });
      let answered = false;
      const outcome = sent
        .catch((error: unknown) => error)
        .finally(() => {
          answered = true;
        });
      await until(
        'the update is journaled',
        async () => (await store.readSignals('b-1')).length === 1,
      );
      // A run that took the update and ended before wakeDue looked is not listed: its (refused)
      // answer counts as woken, as in `updated`.
      await until('b-1 wakes', async () => answered || (await runtime.wakeDue(10)).includes('b-1'));
      expect(await handle.result()).toBe('STEP_FAILED');
      const reason = 'its answer could not be journaled (step.failed)';
      expect(await outcome).toMatchObject({
        code: WorkflowErrorCode.UPDATE_NOT_ANSWERED,
        fields: { update: 'raw', updateId: 'raw-1', executionId: 'b-1', status: reason },
      });
      // Asked again after the fact, the log's failed answer says the same.
      await expect(
        runtime.update(raw, 'b-1', undefined, { updateId: 'raw-1' }),
      ).rejects.toMatchObject({
        code: WorkflowErrorCode.UPDATE_NOT_ANSWERED,
        fields: { status: reason },
      });
    });

    it('an unanswered update times out at its deadline and stays journaled', async () => {
      const { runtime, store, clock, suspended, events } = await make();
      await runtime.start(cart, undefined as never, { executionId: 'c-6' });
      await suspended('c-6');
      const waiting = runtime.update(
        addItem,
        'c-6',
        { sku: 'date' },
        { updateId: 'slow', timeout: '1s' },
      );
      await until(
        'the update is journaled',
        async () => (await store.readSignals('c-6')).length === 1,
      );
      const before = await events('c-6');
      const outcome = waiting.catch((error: unknown) => error);
      await clock.advance(1_000);
      expect(await outcome).toMatchObject({
        code: WorkflowErrorCode.UPDATE_TIMEOUT,
        fields: { updateId: 'slow', timeoutMs: 1_000 },
      });
      expect(await events('c-6')).toBe(before);
      // Asked again with the same id once the execution runs, the caller gets the answer.
      const again = runtime.update(
        addItem,
        'c-6',
        { sku: 'date' },
        { updateId: 'slow', timeout: '5s' },
      );
      // A claim skips a row another statement locks (the duplicate send): ask until it wakes.
      await until('c-6 wakes', async () => (await runtime.wakeDue(10)).includes('c-6'));
      expect(await again).toEqual({ count: 1 });
      expect(await store.readSignals('c-6')).toHaveLength(1);
    });
  });
}

describe("an update's deadline", () => {
  it('counts from the call: a clock moved past it while the log was read still times the update out', async () => {
    // Found by a clean-clone CI run on Postgres (the test above hung 60 s): the caller's timer was
    // armed for the whole timeout only after the update was sent and the log read, so a clock
    // moved past the deadline in between left it armed past the clock's new time, for good.
    let hold: Promise<void> | undefined;
    let release: () => void = () => undefined;
    class HeldReads extends ForwardingEventStore {
      override async read(executionId: string, options?: ReadOptions) {
        if (hold !== undefined && executionId === 'held') await hold;
        return super.read(executionId, options);
      }
    }
    const clock = new ManualClock();
    const inner = new InMemoryEventStore({ clock });
    const runtime = createRuntime({
      store: new HeldReads(inner),
      clock,
      flows: [cart],
      timerPollMs: 0,
      inlineWaitMs: 0,
    });
    try {
      await runtime.start(cart, undefined as never, { executionId: 'held' });
      await until('held suspends', () => !runtime.activeExecutions.includes('held'));
      hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      const outcome = runtime
        .update(addItem, 'held', { sku: 'fig' }, { updateId: 'late', timeout: '1s' })
        .catch((error: unknown) => error);
      await until(
        'the update is journaled',
        async () => (await inner.readSignals('held')).length === 1,
      );
      // The caller now reads the log (held here); meanwhile the deadline passes.
      await clock.advance(1_000);
      release();
      // Before the fix its timer was armed for 1 s from here, on a clock nobody moves again.
      let late: NodeJS.Timeout | undefined;
      const settled = await Promise.race([
        outcome,
        new Promise((resolve) => {
          late = setTimeout(() => resolve('no answer within 10 s'), 10_000);
        }),
      ]).finally(() => clearTimeout(late));
      expect(settled).toMatchObject({
        code: WorkflowErrorCode.UPDATE_TIMEOUT,
        fields: { updateId: 'late', timeoutMs: 1_000 },
      });
    } finally {
      release();
      await runtime.shutdown();
    }
  });
});

describe('defineQuery and defineUpdate', () => {
  it('refuse a bad name, a schema that is not one, or a validator that is not a function', () => {
    expect(() => defineQuery('')).toThrow(/query name/);
    expect(() => defineQuery('q', { arg: {} as never })).toThrow(/Standard Schema/);
    expect(() => defineUpdate('x'.repeat(181))).toThrow(/update name/);
    expect(() => defineUpdate('u', { result: 42 as never })).toThrow(/Standard Schema/);
    expect(() => defineUpdate('u', { validate: 'no' as never })).toThrow(/validate/);
    for (const bad of [() => defineQuery(''), () => defineUpdate('u', { validate: 1 as never })]) {
      expect(bad).toThrow(expect.objectContaining({ code: WorkflowErrorCode.INVALID_ARGUMENT }));
    }
  });
});

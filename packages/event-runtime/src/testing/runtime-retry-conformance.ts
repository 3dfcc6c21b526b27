import { expect, it } from 'vitest';
import type { JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, isLoomError, type LoomError } from '../errors.js';
import type { ExecutionFailedFields } from '../runtime/core/execution-outcome.js';
import type { StepAttemptFailedPayload } from '../runtime/core/kernel-events.js';
import type { StepRetryPolicy } from '../runtime/core/step-retry-policy.js';
import type { Flow } from '../runtime/flow.js';
import {
  createKernelRuntime,
  type KernelRuntime,
  type KernelRuntimeOptions,
} from '../runtime/runtime.js';
import type { RuntimeSection, SectionDescribe } from './conformance-sections.js';
import { CountingEventStore } from './counting-event-store.js';
import { freshId } from './event-store-conformance.js';
import { ManualClock } from './manual-clock.js';
import type { RuntimeHarness } from './runtime-harness.js';
import { until } from './until.js';

/**
 * Settles `promise` while firing the harness clock's timers (backoffs waited in memory), giving
 * real I/O (SQLite, Postgres) time between rounds; fails after `roundsMax` rounds.
 *
 * Each round fires only the next due timer, then waits 2 ms of real time. Firing every timer
 * until the promise settles would spin through the runtime's repeating timers (recovery rounds,
 * lease renewals) thousands of times while a Postgres round trip is still on the wire.
 */
// Up to 10,000 rounds of at least 2 ms each: a deadline of 20 s or more of real time, for a
// loaded machine where the store's first connection (and the node claim) takes seconds.
async function drive<T>(harness: RuntimeHarness, promise: Promise<T>, roundsMax = 10_000) {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => undefined);
  for (let round = 0; round < roundsMax && !settled; round++) {
    const dueMs = harness.clock.nextDueMs;
    if (dueMs !== undefined) await harness.clock.advance(Math.max(0, dueMs - harness.clock.now()));
    if (!settled) await new Promise((resolve) => setTimeout(resolve, 2));
  }
  if (!settled) throw new Error('the promise never settled while the clock ran its timers');
  return watched;
}

/** The error `promise` rejects with (a resolved promise fails the test). */
async function rejection(promise: Promise<unknown>): Promise<LoomError> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => {
      // A plain Error here is the test's own deadline (or a bug): show it, not `fields` missing.
      if (!isLoomError(error)) throw error;
      return error;
    },
  );
}

const noJitter = (attempts: number, initialMs = 10): StepRetryPolicy => ({
  attempts,
  backoff: { initialMs, factor: 1, jitter: 'none' },
});

function types(events: StoredEvent[]): string[] {
  return events.map((event) => event.type);
}

/**
 * Durable step retries, failures that carry their facts, and `retry(id)`, on every backend:
 * each failed attempt is journaled with its error and next retry time, the backoff is a durable
 * timer, a node that takes an execution over continues the attempt count, `result()` rejects
 * with `EXECUTION_FAILED` naming the step, its attempts and the recorded error, and a failed
 * execution reopens from its failed step.
 */
export function runtimeRetries(
  getHarness: () => RuntimeHarness,
  runtime: (options?: Partial<KernelRuntimeOptions>) => KernelRuntime,
  section: SectionDescribe<RuntimeSection>,
): void {
  section('durable step retries', () => {
    it('each failed attempt is journaled with its error and next retry time; steps that do not fail still write two events', async () => {
      const harness = getHarness();
      const created = runtime({ inlineWaitMs: 1_000 });
      const attempts: number[] = [];
      const flow: Flow<null, string> = {
        name: 'flaky-charge',
        run: async (ctx) => {
          await ctx.step('reserve', () => 'reserved');
          const charged = await ctx.step(
            'charge',
            (effect) => {
              attempts.push(effect.attempt);
              if (effect.attempt < 3) throw new Error(`gateway timeout ${effect.attempt}`);
              return 'charged';
            },
            { retry: noJitter(5, 250) },
          );
          await ctx.step('ship', () => 'shipped');
          return charged;
        },
      };
      const id = freshId('flaky');
      const handle = await created.start(flow, null, { executionId: id });
      expect(await drive(harness, handle.result())).toBe('charged');
      expect(attempts).toEqual([1, 2, 3]);
      const events = await harness.store.read(id);
      expect(types(events)).toEqual([
        'execution.started',
        'step.started',
        'step.completed',
        'step.started',
        'step.attempt_failed',
        'step.attempt_started',
        'step.attempt_failed',
        'step.attempt_started',
        'step.completed',
        'step.started',
        'step.completed',
        'execution.completed',
      ]);
      const failed = events
        .filter((event) => event.type === 'step.attempt_failed')
        .map((event) => event.payload as unknown as StepAttemptFailedPayload);
      expect(failed.map((payload) => [payload.index, payload.name, payload.attempt])).toEqual([
        [1, 'charge', 1],
        [1, 'charge', 2],
      ]);
      for (const [position, payload] of failed.entries()) {
        expect(payload.error.message).toBe(`gateway timeout ${position + 1}`);
        expect(payload.error.stack).toMatch(/gateway timeout/);
        const at = events.find((event) => event.payload === (payload as unknown as JsonValue))?.at;
        expect(payload.retryAtMs).toBe((at as number) + 250);
      }
    });

    it('steps under a retry policy that do not fail cost what plain steps cost: 2n + 2 events in n + 1 appends', async () => {
      const harness = getHarness();
      const counting = new CountingEventStore(harness.store);
      const created = runtime({ store: counting, stepRetry: noJitter(5) });
      const flow: Flow<null, number[]> = {
        name: 'never-fails',
        run: async (ctx) => [
          await ctx.step('a', (effect) => effect.attempt),
          await ctx.step('b', (effect) => effect.attempt, { retry: noJitter(3) }),
          await ctx.step('c', (effect) => effect.attempt),
        ],
      };
      const id = freshId('no-failures');
      const handle = await created.start(flow, null, { executionId: id });
      expect(await handle.result()).toEqual([1, 1, 1]);
      expect(await harness.countRows(id)).toBe(2 * 3 + 2);
      expect(counting.counts.appends).toBe(3 + 1);
    });

    it('a long backoff suspends the execution like a durable sleep, and another node continues the count', async () => {
      const harness = getHarness();
      const first = runtime({ nodeId: 'first' });
      const runs: string[] = [];
      const flow: Flow<null, string> = {
        name: 'always-declined',
        run: async (ctx) =>
          ctx.step(
            'charge',
            (effect) => {
              runs.push(`${effect.attempt}`);
              throw new Error(`declined ${effect.attempt}`);
            },
            { retry: noJitter(4, 60_000) },
          ),
      };
      const id = freshId('suspended-retry');
      await first.start(flow, null, { executionId: id });
      const suspendedAt = async () => {
        const events = await harness.store.read(id);
        const last = events[events.length - 1];
        return last?.type === 'execution.suspended'
          ? (last.payload as { wakeAtMs: number }).wakeAtMs
          : undefined;
      };
      await until(async () => (await suspendedAt()) !== undefined, `${id} to suspend`);
      const events = await harness.store.read(id);
      const failed = events.find((event) => event.type === 'step.attempt_failed');
      expect(failed).toBeDefined();
      // The execution holds nothing while it waits: it suspended until the recorded retry time.
      expect(await suspendedAt()).toBe(
        (failed?.payload as unknown as StepAttemptFailedPayload | undefined)?.retryAtMs,
      );
      await first.shutdown();
      const second = runtime({ nodeId: 'second', flows: [flow as Flow<never, unknown>] });
      for (let round = 0; round < 10 && (await second.status(id)) === 'running'; round++) {
        await harness.clock.advance(60_000);
        await second.wakeDue();
        await second.idle();
        await until(async () => second.activeExecutions.length === 0, `${id} to go idle`);
      }
      expect(runs).toEqual(['1', '2', '3', '4']);
      const error = await rejection(second.attach(id).result());
      expect(error.code).toBe(ErrorCode.EXECUTION_FAILED);
      expect(error.fields).toMatchObject({ step: 'charge', stepIndex: 0, attempts: 4 });
      expect(
        types(await harness.store.read(id)).filter((type) => type === 'step.attempt_failed'),
      ).toHaveLength(3);
    });

    it('EXECUTION_FAILED carries the failing step, its attempts and the recorded error with code, message and stack', async () => {
      const harness = getHarness();
      const created = runtime({ inlineWaitMs: 1_000 });
      const flow: Flow<null, string> = {
        name: 'declined',
        run: async (ctx) => {
          await ctx.step('reserve', () => 'reserved');
          return ctx.step(
            'charge',
            () => {
              throw Object.assign(new Error('card declined'), { code: 'CARD_DECLINED' });
            },
            { retry: noJitter(3) },
          );
        },
      };
      const handle = await created.start(flow, null, { executionId: freshId('declined') });
      const error = await rejection(drive(harness, handle.result()));
      expect(error.code).toBe(ErrorCode.EXECUTION_FAILED);
      const fields = error.fields as unknown as ExecutionFailedFields;
      expect(fields.executionId).toBe(handle.executionId);
      expect(fields.step).toBe('charge');
      expect(fields.stepIndex).toBe(1);
      expect(fields.attempts).toBe(3);
      expect(fields.error).toMatchObject({
        name: 'Error',
        message: 'card declined',
        code: 'CARD_DECLINED',
      });
      expect(fields.error.stack).toMatch(/card declined/);
      expect(error.message).toMatch(/in step 'charge' after 3 attempts: card declined/);
    });

    it('a non-retryable error fails the step at once; a flow error names no step', async () => {
      const harness = getHarness();
      const created = runtime({ inlineWaitMs: 1_000 });
      let runs = 0;
      const refused: Flow<null, string> = {
        name: 'refused',
        run: async (ctx) =>
          ctx.step(
            'charge',
            () => {
              runs += 1;
              throw new TypeError('bad card number');
            },
            { retry: { ...noJitter(5), retryable: (error) => !(error instanceof TypeError) } },
          ),
      };
      const first = await created.start(refused, null);
      const error = await rejection(drive(harness, first.result()));
      expect(error.fields).toMatchObject({
        step: 'charge',
        attempts: 1,
        error: { name: 'TypeError', message: 'bad card number' },
      });
      expect(runs).toBe(1);
      const bare: Flow<null, string> = {
        name: 'bare-throw',
        run: async () => {
          throw new RangeError('no such plan');
        },
      };
      const second = await created.start(bare, null);
      const flowError = await rejection(second.result());
      expect(flowError.code).toBe(ErrorCode.EXECUTION_FAILED);
      expect(flowError.fields).toMatchObject({
        step: null,
        attempts: null,
        error: { name: 'RangeError', message: 'no such plan' },
      });
    });

    it("the runtime's stepRetry applies to steps without a policy; a step's own policy or false overrides it", async () => {
      const harness = getHarness();
      const created = runtime({ inlineWaitMs: 1_000, stepRetry: noJitter(3) });
      const runs = { inherited: 0, own: 0, off: 0 };
      const failing = (key: keyof typeof runs) => () => {
        runs[key] += 1;
        throw new Error(key);
      };
      const flow: Flow<null, Array<number | null>> = {
        name: 'defaults',
        run: async (ctx) => {
          const attemptsOf = async (work: Promise<unknown>) =>
            work.then(
              () => null,
              (error: LoomError) => error.fields.attempts as number,
            );
          return [
            await attemptsOf(ctx.step('inherited', failing('inherited'))),
            await attemptsOf(ctx.step('own', failing('own'), { retry: noJitter(2) })),
            await attemptsOf(ctx.step('off', failing('off'), { retry: false })),
          ];
        },
      };
      const handle = await created.start(flow, null);
      expect(await drive(harness, handle.result())).toEqual([3, 2, 1]);
      expect(runs).toEqual({ inherited: 3, own: 2, off: 1 });
      expect(() =>
        createKernelRuntime({ store: harness.store, stepRetry: { attempts: 0 } }),
      ).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    });
  });

  section('an attempt after the first, interrupted (ADR 0031)', () => {
    /**
     * A clock of its own for the node that "dies": it stands still unless the test moves it, so
     * the node never renews a lease or runs a lazy acquire while the survivor takes over.
     */
    const deadClock = (harness: RuntimeHarness) => new ManualClock(harness.clock.now());
    /** Polls `check` every 5 ms of real time; fails after 2,000 tries. */
    const until = async (check: () => Promise<boolean>, what: string) => {
      for (let tries = 0; tries < 2_000; tries++) {
        if (await check()) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      throw new Error(`timed out waiting for ${what}`);
    };
    /** A promise and the function that resolves it. */
    const signalled = () => {
      let resolve = () => {};
      const promise = new Promise<void>((done) => {
        resolve = done;
      });
      return { promise, resolve };
    };

    it('a takeover that finds a retried attempt in flight counts it (step.interrupted) and runs it again under its number', async () => {
      const harness = getHarness();
      const attempts: number[] = [];
      const hang = signalled();
      const flow: Flow<null, string> = {
        name: 'retried-then-interrupted',
        run: async (ctx) =>
          ctx.step(
            'charge',
            async (effect) => {
              attempts.push(effect.attempt);
              if (effect.attempt === 1) throw new Error('gateway timeout');
              if (attempts.length === 2) await hang.promise;
              return `charged on attempt ${effect.attempt}`;
            },
            { retry: noJitter(3) },
          ),
      };
      const id = freshId('interrupted-retry');
      const crashed = runtime({
        nodeId: 'crashed',
        inlineWaitMs: 1_000,
        clock: deadClock(harness),
      });
      const crashedHandle = await crashed.start(flow, null, { executionId: id });
      await until(async () => attempts.length === 1, 'the first attempt');
      await (crashed.clock as ManualClock).advance(10); // the backoff, on the node's own clock
      await until(async () => attempts.length === 2, 'the second attempt');
      // The first node is "dead" from here on: its second attempt never returns.
      const survivor = runtime({ nodeId: 'survivor', flows: [flow as Flow<never, unknown>] });
      const handle = await survivor.resume<string>(id);
      expect(await drive(harness, handle.result())).toBe('charged on attempt 2');
      expect(attempts).toEqual([1, 2, 2]);
      const events = await harness.store.read(id);
      expect(types(events)).toEqual([
        'execution.started',
        'step.started',
        'step.attempt_failed',
        'step.attempt_started',
        'step.interrupted',
        'step.completed',
        'execution.completed',
      ]);
      expect(events[3]?.payload).toEqual({ index: 0, name: 'charge', attempt: 2 });
      expect(events[4]?.payload).toEqual({ index: 0, name: 'charge', interruptions: 1 });
      hang.resolve();
      expect(await drive(harness, crashedHandle.result())).toBe('charged on attempt 2');
      expect((await harness.store.verify(id)).ok).toBe(true);
    });

    it('the first attempt after retry(id) is counted too when a takeover finds it in flight', async () => {
      const harness = getHarness();
      let runs = 0;
      const hang = signalled();
      const flow: Flow<null, string> = {
        name: 'reopened-then-interrupted',
        run: async (ctx) =>
          ctx.step('charge', async () => {
            runs += 1;
            if (runs === 1) throw new Error('gateway down');
            if (runs === 2) await hang.promise;
            return `charged on run ${runs}`;
          }),
      };
      const id = freshId('interrupted-reopened');
      const crashed = runtime({
        nodeId: 'crashed',
        inlineWaitMs: 1_000,
        clock: deadClock(harness),
      });
      const first = await crashed.start(flow, null, { executionId: id });
      expect((await rejection(first.result())).code).toBe(ErrorCode.EXECUTION_FAILED);
      const reopened = await crashed.retry(id);
      await until(async () => runs === 2, 'the reopened attempt');
      // The reopened run leased the execution; the dead node never renews it (its clock stands).
      await harness.clock.advance(31_000);
      const survivor = runtime({ nodeId: 'survivor', flows: [flow as Flow<never, unknown>] });
      expect(await drive(harness, (await survivor.resume<string>(id)).result())).toBe(
        'charged on run 3',
      );
      const events = await harness.store.read(id);
      const retriedAt = events.findIndex((event) => event.type === 'execution.retried');
      expect(types(events).slice(retriedAt)).toEqual([
        'execution.retried',
        'step.attempt_started',
        'step.interrupted',
        'step.completed',
        'execution.completed',
      ]);
      expect(events[retriedAt + 1]?.payload).toEqual({ index: 0, name: 'charge', attempt: 1 });
      expect(events[retriedAt + 2]?.payload).toEqual({
        index: 0,
        name: 'charge',
        interruptions: 1,
      });
      hang.resolve();
      expect(await drive(harness, reopened.result())).toBe('charged on run 3');
      expect((await harness.store.verify(id)).ok).toBe(true);
    });
  });

  section('retry(id)', () => {
    it('reruns the failed step with a fresh budget, replays completed steps, and records execution.retried', async () => {
      const harness = getHarness();
      const created = runtime({ inlineWaitMs: 1_000 });
      const ran = { reserve: 0, charge: 0 };
      let broken = true;
      const flow: Flow<null, string> = {
        name: 'retry-me',
        run: async (ctx) => {
          await ctx.step('reserve', () => {
            ran.reserve += 1;
            return 'reserved';
          });
          return ctx.step(
            'charge',
            (effect) => {
              ran.charge += 1;
              if (broken) throw new Error(`gateway down (attempt ${effect.attempt})`);
              return `charged on attempt ${effect.attempt}`;
            },
            { retry: noJitter(2) },
          );
        },
      };
      const id = freshId('retry');
      const handle = await created.start(flow, null, { executionId: id });
      expect((await rejection(drive(harness, handle.result()))).fields.attempts).toBe(2);
      expect(await created.status(id)).toBe('failed');
      broken = false;
      const retried = await created.retry(id);
      expect(await drive(harness, retried.result())).toBe('charged on attempt 1');
      expect(ran).toEqual({ reserve: 1, charge: 3 });
      expect(await created.status(id)).toBe('completed');
      const events = await harness.store.read(id);
      const failedAt = events.findIndex((event) => event.type === 'execution.failed');
      expect(types(events).slice(failedAt)).toEqual([
        'execution.failed',
        'execution.retried',
        // Durable before the reopened step's effect: a crash inside it is counted (ADR 0031).
        'step.attempt_started',
        'step.completed',
        'execution.completed',
      ]);
      expect(events[failedAt + 1]?.payload).toEqual({ stepIndex: 1, failedSequence: failedAt });
      expect((await harness.store.verify(id)).ok).toBe(true);
      // A fresh runtime replays the whole log (retried included) to the same outcome.
      const reader = runtime({ nodeId: 'reader', flows: [flow as Flow<never, unknown>] });
      expect(await reader.attach(id).result()).toBe('charged on attempt 1');
      const again = await rejection(created.retry(id));
      expect(again.code).toBe(ErrorCode.EXECUTION_NOT_FAILED);
      expect(again.fields.status).toBe('completed');
      expect((await rejection(created.retry(freshId('missing')))).code).toBe(
        ErrorCode.EXECUTION_NOT_FOUND,
      );
    });

    it('records who asked for a retry and why in execution.retried; a fresh runtime replays it', async () => {
      const harness = getHarness();
      const created = runtime({ inlineWaitMs: 1_000 });
      let broken = true;
      const flow: Flow<null, string> = {
        name: 'retry-who',
        run: async (ctx) =>
          ctx.step('charge', () => {
            if (broken) throw new Error('gateway down');
            return 'charged';
          }),
      };
      const id = freshId('retry-who');
      const handle = await created.start(flow, null, { executionId: id });
      await rejection(drive(harness, handle.result()));
      broken = false;
      const retried = await created.retry(id, { by: 'ana', reason: 'gateway fixed' });
      expect(await drive(harness, retried.result())).toBe('charged');
      const events = await harness.store.read(id);
      const retriedEvent = events.find((event) => event.type === 'execution.retried');
      expect(retriedEvent?.payload).toEqual({
        stepIndex: 0,
        failedSequence: (retriedEvent?.sequence ?? 0) - 1,
        by: 'ana',
        reason: 'gateway fixed',
      });
      const reader = runtime({ nodeId: 'reader-who', flows: [flow as Flow<never, unknown>] });
      expect(await reader.attach(id).result()).toBe('charged');
    });

    it('two nodes retrying the same failed execution reopen it once', async () => {
      const harness = getHarness();
      let fail = true;
      let runs = 0;
      const flow: Flow<null, string> = {
        name: 'retry-race',
        run: async (ctx) =>
          ctx.step('only', () => {
            runs += 1;
            if (fail) throw new Error('down');
            return 'up';
          }),
      };
      const one = runtime({ nodeId: 'one', flows: [flow as Flow<never, unknown>] });
      const two = runtime({ nodeId: 'two', flows: [flow as Flow<never, unknown>] });
      const id = freshId('race');
      await rejection((await one.start(flow, null, { executionId: id })).result());
      fail = false;
      const outcomes = await Promise.allSettled([one.retry(id), two.retry(id)]);
      const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected')
          expect((outcome.reason as LoomError).code).toBe(ErrorCode.EXECUTION_NOT_FAILED);
      }
      expect(await one.attach(id).result()).toBe('up');
      expect(runs).toBe(2);
      expect(
        types(await harness.store.read(id)).filter((type) => type === 'execution.retried'),
      ).toHaveLength(1);
    });
  });
}

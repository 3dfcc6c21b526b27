import { expect, it } from 'vitest';
import type { EventEnvelope, JsonValue, StoredEvent } from '../envelope.js';
import { ErrorCode, type LoomError } from '../errors.js';
import type { Flow, RecordEffectContext } from '../runtime/flow.js';
import type { KernelRuntime, KernelRuntimeOptions } from '../runtime/runtime.js';
import type { RuntimeSection, SectionDescribe } from './conformance-sections.js';
import { CountingEventStore } from './counting-event-store.js';
import { deferred } from './deferred.js';
import { freshId } from './event-store-conformance.js';
import type { RuntimeHarness } from './runtime-harness.js';
import { until } from './until.js';

const typesOf = (events: readonly StoredEvent[]) => events.map((event) => event.type);

/**
 * `ctx.record` (ADR 0066), on every backend: only its outcome is written (`step.completed` or
 * `step.failed`, marked `record`), durable with the execution's next write and before anything
 * after it runs; a replay answers from the log, an older writer's step pair of the same name
 * replays, and one it left in flight runs again as a record; a record still running keeps the
 * execution from suspending.
 */
export function runtimeRecords(
  getHarness: () => RuntimeHarness,
  runtime: (options?: Partial<KernelRuntimeOptions>) => KernelRuntime,
  section: SectionDescribe<RuntimeSection>,
): void {
  section('records (ctx.record)', () => {
    it("a record writes only its outcome, in the next step's write, before that step's effect runs", async () => {
      const harness = getHarness();
      const counting = new CountingEventStore(harness.store);
      const created = runtime({ store: counting });
      const id = freshId('record');
      let calls = 0;
      const flow: Flow<null, { plan: JsonValue; seen: string[] }> = {
        name: 'records',
        run: async (ctx) => {
          const plan = await ctx.record('plan', (effect) => {
            calls += 1;
            return { n: 1, attempt: effect.attempt };
          });
          const seen = await ctx.step('charge', async () => typesOf(await harness.store.read(id)));
          return { plan, seen };
        },
      };
      const handle = await created.start(flow, null, { executionId: id });
      expect(await handle.result()).toEqual({
        plan: { n: 1, attempt: 1 },
        // The record is durable with the step's start, before its effect.
        seen: ['execution.started', 'step.completed', 'step.started'],
      });
      expect(calls).toBe(1);
      const events = await harness.store.read(id);
      expect(typesOf(events)).toEqual([
        'execution.started',
        'step.completed',
        'step.started',
        'step.completed',
        'execution.completed',
      ]);
      expect(events[1]?.payload).toEqual({
        index: 0,
        name: 'plan',
        record: true,
        result: { n: 1, attempt: 1 },
      });
      expect(events[3]?.payload).toMatchObject({ index: 1, name: 'charge' });
      expect(events[3]?.payload).not.toHaveProperty('record');
      // The start with the record and the step's start, then the step's end with the
      // execution's: a step in the record's place would take one more (its start is durable
      // before its effect runs, alone).
      expect(counting.counts.appends).toBe(2);
      expect((await harness.store.verify(id)).ok).toBe(true);
    });

    it("onDurable runs once the record is in the log: with the next write, before the next step's effect", async () => {
      const harness = getHarness();
      const id = freshId('record-durable');
      const order: string[] = [];
      const flow: Flow<null, string[]> = {
        name: 'record-on-durable',
        run: async (ctx) => {
          let kept: RecordEffectContext | undefined;
          await ctx.record('plan', (effect) => {
            kept = effect;
            effect.onDurable(() => order.push('durable'));
            // A throwing callback is dropped: the record and the flow go on.
            effect.onDurable(() => {
              throw new Error('an observer broke');
            });
            order.push('ran');
            return 1;
          });
          order.push('recorded');
          // Asked for after the outcome was queued: heard with the same write, after the others.
          kept?.onDurable(() => order.push('late'));
          await ctx.step('next', async () => {
            order.push(`effect saw ${typesOf(await harness.store.read(id)).length} events`);
          });
          return order;
        },
      };
      const handle = await runtime().start(flow, null, { executionId: id });
      expect(await handle.result()).toEqual([
        'ran',
        'recorded',
        'durable',
        'late',
        'effect saw 3 events',
      ]);
    });

    it('a resume answers a record from the log without running its function again', async () => {
      const id = freshId('record-resume');
      const hang = deferred();
      const calls: string[] = [];
      const flow: Flow<null, string> = {
        name: 'record-resume',
        run: async (ctx) => {
          const plan = await ctx.record('plan', () => {
            calls.push('plan');
            return 'P';
          });
          const shipped = await ctx.step('ship', async () => {
            calls.push('ship');
            if (calls.filter((call) => call === 'ship').length === 1) await hang.promise;
            return 'S';
          });
          return plan + shipped;
        },
      };
      const crashed = runtime({ nodeId: 'crashed' });
      await crashed.start(flow, null, { executionId: id });
      await until(() => calls.includes('ship'), "step 'ship' to run");
      const survivor = runtime({ nodeId: 'survivor', flows: [flow as Flow<never, unknown>] });
      expect(await (await survivor.resume<string>(id)).result()).toBe('PS');
      expect(calls).toEqual(['plan', 'ship', 'ship']);
      hang.resolve();
    });

    it('a record that throws is a step.failed marked record; the flow gets STEP_FAILED, again on replay', async () => {
      const harness = getHarness();
      const id = freshId('record-throws');
      const hang = deferred();
      let calls = 0;
      let shipped = 0;
      const flow: Flow<null, string> = {
        name: 'record-throws',
        run: async (ctx) => {
          let caught = 'recorded';
          try {
            await ctx.record('verdict', () => {
              calls += 1;
              throw new Error('no verdict');
            });
          } catch (error) {
            caught = `${(error as LoomError).code}: ${(error as LoomError).message}`;
          }
          await ctx.step('ship', async () => {
            shipped += 1;
            if (shipped === 1) await hang.promise;
          });
          return caught;
        },
      };
      await runtime({ nodeId: 'crashed' }).start(flow, null, { executionId: id });
      await until(() => shipped === 1, "step 'ship' to run");
      const events = await harness.store.read(id);
      expect(typesOf(events)).toEqual(['execution.started', 'step.failed', 'step.started']);
      expect(events[1]?.payload).toMatchObject({
        index: 0,
        name: 'verdict',
        record: true,
        error: { message: 'no verdict' },
      });
      // Another node resumes: the failed record replays as the same STEP_FAILED, not called again.
      const survivor = runtime({ nodeId: 'survivor', flows: [flow as Flow<never, unknown>] });
      const result = await (await survivor.resume<string>(id)).result();
      expect(result).toMatch(/^STEP_FAILED: .*verdict.*no verdict/);
      expect(calls).toBe(1);
      hang.resolve();
    });

    it("an older writer's step pair of the record's name replays; one it left in flight runs again as a record", async () => {
      const harness = getHarness();
      const write = async (id: string, events: Array<{ type: string; payload: JsonValue }>) => {
        const envelopes: EventEnvelope[] = [
          {
            executionId: id,
            sequence: 0,
            type: 'execution.started',
            payload: { flow: 'record-older', version: null, input: null },
          },
          ...events.map((event, index) => ({ executionId: id, sequence: index + 1, ...event })),
        ];
        await harness.store.append(envelopes);
      };
      let calls = 0;
      const flow: Flow<null, string> = {
        name: 'record-older',
        run: async (ctx) =>
          ctx.record('plan', () => {
            calls += 1;
            return 'new';
          }),
      };
      const created = runtime({ flows: [flow as Flow<never, unknown>] });

      const paired = freshId('record-paired');
      await write(paired, [
        { type: 'step.started', payload: { index: 0, name: 'plan' } },
        { type: 'step.completed', payload: { index: 0, name: 'plan', result: 'old' } },
      ]);
      expect(await (await created.resume<string>(paired)).result()).toBe('old');
      expect(calls).toBe(0);

      const inFlight = freshId('record-in-flight');
      await write(inFlight, [{ type: 'step.started', payload: { index: 0, name: 'plan' } }]);
      expect(await (await created.resume<string>(inFlight)).result()).toBe('new');
      expect(calls).toBe(1);
      const events = await harness.store.read(inFlight);
      expect(typesOf(events)).toEqual([
        'execution.started',
        'step.started',
        'step.completed',
        'execution.completed',
      ]);
      expect(events[2]?.payload).toEqual({ index: 0, name: 'plan', record: true, result: 'new' });
    });

    it('an execution does not suspend while a record it started is still running', async () => {
      const harness = getHarness();
      const id = freshId('record-in-flight');
      const slow = deferred<string>();
      const blocked = deferred();
      const flow: Flow<null, string> = {
        name: 'record-beside-sleep',
        run: async (ctx) => {
          const recorded = ctx.record('slow', () => slow.promise);
          const slept = ctx.sleep(3_600_000, 'long');
          blocked.resolve();
          const [value] = await Promise.all([recorded, slept]);
          return value;
        },
      };
      const created = runtime({ flows: [flow as Flow<never, unknown>] });
      await created.start(flow, null, { executionId: id });
      await blocked.promise;
      // The turn ends (the runtime's deferred suspension check runs) with the record running:
      // were it not counted in flight, the execution would suspend here, before its record.
      await harness.clock.advance(0);
      slow.resolve('done');
      await until(
        async () => typesOf(await harness.store.read(id)).includes('execution.suspended'),
        'the execution to suspend once the record is written',
      );
      const events = await harness.store.read(id);
      expect(typesOf(events)).toEqual([
        'execution.started',
        'timer.scheduled',
        'step.completed',
        'execution.suspended',
      ]);
      expect(events[2]?.payload).toEqual({ index: 0, name: 'slow', record: true, result: 'done' });
      // The replay after the timer answers the record from the log.
      await harness.clock.advance(3_600_000);
      expect(await created.wakeDue()).toEqual([id]);
      expect(await created.attach<string>(id).result()).toBe('done');
    });

    it('a record whose function is not a function is refused before anything is written', async () => {
      const harness = getHarness();
      const id = freshId('record-bad');
      const flow: Flow<null, string> = {
        name: 'record-bad',
        run: async (ctx) => {
          try {
            await ctx.record('plan', 'not a function' as never);
            return 'recorded';
          } catch (error) {
            return (error as LoomError).code;
          }
        },
      };
      expect(await (await runtime().start(flow, null, { executionId: id })).result()).toBe(
        ErrorCode.INVALID_STEP_NAME,
      );
      expect(typesOf(await harness.store.read(id))).toEqual([
        'execution.started',
        'execution.completed',
      ]);
    });
  });
}

import { expect, it } from 'vitest';
import { ErrorCode, LoomError } from '../errors.js';
import { isTransactional } from '../event-store.js';
import type { Flow } from '../runtime/flow.js';
import type { KernelRuntime, KernelRuntimeOptions } from '../runtime/runtime.js';
import type { RuntimeSection, SectionDescribe } from './conformance-sections.js';
import { freshId } from './event-store-conformance.js';
import { FlakyEventStore } from './flaky-event-store.js';
import type { RuntimeHarness } from './runtime-harness.js';

const terminalTypes = new Set(['execution.completed', 'execution.failed', 'execution.cancelled']);

/**
 * Settles `promise` while moving the harness clock, so backoff timers on the injected clock fire
 * (one long step per round, with real I/O time between rounds; the test fails after 20 s of real
 * time, a deadline for a loaded machine's Postgres round trips).
 */
async function whileAdvancing<T>(harness: RuntimeHarness, promise: Promise<T>): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  watched.catch(() => undefined);
  const deadline = Date.now() + 20_000;
  while (!settled && Date.now() < deadline) {
    await harness.clock.advance(60_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (!settled) throw new Error('the promise never settled while the clock moved on');
  return watched;
}

/**
 * How the runtime rides out transient store failures (`STORE_UNAVAILABLE`), on every backend:
 * a store that loses appends, loses their acknowledgements, fails transactions or reads. Each
 * execution must still settle with exactly one terminal event; `result()` must not fail meanwhile.
 */
export function runtimeStoreFaults(
  getHarness: () => RuntimeHarness,
  runtime: (options?: Partial<KernelRuntimeOptions>) => KernelRuntime,
  section: SectionDescribe<RuntimeSection>,
): void {
  section('transient store failures', () => {
    const flow = (ran: string[]): Flow<null, string[]> => ({
      name: 'flaky-steps',
      run: async (ctx) => {
        const values: string[] = [];
        for (const name of ['a', 'b', 'c'])
          values.push(
            await ctx.step(name, () => {
              ran.push(name);
              return name.toUpperCase();
            }),
          );
        return values;
      },
    });

    async function checkLog(harness: RuntimeHarness, executionId: string): Promise<void> {
      const events = await harness.store.read(executionId);
      expect(events.filter((event) => terminalTypes.has(event.type))).toHaveLength(1);
      const completed = events.filter((event) => event.type === 'step.completed');
      expect(completed.map((event) => (event.payload as { name: string }).name)).toEqual([
        'a',
        'b',
        'c',
      ]);
      expect((await harness.store.verify(executionId)).ok).toBe(true);
    }

    for (const mode of ['before', 'after'] as const) {
      it(`appends that fail ${mode === 'before' ? 'unwritten' : 'after writing'} with STORE_UNAVAILABLE are retried until the execution completes`, async () => {
        const harness = getHarness();
        const flaky = new FlakyEventStore(harness.store);
        const ran: string[] = [];
        const errors: unknown[] = [];
        const created = runtime({ store: flaky, onError: (error) => errors.push(error) });
        const id = freshId(`flaky-${mode}`);
        // Sequence 0 goes through; the next three appends (and the reads of the first resume
        // attempts) fail, as on a connection that drops and takes a while to come back.
        flaky.failNext({ appends: { count: 3, mode, fromSequence: 1 }, reads: 2 });
        const handle = await created.start(flow(ran), null, { executionId: id });
        expect(await whileAdvancing(harness, handle.result())).toEqual(['A', 'B', 'C']);
        expect(flaky.failed.appends).toBe(3);
        expect(flaky.failed.reads).toBe(2);
        await checkLog(harness, id);
        expect(created.activeExecutions).toEqual([]);
        expect(errors).toEqual([]);
      });
    }

    it('a parent whose child.started is durable but whose child never started starts it once when it resumes', async () => {
      const harness = getHarness();
      const flaky = new FlakyEventStore(harness.store);
      // Timer polls on (as a deployed node has them): a parent that suspended before its child
      // ended is woken by the child's signal through a poll.
      const created = runtime({ store: flaky, timerPollMs: 1_000 });
      const ran: number[] = [];
      const kid: Flow<number, number> = {
        name: 'flaky-kid',
        run: async (ctx, n) =>
          ctx.step('double', () => {
            ran.push(n);
            return n * 2;
          }),
      };
      const parent: Flow<null, number> = {
        name: 'flaky-parent',
        run: async (ctx) => ctx.child(kid, 21),
      };
      const id = freshId('flaky-child');
      // The parent's child.started is durable, then the child's own start fails: the parent's
      // driver stops with the child not started, as a process killed between the two would.
      flaky.failNext({ appends: { count: 1, mode: 'before', executionId: `${id}.0` } });
      const handle = await created.start(parent, null, { executionId: id });
      expect(await whileAdvancing(harness, handle.result())).toBe(42);
      expect(flaky.failed.appends).toBe(1);
      const events = await harness.store.read(id);
      expect(events.filter((event) => event.type === 'child.started')).toHaveLength(1);
      const child = await harness.store.read(`${id}.0`);
      expect(child.filter((event) => event.type === 'execution.started')).toHaveLength(1);
      expect(ran).toEqual([21]);
    });

    it('appends that fail with STORE_BUSY (a lock timeout) are retried the same way', async () => {
      const harness = getHarness();
      const flaky = new FlakyEventStore(harness.store);
      const created = runtime({ store: flaky });
      flaky.failNext({
        appends: { count: 2, mode: 'before', fromSequence: 1 },
        code: 'STORE_BUSY',
      });
      const handle = await created.start(flow([]), null, { executionId: freshId('flaky-busy') });
      expect(await whileAdvancing(harness, handle.result())).toEqual(['A', 'B', 'C']);
      expect(flaky.failed.appends).toBe(2);
      await checkLog(harness, handle.executionId);
    });

    it('a start whose first append fails rejects with STORE_UNAVAILABLE; a started one still completes', async () => {
      const harness = getHarness();
      const flaky = new FlakyEventStore(harness.store);
      const created = runtime({ store: flaky });
      const lost = freshId('flaky-start-lost');
      flaky.failNext({ appends: { count: 1, mode: 'before' } });
      const refused = await created.start(flow([]), null, { executionId: lost }).then(
        () => 'resolved',
        (error: { code?: string }) => error.code,
      );
      expect(refused).toBe(ErrorCode.STORE_UNAVAILABLE);
      // The acknowledgement of sequence 0 was lost but it committed: the log is the truth.
      const committed = freshId('flaky-start-committed');
      flaky.failNext({ appends: { count: 1, mode: 'after' } });
      await created.start(flow([]), null, { executionId: committed }).catch(() => undefined);
      const handle = created.attach<string[]>(committed);
      expect(await whileAdvancing(harness, handle.result())).toEqual(['A', 'B', 'C']);
      await checkLog(harness, committed);
      expect(await harness.store.read(lost)).toEqual([]);
    });

    it('starting again after a start rejected with STORE_UNAVAILABLE drives the execution once', async () => {
      const harness = getHarness();
      const flaky = new FlakyEventStore(harness.store);
      const ran: string[] = [];
      const created = runtime({ store: flaky });
      for (const mode of ['before', 'after'] as const) {
        const id = freshId(`flaky-start-again-${mode}`);
        flaky.failNext({ appends: { count: 1, mode } });
        const first = await created.start(flow(ran), null, { executionId: id }).then(
          () => 'resolved',
          (error: { code?: string }) => error.code,
        );
        expect(first).toBe(ErrorCode.STORE_UNAVAILABLE);
        // The caller retries at once, before the runtime's own resume from the log fired.
        const again = await created.start(flow(ran), null, { executionId: id });
        expect(again.existing).toBe(mode === 'after');
        expect(await whileAdvancing(harness, again.result())).toEqual(['A', 'B', 'C']);
        await checkLog(harness, id);
      }
    });

    it('a start again does not race the pending resume of the execution it failed to confirm', async () => {
      const harness = getHarness();
      const flaky = new FlakyEventStore(harness.store);
      const created = runtime({ store: flaky });
      const id = freshId('flaky-start-race');
      flaky.failNext({ appends: { count: 1, mode: 'after' } });
      await created.start(flow([]), null, { executionId: id }).catch(() => undefined);
      // Hold any second append of sequence 0 while the runtime's own resume comes due.
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const append = flaky.append.bind(flaky);
      flaky.append = async (envelopes, guard) => {
        if (envelopes[0]?.sequence === 0) await held;
        return append(envelopes, guard);
      };
      const again = created.start(flow([]), null, { executionId: id });
      await new Promise((resolve) => setTimeout(resolve, 5));
      await harness.clock.advance(60_000);
      release();
      const handle = await again;
      expect(handle.existing).toBe(true);
      expect(await whileAdvancing(harness, handle.result())).toEqual(['A', 'B', 'C']);
      await checkLog(harness, id);
    });

    it('past storeRetriesMax the runtime gives up: result() rejects, onError hears it, recover() finishes it later', async () => {
      const harness = getHarness();
      const flaky = new FlakyEventStore(harness.store);
      const errors: Array<{ code?: string; fields?: { limit?: string } }> = [];
      const created = runtime({
        store: flaky,
        storeRetriesMax: 3,
        onError: (error) => errors.push(error as never),
      });
      const id = freshId('flaky-give-up');
      // The store stays down: every read fails until the plan is replaced.
      flaky.failNext({ appends: { count: 1, mode: 'before', fromSequence: 1 }, reads: 1_000 });
      const handle = await created.start(flow([]), null, { executionId: id });
      const code = await whileAdvancing(
        harness,
        handle.result().then(
          () => 'resolved',
          (error: { code?: string }) => error.code,
        ),
      );
      expect(code).toBe(ErrorCode.STORE_UNAVAILABLE);
      for (let round = 0; round < 400 && errors.length === 0; round++) {
        await harness.clock.advance(60_000);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(errors.map((error) => [error.code, error.fields?.limit])).toEqual([
        [ErrorCode.STORE_UNAVAILABLE, 'storeRetriesMax'],
      ]);
      expect(created.activeExecutions).toEqual([]);
      // The store is back: recovery (on boot, or recoverEveryMs) resumes it from the log.
      flaky.failNext({});
      expect(await created.recover()).toEqual([id]);
      expect(await created.attach<string[]>(id).result()).toEqual(['A', 'B', 'C']);
      await checkLog(harness, id);
    });

    it('the store retry settings must be positive integers', () => {
      for (const bad of [
        { storeRetryDelayMs: 0 },
        { storeRetryDelayMaxMs: -1 },
        { storeRetriesMax: 1.5 },
      ]) {
        let code = 'none';
        try {
          runtime(bad);
        } catch (error) {
          code = (error as { code: string }).code;
        }
        expect(code).toBe(ErrorCode.INVALID_ARGUMENT);
      }
    });

    it('a transaction that fails with STORE_UNAVAILABLE is retried, not recorded as the step failing', async () => {
      const harness = getHarness();
      if (!isTransactional(harness.store)) return;
      const flaky = new FlakyEventStore(harness.store);
      const created = runtime({ store: flaky });
      let runs = 0;
      const txFlow: Flow<null, number> = {
        name: 'flaky-transaction',
        run: async (ctx) =>
          ctx.transaction('pay', () => {
            runs += 1;
            return 7;
          }),
      };
      flaky.failNext({ transactions: 2 });
      const handle = await created.start(txFlow, null, { executionId: freshId('flaky-tx') });
      expect(await whileAdvancing(harness, handle.result())).toBe(7);
      expect(flaky.failed.transactions).toBe(2);
      expect(runs).toBe(1);
      const events = await harness.store.read(handle.executionId);
      expect(events.filter((event) => event.type === 'step.failed')).toEqual([]);
      expect(events.filter((event) => terminalTypes.has(event.type))).toHaveLength(1);
    });

    it('a failed read of the inbox inside ctx.waitForSignal is retried from the log, not the execution failing', async () => {
      // Found by the deterministic simulation (tools/dst, agent scenario): the transient error
      // reached the flow, which ended with execution.failed (STORE_UNAVAILABLE).
      const harness = getHarness();
      class FirstInboxReadFails extends FlakyEventStore {
        inboxReads = 0;
        override readSignals(...args: Parameters<FlakyEventStore['readSignals']>) {
          this.inboxReads += 1;
          if (this.inboxReads === 1) {
            return Promise.reject(
              new LoomError(ErrorCode.STORE_UNAVAILABLE, 'readSignals failed: connection lost'),
            );
          }
          return super.readSignals(...args);
        }
      }
      const store = new FirstInboxReadFails(harness.store);
      const errors: unknown[] = [];
      // The harness's runtimes do not poll (timerPollMs 0); the signal below makes the execution
      // due and a poll wakes it. Every round moves the clock 60 s: a 5 ms poll fired 12,000 store
      // reads per round (0.7-1 s of a test on SQLite, 14 s on a loaded box), a 1 s poll fires 60.
      const created = runtime({
        store,
        onError: (error) => errors.push(error),
        timerPollMs: 1_000,
      });
      const waits: Flow<null, string> = {
        name: 'inbox-read-fails',
        run: async (ctx) => {
          await ctx.step('before', () => 'before');
          const go = await ctx.waitForSignal('go');
          return go.received ? String(go.payload) : 'timed out';
        },
      };
      const handle = await created.start(waits, null, { executionId: freshId('inbox-read') });
      // The failed read stops the driver; its resume from the log reads the inbox again.
      for (let round = 0; round < 400 && store.inboxReads < 2; round++) {
        await harness.clock.advance(60_000);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(store.inboxReads).toBeGreaterThanOrEqual(2);
      await whileAdvancing(harness, created.idle());
      await created.signal(handle.executionId, 'go', 'went');
      expect(await whileAdvancing(harness, handle.result())).toBe('went');
      const events = await harness.store.read(handle.executionId);
      expect(events.filter((event) => terminalTypes.has(event.type)).map((e) => e.type)).toEqual([
        'execution.completed',
      ]);
      expect(events.filter((event) => event.type === 'step.completed')).toHaveLength(1);
      expect(errors).toEqual([]);
    });

    it('a failed look at the inbox after suspending reaches onError, not the process, and the signal still wakes the execution', async () => {
      // Found by the deterministic simulation (tools/dst): the look rejected unhandled, which
      // crashes a Node process, and a signal that came during it was never seen.
      const harness = getHarness();
      class InboxFailsOnce extends FlakyEventStore {
        inboxReads = 0;
        override readSignals(...args: Parameters<FlakyEventStore['readSignals']>) {
          this.inboxReads += 1;
          // Read 1 is the driver's own look before it suspends; read 2 the look after.
          if (this.inboxReads === 2) {
            return Promise.reject(
              new LoomError(ErrorCode.STORE_UNAVAILABLE, 'readSignals failed: connection lost'),
            );
          }
          return super.readSignals(...args);
        }
      }
      const store = new InboxFailsOnce(harness.store);
      const errors: unknown[] = [];
      const created = runtime({
        store,
        onError: (error) => errors.push(error),
        timerPollMs: 1_000,
      });
      const waits: Flow<null, string> = {
        name: 'inbox-look',
        run: async (ctx) => {
          const go = await ctx.waitForSignal('go');
          return go.received ? String(go.payload) : 'timed out';
        },
      };
      const handle = await created.start(waits, null, { executionId: freshId('inbox-look') });
      // The driver looks, suspends, then looks again (the read that fails): wait for that one.
      for (let round = 0; round < 400 && store.inboxReads < 2; round++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(store.inboxReads).toBeGreaterThanOrEqual(2);
      await whileAdvancing(harness, created.idle());
      await created.signal(handle.executionId, 'go', 'went');
      expect(await whileAdvancing(harness, handle.result())).toBe('went');
      expect(errors).toEqual([]);
    });
  });
}

import { expect, it } from 'vitest';
import type { LeaseStore } from '../lease-store.js';
import type { Flow } from '../runtime/flow.js';
import type { KernelRuntime, KernelRuntimeOptions } from '../runtime/runtime.js';
import type { RuntimeEventMap, RuntimeEventName } from '../runtime/runtime-events.js';
import type { RuntimeSection, SectionDescribe } from './conformance-sections.js';
import { deferred } from './deferred.js';
import { freshId } from './event-store-conformance.js';
import { tickLeases } from './lease-calls.js';
import type { RuntimeHarness } from './runtime-harness.js';
import { until } from './until.js';

type Seen = Array<{ [E in RuntimeEventName]: { event: E } & RuntimeEventMap[E] }[RuntimeEventName]>;

/** Records every event of `runtime` (in order) into the returned array. */
function record(runtime: KernelRuntime): Seen {
  const seen: Seen = [];
  const names: RuntimeEventName[] = [
    'lease:acquired',
    'lease:renewed',
    'lease:lost',
    'execution:resumed',
    'execution:recovered',
    'timer:fired',
    'store:error',
  ];
  for (const event of names) {
    runtime.events.on(event, (payload) => seen.push({ event, ...payload } as Seen[number]));
  }
  return seen;
}

/**
 * `runtime.events` on every backend: each event is emitted where it happens, with its payload,
 * and a listener that throws disturbs neither the runtime nor the other listeners.
 */
export function runtimeEventsConformance(
  getHarness: () => RuntimeHarness,
  runtime: (options?: Partial<KernelRuntimeOptions>) => KernelRuntime,
  section: SectionDescribe<RuntimeSection>,
): void {
  section('runtime events', () => {
    const hanging = (name: string, hold: Promise<void>): Flow<null, string> => ({
      name,
      run: async (ctx) => {
        await ctx.step('hold', () => hold.then(() => 1));
        return 'done';
      },
    });

    it('lease:acquired, lease:renewed, then lease:lost when another node takes over', async () => {
      const harness = getHarness();
      const hold = deferred();
      const flow = hanging('events-lease', hold.promise);
      const aNode = runtime({
        nodeId: 'events-a',
        leases: harness.leases,
        leaseMode: 'eager',
        leaseTtlMs: 3_000,
        renewEveryMs: 60_000,
      });
      const seenA = record(aNode);
      const id = freshId('events-lease');
      const handle = await aNode.start(flow, null, { executionId: id });
      expect(seenA).toContainEqual({
        event: 'lease:acquired',
        nodeId: 'events-a',
        executionId: id,
      });
      await tickLeases(aNode);
      expect(seenA).toContainEqual({ event: 'lease:renewed', nodeId: 'events-a', executionId: id });
      await until(async () => (await harness.countRows(id)) >= 2, '2 rows');
      await harness.clock.advance(3_001);
      const bNode = runtime({
        nodeId: 'events-b',
        leases: harness.leases,
        flows: [flow as Flow<never, unknown>],
      });
      const seenB = record(bNode);
      expect(await bNode.recover()).toEqual([id]);
      expect(seenB).toEqual([
        { event: 'lease:acquired', nodeId: 'events-b', executionId: id },
        { event: 'execution:resumed', nodeId: 'events-b', executionId: id, cause: 'recovery' },
        { event: 'execution:recovered', nodeId: 'events-b', executionId: id },
      ]);
      await tickLeases(aNode);
      expect(seenA).toContainEqual({ event: 'lease:lost', nodeId: 'events-a', executionId: id });
      hold.resolve();
      expect(await handle.result()).toBe('done');
    });

    it('timer:fired and execution:resumed (cause timer) when wakeDue claims a due sleeper', async () => {
      const harness = getHarness();
      const sleeper: Flow<null, string> = {
        name: 'events-sleeper',
        run: async (ctx) => {
          await ctx.sleep(10_000);
          return 'woke';
        },
      };
      const created = runtime({ nodeId: 'events-timer', flows: [sleeper as Flow<never, unknown>] });
      const seen = record(created);
      const id = freshId('events-timer');
      const handle = await created.start(sleeper, null, { executionId: id });
      await until(async () => created.activeExecutions.length === 0, 'the suspension');
      await harness.clock.advance(10_000);
      expect(await created.wakeDue()).toEqual([id]);
      expect(await handle.result()).toBe('woke');
      // Lease events come too where the event store brings its own lease store (SQLite, Postgres).
      expect(seen.filter((entry) => !entry.event.startsWith('lease:'))).toEqual([
        { event: 'timer:fired', nodeId: 'events-timer', executionId: id },
        { event: 'execution:resumed', nodeId: 'events-timer', executionId: id, cause: 'timer' },
      ]);
    });

    it('execution:resumed (cause resume) when resume() takes an execution over', async () => {
      const harness = getHarness();
      const hold = deferred();
      const flow = hanging('events-resume', hold.promise);
      const first = runtime({ nodeId: 'events-first' });
      const id = freshId('events-resume');
      await first.start(flow, null, { executionId: id });
      await until(async () => (await harness.countRows(id)) >= 2, '2 rows');
      const second = runtime({ nodeId: 'events-second', flows: [flow as Flow<never, unknown>] });
      const seen = record(second);
      const handle = await second.resume<string>(id);
      // Lease events come too where the event store brings its own lease store (SQLite, Postgres).
      expect(seen.filter((entry) => !entry.event.startsWith('lease:'))).toEqual([
        { event: 'execution:resumed', nodeId: 'events-second', executionId: id, cause: 'resume' },
      ]);
      hold.resolve();
      expect(await handle.result()).toBe('done');
    });

    it('store:error (and onError) when a background lease renewal fails; the next round succeeds', async () => {
      const harness = getHarness();
      let failRenewals = true;
      const failure = new Error('renewMany failed on purpose');
      const leases: LeaseStore = {
        get: (id) => harness.leases.get(id),
        acquireMany: (owner, ids, ttlMs) => harness.leases.acquireMany(owner, ids, ttlMs),
        renewMany: (owner, ids, ttlMs) =>
          failRenewals ? Promise.reject(failure) : harness.leases.renewMany(owner, ids, ttlMs),
        releaseMany: (owner, ids) => harness.leases.releaseMany(owner, ids),
        claimNode: (nodeId) => harness.leases.claimNode(nodeId),
        liveNodes: (nodeIds) => harness.leases.liveNodes(nodeIds),
        countLiveNodes: () => harness.leases.countLiveNodes(),
        close: async () => undefined,
      };
      const reported: unknown[] = [];
      const hold = deferred();
      const created = runtime({
        nodeId: 'events-error',
        leases,
        leaseMode: 'eager',
        onError: (error) => reported.push(error),
      });
      const seen = record(created);
      const id = freshId('events-error');
      const handle = await created.start(hanging('events-error', hold.promise), null, {
        executionId: id,
      });
      await tickLeases(created);
      expect(seen.filter((entry) => entry.event === 'store:error')).toEqual([
        { event: 'store:error', nodeId: 'events-error', error: failure },
      ]);
      expect(reported).toEqual([failure]);
      failRenewals = false;
      await tickLeases(created);
      expect(seen.at(-1)).toEqual({
        event: 'lease:renewed',
        nodeId: 'events-error',
        executionId: id,
      });
      hold.resolve();
      expect(await handle.result()).toBe('done');
    });

    it('a listener that throws breaks neither the runtime nor the listeners after it', async () => {
      const harness = getHarness();
      const reported: unknown[] = [];
      const created = runtime({
        nodeId: 'events-throwing',
        leases: harness.leases,
        leaseMode: 'eager',
        onError: (error) => reported.push(error),
      });
      const boom = new Error('listener failed on purpose');
      created.events.on('lease:acquired', () => {
        throw boom;
      });
      const after: string[] = [];
      created.events.on('lease:acquired', (event) => after.push(event.executionId));
      const flow: Flow<null, string> = {
        name: 'events-throwing',
        run: async (ctx) => ctx.step('one', () => 'fine'),
      };
      const id = freshId('events-throwing');
      const handle = await created.start(flow, null, { executionId: id });
      expect(await handle.result()).toBe('fine');
      expect(after).toEqual([id]);
      expect(reported).toEqual([boom]);
    });

    it('a listener removed with the function on() returned hears nothing more', async () => {
      const harness = getHarness();
      const created = runtime({ nodeId: 'events-off', leases: harness.leases, leaseMode: 'eager' });
      const heard: string[] = [];
      const stop = created.events.on('lease:acquired', (event) => heard.push(event.executionId));
      const flow: Flow<null, number> = {
        name: 'events-off',
        run: async (ctx) => ctx.step('a', () => 1),
      };
      const first = await created.start(flow, null);
      await first.result();
      stop();
      await (await created.start(flow, null)).result();
      expect(heard).toEqual([first.executionId]);
    });
  });
}

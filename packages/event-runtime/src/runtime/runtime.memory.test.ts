import { describe, expect, it } from 'vitest';
import { InMemoryEventStore } from '../store/memory/in-memory-event-store.js';
import { InMemoryLeaseStore } from '../store/memory/in-memory-lease-store.js';
import { InMemorySnapshotStore } from '../store/memory/in-memory-snapshot-store.js';
import { ManualClock } from '../testing/manual-clock.js';
import { runtimeConformance } from '../testing/runtime-conformance.js';
import { storedRows } from '../testing/store-hooks.js';
import { createKernelRuntime } from './runtime.js';

runtimeConformance('memory', async () => {
  const clock = new ManualClock();
  const store = new InMemoryEventStore({ clock });
  return {
    store,
    leases: new InMemoryLeaseStore({ clock }),
    snapshots: new InMemorySnapshotStore(),
    clock,
    countRows: async (executionId) => storedRows(store, executionId).length,
    close: () => store.close(),
  };
});

describe('runtime on the memory store', () => {
  it("serve() keeps the process alive through the runtime's clock until shutdown()", async () => {
    const clock = new ManualClock();
    const runtime = createKernelRuntime({
      store: new InMemoryEventStore({ clock }),
      clock,
      timerPollMs: 0,
    });
    const before = clock.pendingTimers;
    const serving = runtime.serve();
    expect(clock.pendingTimers).toBe(before + 1);
    await runtime.shutdown();
    await serving;
    expect(clock.pendingTimers).toBe(0);
  });

  it('a transactional step is refused with TRANSACTIONS_UNSUPPORTED, recorded as a failure', async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore() });
    const handle = await runtime.start(
      { name: 'tx', run: async (ctx) => ctx.transaction('t', () => 1) },
      null,
    );
    await expect(handle.result()).rejects.toMatchObject({
      code: 'EXECUTION_FAILED',
      fields: { step: null, error: { code: 'TRANSACTIONS_UNSUPPORTED' } },
    });
    await runtime.shutdown();
  });

  describe('retry while another node holds the lease', () => {
    /** A lease store that counts node `one`'s acquires and frees `other`'s lease after `freeAfter`. */
    class ContestedLeases extends InMemoryLeaseStore {
      looks = 0;
      constructor(
        clock: ManualClock,
        private readonly freeAfter: number,
      ) {
        super({ clock });
      }
      override async acquireMany(owner: string, ids: readonly string[], ttlMs: number) {
        if (owner === 'one') {
          this.looks += 1;
          if (this.looks === this.freeAfter) await this.releaseMany('other', ids);
        }
        return super.acquireMany(owner, ids, ttlMs);
      }
    }

    const failing = (fail: { now: boolean }) => ({
      name: 'contested',
      run: async (ctx: { step: (name: string, fn: () => string) => Promise<string> }) =>
        ctx.step('only', () => {
          if (fail.now) throw new Error('down');
          return 'up';
        }),
    });

    async function failedUnderHeldLease(freeAfter: number) {
      const clock = new ManualClock();
      const leases = new ContestedLeases(clock, freeAfter);
      const fail = { now: true };
      const flow = failing(fail);
      const runtime = createKernelRuntime({
        store: new InMemoryEventStore({ clock }),
        leases,
        clock,
        nodeId: 'one',
        flows: [flow],
      });
      const handle = await runtime.start(flow, null, { executionId: 'contested-1' });
      await expect(handle.result()).rejects.toMatchObject({ code: 'EXECUTION_FAILED' });
      fail.now = false;
      leases.looks = 0;
      expect(await leases.acquireMany('other', ['contested-1'], 60_000)).toEqual(
        new Set(['contested-1']),
      );
      return { runtime, leases };
    }

    it('waits out a lease held through more than five looks, then reopens the execution', async () => {
      const { runtime, leases } = await failedUnderHeldLease(12);
      const reopened = await runtime.retry('contested-1');
      expect(await reopened.result()).toBe('up');
      expect(leases.looks).toBe(12);
      await runtime.shutdown();
    });

    it('gives up with STORE_BUSY naming the lease after 50 looks at a lease never freed', async () => {
      const { runtime, leases } = await failedUnderHeldLease(Number.POSITIVE_INFINITY);
      await expect(runtime.retry('contested-1')).rejects.toMatchObject({
        code: 'STORE_BUSY',
        fields: { executionId: 'contested-1', limit: 'retryLeaseLooksMax' },
      });
      expect(leases.looks).toBe(50);
      await runtime.shutdown();
    });
  });
});

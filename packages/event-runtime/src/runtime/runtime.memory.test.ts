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
});

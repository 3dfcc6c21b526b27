import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../errors.js';
import { InMemoryEventStore } from '../index.js';
import { InMemoryLeaseStore } from '../store/memory/in-memory-lease-store.js';
import type { Flow } from './flow.js';
import { createKernelRuntime } from './runtime.js';

const noop: Flow<null, string> = { name: 'noop', run: async () => 'ok' };

describe('runtime.health()', () => {
  it('ready with a reachable store; the claim is pending until the first start, then held', async () => {
    const runtime = createKernelRuntime({
      store: new InMemoryEventStore(),
      leases: new InMemoryLeaseStore(),
      flows: [noop as Flow<never, unknown>],
      recoverEveryMs: 0,
    });
    try {
      const first = await runtime.health();
      expect(first.ready).toBe(true);
      expect(first.store).toEqual({ reachable: true });
      expect(['pending', 'held']).toContain(first.nodeClaim);
      await (await runtime.start(noop, null)).result();
      expect(await runtime.health()).toEqual({
        ready: true,
        store: { reachable: true },
        nodeClaim: 'held',
        shuttingDown: false,
      });
    } finally {
      await runtime.shutdown();
    }
    const after = await runtime.health();
    expect(after.ready).toBe(false);
    expect(after.shuttingDown).toBe(true);
  });

  it("without leases the claim is 'none'; a bad timeoutMs is INVALID_ARGUMENT", async () => {
    const runtime = createKernelRuntime({ store: new InMemoryEventStore(), recoverEveryMs: 0 });
    try {
      expect((await runtime.health()).nodeClaim).toBe('none');
      await expect(runtime.health({ timeoutMs: 0 })).rejects.toMatchObject({
        code: ErrorCode.INVALID_ARGUMENT,
      });
    } finally {
      await runtime.shutdown();
    }
  });
});

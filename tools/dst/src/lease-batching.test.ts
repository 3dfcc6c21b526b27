// Lease batching pinned by call counts, not time: N executions that drive for a long time cost
// ceil(N / leaseBatchMax) lease-store calls per round, however large N is, and N acquires (or
// releases) asked for together are group-committed into that many calls. The real runtime on
// the in-memory stores and a ManualClock; rounds are run by hand (`tickLeases`), so every count
// is exact.
import {
  InMemoryEventStore,
  InMemoryLeaseStore,
  type LeaseStore,
  Limits,
} from '@loom/event-runtime';
import { leaseCalls, ManualClock, tickLeases } from '@loom/event-runtime/testing';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';

const chunk = Limits.leaseBatchMax;
const ttlMs = 30_000;
const graceMs = 10_000;
/** Ticks renewed in each case. */
const renewTicks = 3;

/** ceil(n / leaseBatchMax): the calls one round of n ids may cost. */
const batches = (n: number) => Math.ceil(n / chunk);

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

function world(leaseMode: 'lazy' | 'eager') {
  const clock = new ManualClock();
  const store = new InMemoryEventStore({ clock });
  const leases = new InMemoryLeaseStore({ clock });
  const hang = deferred();
  const flow = defineFlow({ name: 'long-running' }, async (ctx) =>
    ctx.step('hang', async () => {
      await hang.promise;
      return 'done';
    }),
  );
  const runtime = createRuntime({
    nodeId: 'batcher',
    clock,
    store,
    leases,
    leaseMode,
    leaseTtlMs: ttlMs,
    lazyGraceMs: graceMs,
    // No renewal timer, no polls: every lease round below is one `tickLeases`, counted.
    renewEveryMs: 365 * 24 * 3_600_000,
    timerPollMs: 0,
    recoverEveryMs: 0,
    flows: [flow],
  });
  return { clock, leases, hang, flow, runtime };
}

async function ownerAt(leases: LeaseStore, id: string) {
  return (await leases.get(id))?.owner;
}

// N = leaseBatchMax + 1 is the first N that needs two calls per round.
const sizes = [1, 10, 250, 1_000, chunk + 1];

describe('lease batching, pinned by call counts', () => {
  it('the chunk is leaseBatchMax (10,000), so the sizes below cost 1, 1, 1, 1 and 2 calls', () => {
    expect(chunk).toBe(10_000);
    expect(sizes.map(batches)).toEqual([1, 1, 1, 1, 2]);
  });

  for (const n of sizes) {
    it(`lazy, N = ${n}: one group-committed acquire round, ${batches(n)} renewMany per tick, ${batches(n)} releaseMany`, async () => {
      const { clock, leases, hang, flow, runtime } = world('lazy');
      const ids = Array.from({ length: n }, (_, i) => `lazy-${n}-${i}`);
      const handles = await Promise.all(
        ids.map((executionId) => runtime.start(flow, null, { executionId })),
      );
      const sample = [ids[0], ids.at(-1)] as string[];
      // Within the grace: no lease call at all.
      await tickLeases(runtime);
      expect(leaseCalls(runtime)).toEqual({ acquireMany: 0, renewMany: 0, releaseMany: 0 });
      // Past the grace: the N lazy starts are leased in one round, ceil(N/chunk) calls.
      await clock.advance(graceMs);
      await tickLeases(runtime);
      expect(leaseCalls(runtime)).toEqual({
        acquireMany: batches(n),
        renewMany: 0,
        releaseMany: 0,
      });
      for (const id of sample) expect(await ownerAt(leases, id)).toBe('batcher');
      for (let tick = 1; tick <= renewTicks; tick++) {
        await clock.advance(graceMs);
        await tickLeases(runtime);
        expect(leaseCalls(runtime)).toEqual({
          acquireMany: batches(n),
          renewMany: tick * batches(n),
          releaseMany: 0,
        });
        for (const id of sample) {
          expect(await leases.get(id)).toMatchObject({
            owner: 'batcher',
            expiresAtMs: clock.now() + ttlMs,
          });
        }
      }
      hang.resolve();
      expect(new Set(await Promise.all(handles.map((handle) => handle.result())))).toEqual(
        new Set(['done']),
      );
      // The N releases ride with the next round: ceil(N/chunk) calls, and nothing is renewed.
      await tickLeases(runtime);
      expect(leaseCalls(runtime)).toEqual({
        acquireMany: batches(n),
        renewMany: renewTicks * batches(n),
        releaseMany: batches(n),
      });
      for (const id of sample) expect(await leases.get(id)).toBeUndefined();
      await runtime.shutdown();
      expect(leaseCalls(runtime).releaseMany).toBe(batches(n));
    });
  }

  for (const n of sizes) {
    it(`eager, N = ${n} started together: ${batches(n)} acquireMany before the first append, ${batches(n)} renewMany per tick`, async () => {
      const { clock, leases, hang, flow, runtime } = world('eager');
      const ids = Array.from({ length: n }, (_, i) => `eager-${n}-${i}`);
      const handles = await Promise.all(
        ids.map((executionId) => runtime.start(flow, null, { executionId })),
      );
      // N starts in one turn share their acquires: ceil(N/chunk) calls, no tick needed.
      expect(leaseCalls(runtime)).toEqual({
        acquireMany: batches(n),
        renewMany: 0,
        releaseMany: 0,
      });
      for (const id of [ids[0], ids.at(-1)] as string[]) {
        expect(await ownerAt(leases, id)).toBe('batcher');
      }
      for (let tick = 1; tick <= renewTicks; tick++) {
        await clock.advance(graceMs);
        await tickLeases(runtime);
        expect(leaseCalls(runtime).renewMany).toBe(tick * batches(n));
      }
      hang.resolve();
      await Promise.all(handles.map((handle) => handle.result()));
      await tickLeases(runtime);
      expect(leaseCalls(runtime)).toEqual({
        acquireMany: batches(n),
        renewMany: renewTicks * batches(n),
        releaseMany: batches(n),
      });
      await runtime.shutdown();
    });
  }
});

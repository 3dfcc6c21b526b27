import { describe, expect, it } from 'vitest';
import type { EventEnvelope, StoredEvent } from './envelope.js';
import { ErrorCode, type LoomError } from './errors.js';
import type { EventStore } from './event-store.js';
import { ForwardingEventStore } from './forwarding-event-store.js';
import { openMemory } from './open-memory.js';
import { openSharded, ShardedSnapshotStore } from './open-sharded.js';
import { createKernelRuntime } from './runtime/runtime.js';
import { ShardCursor, ShardedEventStore, shardCountMax, shardOf } from './sharded-event-store.js';
import { InMemoryEventStore } from './store/memory/in-memory-event-store.js';
import { InMemoryLeaseStore } from './store/memory/in-memory-lease-store.js';
import { InMemorySnapshotStore } from './store/memory/in-memory-snapshot-store.js';
import { backendConformance } from './testing/backend-conformance.js';
import { eventStoreConformance, freshId } from './testing/event-store-conformance.js';
import { ManualClock } from './testing/manual-clock.js';
import { runtimeConformance } from './testing/runtime-conformance.js';
import { sameProcessPeer } from './testing/same-process-peer.js';
import { storedRows } from './testing/store-hooks.js';

function env(executionId: string, sequence: number): EventEnvelope {
  return { executionId, sequence, type: `test.event.${sequence}`, payload: { n: sequence } };
}

async function refusal(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected the call to fail');
}

function memoryShards(count: number, clock?: ManualClock): InMemoryEventStore[] {
  return Array.from(
    { length: count },
    () => new InMemoryEventStore(clock === undefined ? {} : { clock }),
  );
}

/** Ids that `shardOf` puts on `shard` of `count`. */
function idsOn(shard: number, count: number, howMany: number, prefix = 'on'): string[] {
  const ids: string[] = [];
  for (let n = 0; ids.length < howMany; n++) {
    const id = freshId(`${prefix}${shard}-${n}`);
    if (shardOf(id, count) === shard) ids.push(id);
  }
  return ids;
}

for (const count of [1, 3]) {
  eventStoreConformance(`sharded over ${count} memory store(s)`, async () => {
    const shards = memoryShards(count);
    const store = new ShardedEventStore(shards);
    const peers: ShardedEventStore[] = [];
    const home = (id: string) => shards[shardOf(id, count)] as InMemoryEventStore;
    return {
      store,
      // One shard is one database: then the order of commits holds, as on a plain store.
      crossExecutionOrder: count === 1 ? 'commit' : 'per-execution',
      openPeer: async () => {
        const peer = new ShardedEventStore(shards.map((shard) => sameProcessPeer(shard)));
        peers.push(peer);
        return peer;
      },
      countRows: async (executionId) => storedRows(home(executionId), executionId).length,
      tamper: async (executionId, sequence, payloadText) => {
        const row = storedRows(home(executionId), executionId)[sequence];
        if (row !== undefined) row.payloadText = payloadText;
      },
      close: () => store.close(),
    };
  });
}

runtimeConformance('sharded over 3 memory stores', async () => {
  const clock = new ManualClock();
  const shards = memoryShards(3, clock);
  const store = new ShardedEventStore(shards);
  return {
    store,
    leases: new InMemoryLeaseStore({ clock }),
    snapshots: new ShardedSnapshotStore(
      shards.map(() => new InMemorySnapshotStore()),
      store,
    ),
    clock,
    countRows: async (executionId) =>
      storedRows(store.shardFor(executionId) as InMemoryEventStore, executionId).length,
    close: () => store.close(),
  };
});

backendConformance('sharded over 3 memory backends', async () =>
  openSharded([openMemory(), openMemory(), openMemory()]),
);

describe('shardOf', () => {
  it('is pinned: these ids land on these shards forever (changing it strands data)', () => {
    const ids = ['order-1', 'order-2', 'order-3', 'invoice-42', 'ü-ß-文字', ''];
    expect(ids.map((id) => shardOf(id, 2))).toMatchInlineSnapshot(`
      [
        1,
        0,
        1,
        0,
        0,
        1,
      ]
    `);
    expect(ids.map((id) => shardOf(id, 3))).toMatchInlineSnapshot(`
      [
        2,
        2,
        2,
        0,
        0,
        1,
      ]
    `);
    expect(ids.map((id) => shardOf(id, 16))).toMatchInlineSnapshot(`
      [
        8,
        8,
        5,
        12,
        0,
        1,
      ]
    `);
  });

  it('spreads ids evenly, and growing N to N+1 moves only about 1/(N+1) of them, all to the new shard', () => {
    const ids = Array.from({ length: 6_000 }, (_, n) => `execution-${n}`);
    for (const count of [2, 3, 4]) {
      const perShard = Array.from({ length: count }, () => 0);
      for (const id of ids)
        perShard[shardOf(id, count)] = (perShard[shardOf(id, count)] as number) + 1;
      for (const n of perShard) {
        expect(n).toBeGreaterThan((ids.length / count) * 0.9);
        expect(n).toBeLessThan((ids.length / count) * 1.1);
      }
      const moved = ids.filter((id) => shardOf(id, count) !== shardOf(id, count + 1));
      for (const id of moved) expect(shardOf(id, count + 1)).toBe(count);
      expect(moved.length).toBeGreaterThan((ids.length / (count + 1)) * 0.9);
      expect(moved.length).toBeLessThan((ids.length / (count + 1)) * 1.1);
    }
  });

  it('refuses a shard count outside 1..shardCountMax with INVALID_ARGUMENT', () => {
    for (const bad of [0, -1, 1.5, shardCountMax + 1, Number.NaN]) {
      expect(() => shardOf('x', bad)).toThrowError(
        expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
      );
    }
    expect(() => new ShardedEventStore([])).toThrowError(
      expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
    );
    expect(() => openSharded([])).toThrowError(
      expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
    );
  });
});

describe('ShardCursor', () => {
  it('round-trips through text and refuses anything else with INVALID_ARGUMENT', () => {
    const cursor = ShardCursor.start(3).advance([
      { position: 7 * 3 + 1 } as StoredEvent,
      { position: 4 * 3 + 2 } as StoredEvent,
    ]);
    expect(cursor.toString()).toBe('0.7.4');
    expect(ShardCursor.parse('0.7.4').positions).toEqual([0, 7, 4]);
    for (const bad of ['', '1..2', '-1.0', '01.2', 'a.b', '1.2.3.x', '9007199254740993']) {
      expect(() => ShardCursor.parse(bad), bad).toThrowError(
        expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }),
      );
    }
  });

  it('a cursor of another shard count is refused with INVALID_ARGUMENT', async () => {
    const store = new ShardedEventStore(memoryShards(2));
    const error = await refusal(store.readAll({ after: ShardCursor.start(3) }));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.fields.path).toBe('after');
  });
});

describe('ShardedEventStore', () => {
  it('keeps each execution on its shard and names the shard in the merged position', async () => {
    const shards = memoryShards(3);
    const store = new ShardedEventStore(shards);
    const [a] = idsOn(0, 3, 1);
    const [b] = idsOn(2, 3, 1);
    const storedA = await store.append([env(a as string, 0), env(a as string, 1)]);
    const storedB = await store.append([env(b as string, 0)]);
    expect(storedRows(shards[0] as InMemoryEventStore, a as string)).toHaveLength(2);
    expect(storedRows(shards[2] as InMemoryEventStore, b as string)).toHaveLength(1);
    expect(storedRows(shards[1] as InMemoryEventStore, a as string)).toHaveLength(0);
    for (const event of storedA) expect(event.position % 3).toBe(0);
    for (const event of storedB) expect(event.position % 3).toBe(2);
    const inner = await (shards[2] as InMemoryEventStore).read(b as string);
    expect(storedB[0]?.position).toBe((inner[0]?.position as number) * 3 + 2);
    expect((await store.read(a as string)).map((event) => event.position)).toEqual(
      storedA.map((event) => event.position),
    );
  });

  it('appendBatch splits by shard: one write per shard, refusals per execution, merged positions', async () => {
    const shards = memoryShards(3);
    // Shard 1 offers no appendBatch: its requests go one append each.
    const plain = new ForwardingEventStore(shards[1] as InMemoryEventStore);
    const store = new ShardedEventStore([shards[0], plain, shards[2]] as EventStore[]);
    const counting = shards.map((shard) => {
      const calls = { batches: 0, appends: 0 };
      const batch = shard.appendBatch.bind(shard);
      const one = shard.append.bind(shard);
      shard.appendBatch = (requests) => {
        calls.batches += 1;
        return batch(requests);
      };
      shard.append = (envelopes, guard) => {
        calls.appends += 1;
        return one(envelopes, guard);
      };
      return calls;
    });
    const ids = [0, 1, 2].flatMap((shard) => idsOn(shard, 3, 2, `batch${shard}`));
    // One execution of shard 2 was taken over: its append is refused, its neighbours' commit.
    const fenced = ids[5] as string;
    await store.fences.advance(fenced);
    const outcomes = await store.appendBatch(
      ids.map((id) => ({ envelopes: [env(id, 0)], guard: { fenceEpoch: 0 } })),
    );
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true, true, false]);
    expect((outcomes[5] as { error: LoomError }).error.code).toBe(ErrorCode.FENCE_STALE);
    outcomes.forEach((outcome, index) => {
      if (!outcome.ok) return;
      expect((outcome.stored[0]?.position as number) % 3).toBe(Math.floor(index / 2));
    });
    expect(counting.map((calls) => calls.batches)).toEqual([1, 0, 1]);
    expect(counting[1]?.appends).toBe(2);
    expect(await store.read(fenced)).toEqual([]);
  });

  it("a cursor resumes exactly where one merged position would miss an earlier shard's event", async () => {
    const store = new ShardedEventStore(memoryShards(2));
    const [early] = idsOn(0, 2, 1, 'early');
    const [late] = idsOn(1, 2, 1, 'late');
    await store.append([env(early as string, 0)]);
    await store.append(Array.from({ length: 3 }, (_, n) => env(late as string, n)));
    const first = await store.readAll();
    expect(first.map((event) => event.executionId)).toEqual([early, late, late, late]);
    const last = first[first.length - 1] as StoredEvent;
    const cursor = ShardCursor.start(2).advance(first);
    await store.append([env(early as string, 1)]);
    expect(await store.readAll({ afterPosition: last.position })).toEqual([]);
    const resumed = await store.readAll({ after: ShardCursor.parse(cursor.toString()) });
    expect(resumed.map((event) => `${event.executionId}:${event.sequence}`)).toEqual([
      `${early}:1`,
    ]);
  });

  it('a cursor read takes from every shard in turn, so a busy shard does not fill the page', async () => {
    const store = new ShardedEventStore(memoryShards(2));
    const [busy] = idsOn(0, 2, 1, 'busy');
    const [quiet] = idsOn(1, 2, 1, 'quiet');
    await store.append(Array.from({ length: 10 }, (_, n) => env(busy as string, n)));
    await store.append([env(quiet as string, 0)]);
    const page = await store.readAll({ after: ShardCursor.start(2), limit: 4 });
    expect(page.map((event) => `${event.executionId}:${event.sequence}`)).toEqual([
      `${busy}:0`,
      `${quiet}:0`,
      `${busy}:1`,
      `${busy}:2`,
    ]);
  });

  it('a subscription from a plain position on a later shard follows earlier shards from their end', async () => {
    const store = new ShardedEventStore(memoryShards(2));
    const [a] = idsOn(0, 2, 1, 'a');
    const [b] = idsOn(1, 2, 1, 'b');
    await store.append([env(a as string, 0)]);
    const [b0] = await store.append([env(b as string, 0)]);
    const seen: string[] = [];
    const subscription = store.subscribe(
      { afterPosition: (b0 as StoredEvent).position },
      (events) => {
        for (const event of events) seen.push(`${event.executionId}:${event.sequence}`);
      },
    );
    try {
      // Shard 0 is read through before anything is delivered: once b:1 arrived, a:1 is new.
      await store.append([env(b as string, 1)]);
      const deadline = Date.now() + 5_000;
      while (seen.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      await store.append([env(a as string, 1)]);
      while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect(seen).toEqual([`${b}:1`, `${a}:1`]);
    } finally {
      await subscription.close();
    }
  });

  it('a global subscription from a saved cursor delivers every later event once', async () => {
    const store = new ShardedEventStore(memoryShards(3));
    const ids = [...idsOn(0, 3, 1), ...idsOn(1, 3, 1), ...idsOn(2, 3, 1)];
    for (const id of ids) await store.append([env(id, 0)]);
    const cursor = ShardCursor.start(3).advance(await store.readAll());
    const seen: string[] = [];
    const subscription = store.subscribe({ after: cursor }, (events) => {
      for (const event of events) seen.push(`${event.executionId}:${event.sequence}`);
    });
    try {
      for (const id of ids) await store.append([env(id, 1), env(id, 2)]);
      const deadline = Date.now() + 5_000;
      while (seen.length < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      expect([...seen].sort()).toEqual(ids.flatMap((id) => [`${id}:1`, `${id}:2`]).sort());
    } finally {
      await subscription.close();
    }
  });

  it('pages findExecutions across shards in id order, and claims due executions on every shard', async () => {
    const store = new ShardedEventStore(memoryShards(3));
    const ids = [...idsOn(0, 3, 2), ...idsOn(1, 3, 2), ...idsOn(2, 3, 2)];
    for (const id of ids) {
      await store.append([env(id, 0)], { status: 'running' });
      await store.append([env(id, 1)], { status: 'suspended', wakeAtMs: 1_000 });
    }
    const paged: string[] = [];
    let after = '';
    for (;;) {
      const page = await store.findExecutions({
        status: 'suspended',
        afterExecutionId: after,
        limit: 4,
      });
      if (page.length === 0) break;
      paged.push(...page.map((summary) => summary.executionId));
      after = paged[paged.length - 1] as string;
    }
    expect(paged).toEqual([...ids].sort());
    const claimed = [...(await store.claimDue(2_000, 4)), ...(await store.claimDue(2_000, 4))];
    expect(claimed.sort()).toEqual([...ids].sort());
    expect(await store.claimDue(2_000, 4)).toEqual([]);
  });

  it('a flow signals an execution on another shard and starts a child on a third', async () => {
    const clock = new ManualClock();
    const shards = memoryShards(3, clock);
    const store = new ShardedEventStore(shards);
    const runtime = createKernelRuntime({ store, clock, timerPollMs: 0 });
    try {
      const [sender] = idsOn(0, 3, 1, 'sender');
      const [waiter] = idsOn(1, 3, 1, 'waiter');
      const [childId] = idsOn(2, 3, 1, 'child');
      const waiting = await runtime.start(
        { name: 'waiter', run: async (ctx) => ctx.waitForSignal('go') },
        null,
        { executionId: waiter as string },
      );
      const child = { name: 'child', run: async (_ctx: unknown, input: number) => input * 2 };
      const sending = await runtime.start(
        {
          name: 'sender',
          run: async (ctx) => {
            await ctx.step('signal', () => runtime.signal(waiter as string, 'go', 'hello'));
            return ctx.child(child, 21, { executionId: childId as string });
          },
        },
        null,
        { executionId: sender as string },
      );
      expect(await sending.result()).toBe(42);
      expect(await waiting.result()).toMatchObject({ received: true, payload: 'hello' });
      for (const [shard, id] of [sender, waiter, childId].entries()) {
        expect(
          storedRows(shards[shard] as InMemoryEventStore, id as string).length,
        ).toBeGreaterThan(1);
      }
    } finally {
      await runtime.shutdown();
    }
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, type LoomError } from '../errors.js';
import { Limits } from '../limits.js';
import type { ClaimOptions, EnqueueInput, QueueItem, QueueStore } from '../queue-store.js';
import { expectIllFormed, freshId, illFormedTexts } from './event-store-conformance.js';
import type { TestClock } from './manual-clock.js';

/** What a backend hands the queue conformance suite for one test. */
export interface QueueStoreHarness {
  /** A writable store on a fresh (or at least test-private) database, judging time by `clock`. */
  store: QueueStore;
  /** The clock `store` and every peer read; the suite advances it instead of sleeping. */
  clock: TestClock;
  /** A second, independent handle on the same database (another connection or pool). */
  openPeer(): Promise<QueueStore>;
  /** Release everything (the store, peers, throwaway files). */
  close(): Promise<void>;
}

const ttlMs = 1_000;

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

const ids = (items: readonly QueueItem[]) => items.map((item) => item.itemId);

/**
 * The one behaviour suite every `QueueStore` backend must pass, unchanged. Time is the harness's
 * `clock`: the suite advances it, it never sleeps. Queues are fresh per test (`freshId`).
 *
 * @example
 * queueStoreConformance('memory', async () => {
 *   const clock = new ManualClock();
 *   const store = new InMemoryQueueStore({ clock });
 *   return { store, clock, openPeer: async () => viewOf(store), close: () => store.close() };
 * });
 */
export function queueStoreConformance(name: string, open: () => Promise<QueueStoreHarness>): void {
  describe(`QueueStore conformance: ${name}`, () => {
    let harness: QueueStoreHarness;
    let store: QueueStore;
    let clock: TestClock;
    let queue: string;
    const claimAll = (owner: string, extra: Partial<ClaimOptions> = {}, on = store) =>
      on.claim(queue, { owner, limit: 100, claimTtlMs: ttlMs, ...extra });
    const put = (itemId: string, extra: Partial<EnqueueInput> = {}, on = store) =>
      on.enqueue({ queue, itemId, flow: 'work', input: { itemId }, ...extra });

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
      clock = harness.clock;
      queue = freshId('q').slice(0, 40);
    });
    afterEach(async () => {
      await harness.close();
    });

    describe('enqueue and claim', () => {
      it('a dedupe window answers the first item while open, finished or not, across handles', async () => {
        const peer = await harness.openPeer();
        try {
          const idempotency = { key: 'order-7', windowMs: 1_000 };
          // Six enqueues of one key racing from two handles: one item, every caller answered it.
          const answers = await Promise.all(
            Array.from({ length: 6 }, (_, index) =>
              put(`o-${index}`, { idempotency }, index % 2 === 0 ? store : peer),
            ),
          );
          const written = answers.filter((answer) => !answer.duplicate);
          expect(written).toHaveLength(1);
          const first = written[0]?.itemId as string;
          expect(answers.map((answer) => answer.itemId)).toEqual(answers.map(() => first));
          expect(await store.get(queue, first)).toMatchObject({
            idempotency: { key: 'order-7', untilMs: clock.now() + 1_000 },
          });
          expect(await store.get(queue, 'o-9')).toBeUndefined();
          // Finishing it does not close the window (unlike dedupeKey).
          await claimAll('n');
          await store.complete(queue, [first]);
          await clock.advance(999);
          expect(await put('late', { idempotency }, peer)).toEqual({
            itemId: first,
            duplicate: true,
          });
          // Another key, or no key, is not deduped.
          expect(
            (await put('other', { idempotency: { key: 'order-8', windowMs: 1_000 } })).duplicate,
          ).toBe(false);
          await clock.advance(1); // the window is [enqueue, enqueue + windowMs)
          expect(await put('next', { idempotency })).toEqual({ itemId: 'next', duplicate: false });
          expect(await put('again', { idempotency }, peer)).toEqual({
            itemId: 'next',
            duplicate: true,
          });
          expect(await store.get(queue, 'again')).toBeUndefined();
        } finally {
          await peer.close();
        }
      });

      it('a debounced key keeps one pending item: the last input, due a period after the last enqueue', async () => {
        const peer = await harness.openPeer();
        try {
          const debounce = { key: 'doc-1', periodMs: 100 };
          const first = await put('d-0', { debounce, input: { n: 0 } });
          expect(first).toEqual({ itemId: 'd-0', duplicate: false });
          const startMs = clock.now();
          // Five more enqueues of the key racing from two handles: still one item.
          await clock.advance(40);
          const answers = await Promise.all(
            Array.from({ length: 5 }, (_, index) =>
              put(
                `d-${index + 1}`,
                { debounce, input: { n: index + 1 } },
                index % 2 === 0 ? store : peer,
              ),
            ),
          );
          expect(answers).toEqual(answers.map(() => ({ itemId: 'd-0', duplicate: true })));
          expect(await store.get(queue, 'd-3')).toBeUndefined();
          const item = await store.get(queue, 'd-0');
          expect(item?.debounce).toEqual({
            key: 'doc-1',
            dueAtMs: startMs + 140,
            deadlineMs: null,
          });
          // Last input wins by store order: whichever enqueue the store applied last.
          expect([1, 2, 3, 4, 5]).toContain((item?.input as { n: number } | undefined)?.n);
          // Not claimable before it is due, claimable at it.
          await clock.advance(99);
          expect(await claimAll('n')).toEqual([]);
          await put('d-6', { debounce, input: { n: 6 } }, peer);
          await clock.advance(99);
          expect(await claimAll('n')).toEqual([]);
          await clock.advance(1);
          const claimed = await claimAll('n', {}, peer);
          expect(claimed.map((c) => [c.itemId, c.input])).toEqual([['d-0', { n: 6 }]]);
          // Once claimed, the next enqueue of the key starts a new item.
          expect(await put('d-7', { debounce, input: { n: 7 } })).toEqual({
            itemId: 'd-7',
            duplicate: false,
          });
          // An item id already taken answers itself and leaves the pending item alone.
          await put('taken');
          expect(await put('taken', { debounce, input: { n: 9 } })).toEqual({
            itemId: 'taken',
            duplicate: true,
          });
          expect((await store.get(queue, 'd-7'))?.input).toEqual({ n: 7 });
          expect(ids(await claimAll('m'))).toEqual(['taken']);
          // Other keys and undebounced items are independent.
          expect((await put('e-0', { debounce: { key: 'doc-2', periodMs: 100 } })).duplicate).toBe(
            false,
          );
          expect(ids(await claimAll('m', {}, peer))).toEqual([]);
          await put('plain');
          expect(ids(await claimAll('m'))).toEqual(['plain']);
        } finally {
          await peer.close();
        }
      });

      it('a debounced item becomes due at its first enqueue plus maxWaitMs however often it is pushed', async () => {
        const debounce = { key: 'feed', periodMs: 100, maxWaitMs: 250 };
        const startMs = clock.now();
        await put('f-0', { debounce, input: 0 });
        for (let n = 1; n <= 4; n++) {
          await clock.advance(60);
          expect(await put(`f-${n}`, { debounce, input: n })).toEqual({
            itemId: 'f-0',
            duplicate: true,
          });
        }
        // Pushed to now + 100 each time, but capped at start + 250.
        expect((await store.get(queue, 'f-0'))?.debounce).toEqual({
          key: 'feed',
          dueAtMs: startMs + 250,
          deadlineMs: startMs + 250,
        });
        await clock.advance(249 - 240);
        expect(await claimAll('n')).toEqual([]);
        await clock.advance(1);
        expect((await claimAll('n')).map((c) => c.input)).toEqual([4]);
      });

      it('a debounced item whose claim expired is claimed again, and new enqueues start a new item', async () => {
        const debounce = { key: 'k', periodMs: 10 };
        await put('a', { debounce, input: 'a' });
        await clock.advance(10);
        expect(ids(await claimAll('dead'))).toEqual(['a']);
        expect(await put('b', { debounce, input: 'b' })).toEqual({ itemId: 'b', duplicate: false });
        await clock.advance(ttlMs);
        // 'a' (expired claim) first by enqueue order, and 'b' is due too.
        expect(ids(await claimAll('live'))).toEqual(['a', 'b']);
        expect((await store.get(queue, 'a'))?.attempts).toBe(2);
      });

      it("lists a partition's unfinished items in enqueue order, across handles", async () => {
        const peer = await harness.openPeer();
        try {
          await put('p-1', { partitionKey: 'acct', priority: 5 });
          await put('p-2', { partitionKey: 'acct' }, peer);
          await put('p-3', { partitionKey: 'other' });
          await put('p-4', { partitionKey: 'acct' });
          expect(ids(await claimAll('n', { limit: 1 }))).toEqual(['p-1']);
          await store.complete(queue, ['p-2']);
          const unfinished = await peer.unfinishedOfPartition(queue, 'acct');
          expect(unfinished.map((item) => [item.itemId, item.status])).toEqual([
            ['p-1', 'running'],
            ['p-4', 'pending'],
          ]);
          expect(await store.unfinishedOfPartition(queue, 'none')).toEqual([]);
          expect(await codeOf(store.unfinishedOfPartition(queue, ''))).toBe(
            ErrorCode.INVALID_ARGUMENT,
          );
        } finally {
          await peer.close();
        }
      });

      it('stores an item with its defaults and returns a copy', async () => {
        const input = { nested: [1, -0, 'ü🧵'], empty: {} };
        expect(await store.enqueue({ queue, itemId: 'a', flow: 'send', input })).toEqual({
          itemId: 'a',
          duplicate: false,
        });
        const item = await store.get(queue, 'a');
        expect(item).toEqual({
          queue,
          itemId: 'a',
          flow: 'send',
          version: null,
          input,
          priority: 0,
          dedupeKey: null,
          partitionKey: null,
          partitionConcurrencyMax: null,
          throttle: null,
          idempotency: null,
          debounce: null,
          status: 'pending',
          owner: null,
          claimExpiresAtMs: null,
          startedAtMs: null,
          attempts: 0,
          enqueuedAtMs: clock.now(),
          completedAtMs: null,
          outcome: null,
        });
        expect(Object.is((item?.input as { nested: number[] } | undefined)?.nested[1], -0)).toBe(
          true,
        );
        if (item !== undefined) item.status = 'done';
        expect((await store.get(queue, 'a'))?.status).toBe('pending');
        expect(await store.get(queue, 'missing')).toBeUndefined();
        expect(await store.get(`${queue}-other`, 'a')).toBeUndefined();
      });

      it('generates an item id when none is given', async () => {
        const { itemId, duplicate } = await store.enqueue({ queue, flow: 'work', input: null });
        expect(duplicate).toBe(false);
        expect((await store.get(queue, itemId))?.input).toBeNull();
      });

      it('claims by priority desc, then enqueue order, and records the claim', async () => {
        await put('low', { priority: -5 });
        await put('first', { priority: 0 });
        await put('urgent', { priority: 10, version: 'v2' });
        await put('second', { priority: 0 });
        await put('high', { priority: 3 });
        await clock.advance(7);
        const claimed = await claimAll('node-a', { limit: 4 });
        expect(ids(claimed)).toEqual(['urgent', 'high', 'first', 'second']);
        expect(claimed[0]).toMatchObject({
          status: 'running',
          owner: 'node-a',
          version: 'v2',
          attempts: 1,
          startedAtMs: clock.now(),
          claimExpiresAtMs: clock.now() + ttlMs,
        });
        expect(ids(await claimAll('node-a'))).toEqual(['low']);
        expect(await claimAll('node-a')).toEqual([]);
        expect(
          await store.claim(`${queue}-never`, { owner: 'n', limit: 1, claimTtlMs: ttlMs }),
        ).toEqual([]);
      });

      it('queues are independent', async () => {
        await put('a');
        await store.enqueue({ queue: `${queue}-b`, itemId: 'a', flow: 'work', input: 1 });
        expect(ids(await claimAll('node-a', { concurrencyMax: 1 }))).toEqual(['a']);
        expect(
          ids(
            await store.claim(`${queue}-b`, {
              owner: 'x',
              limit: 5,
              concurrencyMax: 1,
              claimTtlMs: ttlMs,
            }),
          ),
        ).toEqual(['a']);
      });
    });

    describe('claims kept to the flows a worker runs (flows)', () => {
      it('claims only items of the named flows and versions; the others stay pending for another worker', async () => {
        await put('mine', { flow: 'billing', version: '1' });
        await put('mine-v2', { flow: 'billing', version: '2' });
        await put('plain', { flow: 'plain' });
        await put('theirs', { flow: 'render' });
        const flows = [
          { name: 'billing', version: '1' },
          { name: 'plain', version: null },
        ];
        expect(ids(await claimAll('old-node', { flows })).sort()).toEqual(['mine', 'plain']);
        expect((await store.get(queue, 'theirs'))?.status).toBe('pending');
        expect(ids(await claimAll('old-node', { flows: [] }))).toEqual([]);
        expect(ids(await claimAll('new-node')).sort()).toEqual(['mine-v2', 'theirs']);
      });

      it('refuses a malformed flows filter with INVALID_ARGUMENT', async () => {
        const codes = [];
        for (const flows of ['billing', [{ name: 'billing' }]]) {
          codes.push(await codeOf(claimAll('n', { flows } as never)));
        }
        expect(codes).toEqual([ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_ARGUMENT]);
      });
    });

    describe('dedupe', () => {
      it('an item id is a duplicate forever; nothing is written for it', async () => {
        await put('a', { input: 1 });
        expect(await put('a', { input: 2 })).toEqual({ itemId: 'a', duplicate: true });
        expect((await store.get(queue, 'a'))?.input).toBe(1);
        await claimAll('node-a');
        await store.complete(queue, ['a']);
        expect(await put('a')).toEqual({ itemId: 'a', duplicate: true });
        expect(await claimAll('node-a')).toEqual([]);
      });

      it('a dedupe key is unique among unfinished items and free again once done', async () => {
        expect(await put('a', { dedupeKey: 'k' })).toEqual({ itemId: 'a', duplicate: false });
        expect(await put('b', { dedupeKey: 'k' })).toEqual({ itemId: 'a', duplicate: true });
        expect(await store.get(queue, 'b')).toBeUndefined();
        await claimAll('node-a');
        expect(await put('c', { dedupeKey: 'k' })).toEqual({ itemId: 'a', duplicate: true });
        await store.complete(queue, ['a']);
        expect(await put('d', { dedupeKey: 'k' })).toEqual({ itemId: 'd', duplicate: false });
        expect(await put('e', { dedupeKey: 'other' })).toEqual({ itemId: 'e', duplicate: false });
      });

      it('racing enqueues of one dedupe key on two handles write one item', async () => {
        const peer = await harness.openPeer();
        try {
          const results = await Promise.all(
            Array.from({ length: 8 }, (_, index) =>
              put(`item-${index}`, { dedupeKey: 'same' }, index % 2 === 0 ? store : peer),
            ),
          );
          const fresh = results.filter((result) => !result.duplicate);
          expect(fresh).toHaveLength(1);
          expect(new Set(results.map((result) => result.itemId))).toEqual(
            new Set([fresh[0]?.itemId]),
          );
          expect(await claimAll('node-a')).toHaveLength(1);
        } finally {
          await peer.close();
        }
      });
    });

    describe('limits', () => {
      it('concurrencyMax counts live claims of every owner; completing frees a slot', async () => {
        for (const id of ['a', 'b', 'c', 'd']) await put(id);
        expect(ids(await claimAll('node-a', { concurrencyMax: 2, limit: 1 }))).toEqual(['a']);
        expect(ids(await claimAll('node-b', { concurrencyMax: 2 }))).toEqual(['b']);
        expect(await claimAll('node-c', { concurrencyMax: 2 })).toEqual([]);
        await store.complete(queue, ['a']);
        expect(ids(await claimAll('node-c', { concurrencyMax: 2 }))).toEqual(['c']);
        expect(ids(await claimAll('node-c', { concurrencyMax: 4 }))).toEqual(['d']);
      });

      it('two handles claiming concurrently never exceed concurrencyMax', async () => {
        const peer = await harness.openPeer();
        try {
          const all = Array.from(
            { length: 24 },
            (_, index) => `item-${String(index).padStart(2, '0')}`,
          );
          for (const id of all) await put(id);
          const held = new Set<string>();
          const done = new Set<string>();
          for (let round = 0; done.size < all.length && round < 100; round++) {
            const claims = await Promise.all(
              [store, peer, store, peer].map((on, index) =>
                claimAll(`node-${index}`, { concurrencyMax: 3, limit: 2 }, on),
              ),
            );
            for (const id of claims.flatMap(ids)) {
              expect(held.has(id) || done.has(id)).toBe(false);
              held.add(id);
            }
            expect(held.size).toBeLessThanOrEqual(3);
            expect(held.size).toBe(Math.min(3, all.length - done.size));
            const finished = [...held].slice(0, 1 + (round % 2));
            await (round % 2 === 0 ? store : peer).complete(queue, finished);
            for (const id of finished) {
              held.delete(id);
              done.add(id);
            }
          }
          expect(done.size).toBe(all.length);
        } finally {
          await peer.close();
        }
      });

      it('two handles claiming concurrently never exceed partitionConcurrencyMax', async () => {
        const peer = await harness.openPeer();
        try {
          for (let index = 0; index < 6; index++) {
            await put(`a-${index}`, { partitionKey: 'A' });
            await put(`b-${index}`, { partitionKey: 'B' });
            await put(`free-${index}`);
          }
          const running = new Map<string, string[]>();
          const claims = await Promise.all(
            [store, peer, store, peer].map((on, index) =>
              claimAll(`node-${index}`, { partitionConcurrencyMax: 2, limit: 3 }, on),
            ),
          );
          for (const item of claims.flat()) {
            const key = item.partitionKey ?? 'none';
            running.set(key, [...(running.get(key) ?? []), item.itemId]);
          }
          expect(running.get('A')?.sort()).toEqual(['a-0', 'a-1']);
          expect(running.get('B')?.sort()).toEqual(['b-0', 'b-1']);
          expect(running.get('none')).toHaveLength(6); // 4 claims x 3: the rest of A and B wait
          expect(ids(await claimAll('node-x', { partitionConcurrencyMax: 2 }))).toEqual([]);
          await peer.complete(queue, ['a-0']);
          expect(ids(await claimAll('node-x', { partitionConcurrencyMax: 2 }))).toEqual(['a-2']);
          expect(ids(await claimAll('node-x', { partitionConcurrencyMax: 3 }))).toEqual([
            'b-2',
            'a-3',
          ]);
        } finally {
          await peer.close();
        }
      });

      it('items without a partition key are not limited by partitionConcurrencyMax', async () => {
        for (const id of ['f-0', 'f-1', 'f-2']) await put(id);
        await put('a-0', { partitionKey: 'A', partitionConcurrencyMax: 1 });
        await put('a-1', { partitionKey: 'A' });
        expect(ids(await claimAll('n', { partitionConcurrencyMax: 1 }))).toEqual([
          'f-0',
          'f-1',
          'f-2',
          'a-0',
        ]);
      });

      it('a full partition does not hold back items of other partitions', async () => {
        await put('a-0', { partitionKey: 'A', priority: 5 });
        await put('a-1', { partitionKey: 'A', priority: 5 });
        await put('b-0', { partitionKey: 'B' });
        expect(ids(await claimAll('n', { partitionConcurrencyMax: 1 }))).toEqual(['a-0', 'b-0']);
      });

      it("an item's own partitionConcurrencyMax holds whatever the claim passes, across handles", async () => {
        const peer = await harness.openPeer();
        try {
          for (let index = 0; index < 5; index++) {
            await put(`a-${index}`, { partitionKey: 'A', partitionConcurrencyMax: 2 });
            await put(`b-${index}`, { partitionKey: 'B', partitionConcurrencyMax: 1 }, peer);
          }
          expect(await store.get(queue, 'a-0')).toMatchObject({
            partitionKey: 'A',
            partitionConcurrencyMax: 2,
          });
          // Four claims at once, none passing a partition limit of its own.
          const claims = await Promise.all(
            [store, peer, store, peer].map((on, index) => claimAll(`node-${index}`, {}, on)),
          );
          expect(ids(claims.flat()).sort()).toEqual(['a-0', 'a-1', 'b-0']);
          // A claim's own limit can only lower it: 5 does not lift A's 2.
          expect(await claimAll('node-x', { partitionConcurrencyMax: 5 }, peer)).toEqual([]);
          await peer.complete(queue, ['a-0', 'b-0']);
          // The lower of the two holds: the claim's 1 under A's 2 (a-1 still runs), so only B.
          expect(ids(await claimAll('node-x', { partitionConcurrencyMax: 1 }))).toEqual(['b-1']);
          // B's own 1 under the claim's 3 (b-1 runs), A's own 2 under it (room for one more).
          expect(ids(await claimAll('node-x', { partitionConcurrencyMax: 3 }))).toEqual(['a-2']);
        } finally {
          await peer.close();
        }
      });

      it("a dead worker's slots of a key come back when its claims expire, not before", async () => {
        for (let index = 0; index < 3; index++) {
          await put(`k-${index}`, { partitionKey: 'K', partitionConcurrencyMax: 2 });
        }
        expect(ids(await claimAll('dead'))).toEqual(['k-0', 'k-1']);
        await clock.advance(ttlMs - 1);
        expect(await claimAll('alive')).toEqual([]); // both slots still held by live claims
        await clock.advance(1);
        // The dead claims expired: their items come back first (enqueue order), still 2 at once.
        expect(ids(await claimAll('alive'))).toEqual(['k-0', 'k-1']);
        expect(await claimAll('alive')).toEqual([]);
        expect(await store.renew(queue, 'dead', ['k-0', 'k-1'], ttlMs)).toEqual(['k-0', 'k-1']);
      });

      it('a saturated key does not hold back the keys behind it past the claim scan window', async () => {
        for (let index = 0; index < Limits.queueClaimScanMax + 5; index++) {
          await put(`hot-${index}`, {
            partitionKey: 'hot',
            partitionConcurrencyMax: 1,
            priority: 1,
          });
        }
        await put('cold-0', { partitionKey: 'cold', partitionConcurrencyMax: 1 });
        expect(ids(await claimAll('n', { limit: 1 }))).toEqual(['hot-0']);
        // Every candidate of the scan window is hot and hot is full: cold is still found.
        expect(ids(await claimAll('n'))).toEqual(['cold-0']);
        expect(await claimAll('n')).toEqual([]);
      });

      it("a key's throttle counts its claims within its own sliding window, across handles", async () => {
        const peer = await harness.openPeer();
        try {
          const throttleA = { key: 'A', count: 2, windowMs: 1_000 };
          for (let index = 0; index < 5; index++) {
            await put(`a-${index}`, { throttle: throttleA, priority: 1 });
            await put(`b-${index}`, { throttle: { key: 'B', count: 1, windowMs: 500 } }, peer);
          }
          await put('free-0');
          expect(await store.get(queue, 'a-0')).toMatchObject({ throttle: throttleA });
          // Four claims at once: A starts 2, B starts 1, the unthrottled item runs.
          const claims = await Promise.all(
            [store, peer, store, peer].map((on, index) => claimAll(`node-${index}`, {}, on)),
          );
          expect(ids(claims.flat()).sort()).toEqual(['a-0', 'a-1', 'b-0', 'free-0']);
          // Finishing refunds nothing: starts count, not runs.
          await store.complete(queue, ['a-0', 'a-1', 'b-0', 'free-0']);
          expect(await claimAll('n', {}, peer)).toEqual([]);
          await clock.advance(499);
          expect(await claimAll('n')).toEqual([]);
          await clock.advance(1); // B's start is 500 ms old: out of B's window, A's still holds
          expect(ids(await claimAll('n'))).toEqual(['b-1']);
          await clock.advance(500); // A's two starts are 1,000 ms old
          expect(ids(await claimAll('n', {}, peer))).toEqual(['a-2', 'a-3', 'b-2']);
          expect(await claimAll('n')).toEqual([]);
        } finally {
          await peer.close();
        }
      });

      it('a throttled key past its count does not hold back the keys behind it', async () => {
        for (let index = 0; index < Limits.queueClaimScanMax + 5; index++) {
          await put(`hot-${index}`, {
            throttle: { key: 'hot', count: 1, windowMs: 60_000 },
            priority: 1,
          });
        }
        await put('cold-0', { throttle: { key: 'cold', count: 1, windowMs: 60_000 } });
        expect(ids(await claimAll('n', { limit: 1 }))).toEqual(['hot-0']);
        await store.complete(queue, ['hot-0']);
        expect(ids(await claimAll('n'))).toEqual(['cold-0']);
        expect(await claimAll('n')).toEqual([]);
      });

      it("a dead worker's throttled claim counts as a start until it leaves the window", async () => {
        const throttle = { key: 'K', count: 2, windowMs: 10_000 };
        for (let index = 0; index < 4; index++) await put(`k-${index}`, { throttle });
        expect(ids(await claimAll('dead', { limit: 1 }))).toEqual(['k-0']);
        await clock.advance(ttlMs - 1);
        expect(ids(await claimAll('alive'))).toEqual(['k-1']); // the dead claim still counts
        await clock.advance(1); // k-0's claim expired, but its start is in K's window: it waits
        expect(await claimAll('alive')).toEqual([]);
        await clock.advance(10_000 - ttlMs); // k-0's start left the window, k-1's not yet
        const again = await claimAll('alive');
        expect(ids(again)).toEqual(['k-0']); // the expired item first, as its second start
        expect(again[0]).toMatchObject({ attempts: 2, startedAtMs: clock.now() });
        expect(await claimAll('alive')).toEqual([]);
      });

      it('a throttle and a partition limit hold together', async () => {
        const throttle = { key: 'T', count: 3, windowMs: 1_000 };
        for (let index = 0; index < 4; index++) {
          await put(`t-${index}`, { throttle, partitionKey: 'P', partitionConcurrencyMax: 1 });
        }
        expect(ids(await claimAll('n'))).toEqual(['t-0']);
        await store.complete(queue, ['t-0']);
        expect(ids(await claimAll('n'))).toEqual(['t-1']);
        await store.complete(queue, ['t-1']);
        expect(ids(await claimAll('n'))).toEqual(['t-2']);
        await store.complete(queue, ['t-2']);
        expect(await claimAll('n')).toEqual([]); // P is free, T spent its 3 starts
        await clock.advance(1_000);
        expect(ids(await claimAll('n'))).toEqual(['t-3']);
      });

      it('the rate limit counts claims started within the sliding window', async () => {
        for (let index = 0; index < 7; index++) await put(`item-${index}`);
        const rate = { count: 2, windowMs: 1_000 };
        expect(ids(await claimAll('n', { rate }))).toEqual(['item-0', 'item-1']);
        await store.complete(queue, ['item-0', 'item-1']); // finishing does not refund the rate
        expect(await claimAll('n', { rate })).toEqual([]);
        await clock.advance(500);
        expect(await claimAll('n', { rate })).toEqual([]);
        await clock.advance(499);
        expect(await claimAll('n', { rate })).toEqual([]);
        await clock.advance(1); // the first two started exactly windowMs ago: out of the window
        expect(ids(await claimAll('n', { rate, limit: 1 }))).toEqual(['item-2']);
        await clock.advance(300);
        expect(ids(await claimAll('n', { rate }))).toEqual(['item-3']);
        await store.complete(queue, ['item-2', 'item-3']);
        await clock.advance(700);
        expect(ids(await claimAll('n', { rate }))).toEqual(['item-4']);
        expect(
          ids(await claimAll('n', { rate: { count: 10, windowMs: 1_000 }, concurrencyMax: 2 })),
        ).toEqual(['item-5']);
      });
    });

    describe('claims expire, renew and complete', () => {
      it('an expired claim is claimable again; its old owner can no longer renew it', async () => {
        await put('a');
        await put('b');
        await claimAll('node-a');
        await clock.advance(ttlMs - 1);
        expect(await claimAll('node-b', { concurrencyMax: 5 })).toEqual([]);
        expect(await store.renew(queue, 'node-a', ['b'], ttlMs)).toEqual([]);
        await clock.advance(1); // a expired (claimExpiresAtMs <= now), b renewed
        const again = await claimAll('node-b', { concurrencyMax: 2 });
        expect(ids(again)).toEqual(['a']);
        expect(again[0]).toMatchObject({ owner: 'node-b', attempts: 2, startedAtMs: clock.now() });
        expect(await store.renew(queue, 'node-a', ['a', 'b'], ttlMs)).toEqual(['a']);
        expect((await store.get(queue, 'b'))?.claimExpiresAtMs).toBe(clock.now() + ttlMs);
      });

      it('an expired claim nobody took cannot be renewed: it no longer counts as running', async () => {
        await put('a');
        await claimAll('node-a', { concurrencyMax: 1 });
        await clock.advance(ttlMs);
        expect(await store.renew(queue, 'node-a', ['a'], ttlMs)).toEqual(['a']);
        expect(ids(await claimAll('node-a', { concurrencyMax: 1 }))).toEqual(['a']);
      });

      it('renew reports lost ids in batch order: unknown, pending, done, others', async () => {
        for (const id of ['mine', 'theirs', 'pending', 'done']) await put(id);
        await store.claim(queue, { owner: 'node-a', limit: 1, claimTtlMs: ttlMs });
        await store.claim(queue, { owner: 'node-b', limit: 1, claimTtlMs: ttlMs });
        await store.claim(queue, { owner: 'node-a', limit: 1, claimTtlMs: ttlMs }); // 'pending'
        await store.complete(queue, ['pending']);
        expect(
          await store.renew(
            queue,
            'node-a',
            ['unknown', 'theirs', 'done', 'mine', 'pending'],
            ttlMs,
          ),
        ).toEqual(['unknown', 'theirs', 'done', 'pending']);
        expect(await store.renew(queue, 'node-a', [], ttlMs)).toEqual([]);
      });

      it('complete finishes pending and running items; done items are never claimed', async () => {
        await put('a');
        await put('b');
        await claimAll('node-a', { limit: 1 });
        await clock.advance(3);
        await store.complete(queue, ['a', 'b', 'unknown', 'a']);
        expect(await store.get(queue, 'a')).toMatchObject({
          status: 'done',
          completedAtMs: clock.now(),
        });
        expect((await store.get(queue, 'b'))?.status).toBe('done');
        await clock.advance(ttlMs * 5);
        expect(await claimAll('node-b')).toEqual([]);
        await store.complete(queue, ['a']);
        expect((await store.get(queue, 'a'))?.completedAtMs).toBe(clock.now() - ttlMs * 5);
        await store.complete(queue, []);
      });
    });

    describe('outcomes and stats', () => {
      it('complete records how an item ended; a second complete keeps the first outcome', async () => {
        for (const id of ['a', 'b', 'c', 'd']) await put(id);
        await claimAll('node-a', { limit: 2 });
        await store.complete(queue, ['a']);
        await store.complete(queue, ['b'], 'failed');
        await store.complete(queue, ['c'], 'cancelled');
        expect((await store.get(queue, 'a'))?.outcome).toBe('completed');
        expect(await store.get(queue, 'b')).toMatchObject({ status: 'done', outcome: 'failed' });
        expect((await store.get(queue, 'c'))?.outcome).toBe('cancelled');
        expect((await store.get(queue, 'd'))?.outcome).toBeNull();
        await store.complete(queue, ['b'], 'completed');
        expect((await store.get(queue, 'b'))?.outcome).toBe('failed');
        expect(await codeOf(store.complete(queue, ['d'], 'lost' as never))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect((await store.get(queue, 'd'))?.status).toBe('pending');
      });

      it('queueStats counts depth, live claims and finished items by outcome', async () => {
        for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) await put(id);
        await claimAll('node-a', { limit: 3 }); // a, b, c
        await store.complete(queue, ['a']);
        await store.complete(queue, ['b'], 'failed');
        await store.complete(queue, ['d'], 'cancelled');
        expect(await store.queueStats(queue)).toEqual({
          queue,
          depth: 3,
          claimed: 1,
          completed: 1,
          failed: 1,
          cancelled: 1,
        });
        // An expired claim is waiting again: back in the depth, no longer claimed.
        clock.advance(ttlMs);
        expect(await store.queueStats(queue)).toMatchObject({ depth: 4, claimed: 0 });
        expect(await store.queueStats(`${queue}-none`)).toEqual({
          queue: `${queue}-none`,
          depth: 0,
          claimed: 0,
          completed: 0,
          failed: 0,
          cancelled: 0,
        });
        expect(await codeOf(store.queueStats(''))).toBe(ErrorCode.INVALID_ARGUMENT);
      });

      it('listQueues gives every queue’s stats in name order, paged', async () => {
        const names = [`${queue}-a`, `${queue}-b`, `${queue}-c`];
        for (const [index, name] of names.entries()) {
          for (let item = 0; item <= index; item++) {
            await store.enqueue({ queue: name, itemId: `i${item}`, flow: 'work', input: null });
          }
        }
        await store.complete(names[2] as string, ['i0'], 'failed');
        const mine = (await store.listQueues()).filter((stats) => names.includes(stats.queue));
        expect(mine).toEqual([
          { queue: names[0], depth: 1, claimed: 0, completed: 0, failed: 0, cancelled: 0 },
          { queue: names[1], depth: 2, claimed: 0, completed: 0, failed: 0, cancelled: 0 },
          { queue: names[2], depth: 2, claimed: 0, completed: 0, failed: 1, cancelled: 0 },
        ]);
        const first = await store.listQueues({ afterQueue: queue, limit: 2 });
        expect(first.map((stats) => stats.queue)).toEqual(names.slice(0, 2));
        const rest = await store.listQueues({ afterQueue: names[1] as string, limit: 2 });
        expect(rest[0]?.queue).toBe(names[2]);
        expect(await codeOf(store.listQueues({ limit: 0 }))).toBe(ErrorCode.INVALID_ARGUMENT);
      });
    });

    describe('bad input', () => {
      const badEnqueues: Array<[string, (good: EnqueueInput) => unknown, string]> = [
        ['an empty queue', (g) => ({ ...g, queue: '' }), ErrorCode.INVALID_ARGUMENT],
        ['a numeric queue', (g) => ({ ...g, queue: 7 }), ErrorCode.INVALID_ARGUMENT],
        [
          'a queue name over the limit',
          (g) => ({ ...g, queue: 'q'.repeat(Limits.queueNameLengthMax + 1) }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['an empty item id', (g) => ({ ...g, itemId: '' }), ErrorCode.INVALID_ARGUMENT],
        [
          'an item id over the limit',
          (g) => ({ ...g, itemId: 'i'.repeat(Limits.queueItemIdLengthMax + 1) }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['no flow', (g) => ({ ...g, flow: undefined }), ErrorCode.INVALID_ARGUMENT],
        ['an empty version', (g) => ({ ...g, version: '' }), ErrorCode.INVALID_ARGUMENT],
        ['a fractional priority', (g) => ({ ...g, priority: 1.5 }), ErrorCode.INVALID_ARGUMENT],
        ['a string priority', (g) => ({ ...g, priority: '1' }), ErrorCode.INVALID_ARGUMENT],
        [
          'a priority over the limit',
          (g) => ({ ...g, priority: Limits.queuePriorityMax + 1 }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['an empty dedupe key', (g) => ({ ...g, dedupeKey: '' }), ErrorCode.INVALID_ARGUMENT],
        [
          'a partition key over the limit',
          (g) => ({ ...g, partitionKey: 'p'.repeat(Limits.queueKeyLengthMax + 1) }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        [
          'a zero partitionConcurrencyMax',
          (g) => ({ ...g, partitionKey: 'p', partitionConcurrencyMax: 0 }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a fractional partitionConcurrencyMax',
          (g) => ({ ...g, partitionKey: 'p', partitionConcurrencyMax: 1.5 }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a throttle that is not an object',
          (g) => ({ ...g, throttle: 5 }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a throttle without a key',
          (g) => ({ ...g, throttle: { count: 1, windowMs: 1_000 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a throttle count of zero',
          (g) => ({ ...g, throttle: { key: 'k', count: 0, windowMs: 1_000 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a fractional throttle window',
          (g) => ({ ...g, throttle: { key: 'k', count: 1, windowMs: 0.5 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a throttle window over queueThrottleWindowMsMax',
          (g) => ({
            ...g,
            throttle: { key: 'k', count: 1, windowMs: Limits.queueThrottleWindowMsMax + 1 },
          }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        [
          'an idempotency without a window',
          (g) => ({ ...g, idempotency: { key: 'k' } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'an idempotency with an empty key',
          (g) => ({ ...g, idempotency: { key: '', windowMs: 1_000 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'an idempotency window over queueThrottleWindowMsMax',
          (g) => ({
            ...g,
            idempotency: { key: 'k', windowMs: Limits.queueThrottleWindowMsMax + 1 },
          }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        [
          'a debounce without a period',
          (g) => ({ ...g, debounce: { key: 'k' } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a debounce period of zero',
          (g) => ({ ...g, debounce: { key: 'k', periodMs: 0 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a debounce maxWaitMs below its period',
          (g) => ({ ...g, debounce: { key: 'k', periodMs: 100, maxWaitMs: 99 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a debounce period over queueThrottleWindowMsMax',
          (g) => ({
            ...g,
            debounce: { key: 'k', periodMs: Limits.queueThrottleWindowMsMax + 1 },
          }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        [
          'a debounce beside a dedupeKey',
          (g) => ({ ...g, dedupeKey: 'd', debounce: { key: 'k', periodMs: 1 } }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a debounce beside an idempotency window',
          (g) => ({
            ...g,
            idempotency: { key: 'i', windowMs: 1 },
            debounce: { key: 'k', periodMs: 1 },
          }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'a partitionConcurrencyMax without a partitionKey',
          (g) => ({ ...g, partitionConcurrencyMax: 1 }),
          ErrorCode.INVALID_ARGUMENT,
        ],
        [
          'an input that is not JSON',
          (g) => ({ ...g, input: { at: new Date(0) } }),
          ErrorCode.PAYLOAD_NOT_JSON,
        ],
        ['an input with a BigInt', (g) => ({ ...g, input: [1n] }), ErrorCode.PAYLOAD_NOT_JSON],
        [
          'an input over payloadBytesMax',
          (g) => ({ ...g, input: 'x'.repeat(Limits.payloadBytesMax) }),
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['null', () => null, ErrorCode.INVALID_ARGUMENT],
      ];
      for (const [what, spoil, code] of badEnqueues) {
        it(`enqueue with ${what} is ${code} and writes nothing`, async () => {
          const good: EnqueueInput = { queue, itemId: 'bad', flow: 'work', input: 1 };
          expect(await codeOf(store.enqueue(spoil(good) as EnqueueInput))).toBe(code);
          expect(await claimAll('node-a')).toEqual([]);
        });
      }

      const badClaims: Array<[string, Record<string, unknown>, string]> = [
        ['an empty owner', { owner: '' }, ErrorCode.INVALID_ARGUMENT],
        ['a zero limit', { limit: 0 }, ErrorCode.INVALID_ARGUMENT],
        [
          'a limit over queueBatchMax',
          { limit: Limits.queueBatchMax + 1 },
          ErrorCode.LIMIT_EXCEEDED,
        ],
        ['a zero concurrencyMax', { concurrencyMax: 0 }, ErrorCode.INVALID_ARGUMENT],
        [
          'a fractional partitionConcurrencyMax',
          { partitionConcurrencyMax: 0.5 },
          ErrorCode.INVALID_ARGUMENT,
        ],
        ['a rate without a window', { rate: { count: 1 } }, ErrorCode.INVALID_ARGUMENT],
        ['a rate of zero', { rate: { count: 0, windowMs: 10 } }, ErrorCode.INVALID_ARGUMENT],
        ['a zero claimTtlMs', { claimTtlMs: 0 }, ErrorCode.INVALID_ARGUMENT],
        ['a NaN claimTtlMs', { claimTtlMs: Number.NaN }, ErrorCode.INVALID_ARGUMENT],
      ];
      for (const [what, spoil, code] of badClaims) {
        it(`claim with ${what} is ${code} and claims nothing`, async () => {
          await put('a');
          const options = {
            owner: 'node-a',
            limit: 1,
            claimTtlMs: ttlMs,
            ...spoil,
          } as ClaimOptions;
          expect(await codeOf(store.claim(queue, options))).toBe(code);
          expect((await store.get(queue, 'a'))?.status).toBe('pending');
        });
      }

      it('claim with a bad queue name, renew and complete with bad batches are typed errors', async () => {
        await put('a');
        await claimAll('node-a');
        const options = { owner: 'n', limit: 1, claimTtlMs: ttlMs };
        expect(await codeOf(store.claim('', options))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await codeOf(store.renew(queue, '', ['a'], ttlMs))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect(await codeOf(store.renew(queue, 'node-a', ['a'], -1))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.renew(queue, 'node-a', 'a' as never, ttlMs))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.renew(queue, 'node-a', ['a', ''], ttlMs))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        const tooMany = Array.from({ length: Limits.queueBatchMax + 1 }, (_, i) => `i-${i}`);
        expect(await codeOf(store.complete(queue, tooMany))).toBe(ErrorCode.LIMIT_EXCEEDED);
        expect(await codeOf(store.complete(queue, ['a', 7 as never]))).toBe(
          ErrorCode.INVALID_ARGUMENT,
        );
        expect(await codeOf(store.get(queue, ''))).toBe(ErrorCode.INVALID_ARGUMENT);
        expect((await store.get(queue, 'a'))?.status).toBe('running');
      });

      it('a closed store refuses every call with STORE_CLOSED; other handles carry on', async () => {
        const peer = await harness.openPeer();
        await peer.close();
        await peer.close();
        expect(await codeOf(put('a', {}, peer))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(claimAll('n', {}, peer))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.renew(queue, 'n', [], ttlMs))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.complete(queue, []))).toBe(ErrorCode.STORE_CLOSED);
        expect(await codeOf(peer.get(queue, 'a'))).toBe(ErrorCode.STORE_CLOSED);
        expect(await put('a')).toEqual({ itemId: 'a', duplicate: false });
      });
    });

    describe('ill-formed text in names and keys', () => {
      const fields = ['queue', 'itemId', 'flow', 'version', 'dedupeKey', 'partitionKey'] as const;
      for (const [what, bad, position] of illFormedTexts) {
        it(`${what} in any name or key is INVALID_ARGUMENT and writes or claims nothing`, async () => {
          const good: EnqueueInput = { queue, itemId: 'good', flow: 'work', input: 1 };
          for (const field of fields) {
            await expectIllFormed(
              store.enqueue({ ...good, itemId: 'bad', [field]: bad }),
              ErrorCode.INVALID_ARGUMENT,
              field,
              position,
            );
          }
          await put('a');
          const invalid = ErrorCode.INVALID_ARGUMENT;
          const options = { owner: 'node-a', limit: 10, claimTtlMs: ttlMs };
          await expectIllFormed(store.claim(bad, options), invalid, 'queue', position);
          await expectIllFormed(
            store.claim(queue, { ...options, owner: bad }),
            invalid,
            'owner',
            position,
          );
          expect((await store.get(queue, 'a'))?.status).toBe('pending');
          expect(ids(await claimAll('node-a'))).toEqual(['a']);
          await expectIllFormed(store.renew(queue, bad, ['a'], ttlMs), invalid, 'owner', position);
          await expectIllFormed(
            store.renew(queue, 'node-a', ['a', bad], ttlMs),
            invalid,
            'itemId',
            position,
          );
          await expectIllFormed(store.complete(queue, ['a', bad]), invalid, 'itemId', position);
          await expectIllFormed(store.get(queue, bad), invalid, 'itemId', position);
          await expectIllFormed(store.get(bad, 'a'), invalid, 'queue', position);
          expect((await store.get(queue, 'a'))?.status).toBe('running');
          expect(await store.get(queue, 'bad')).toBeUndefined();
        });
      }

      it('well-formed unicode names and keys round-trip exactly', async () => {
        const itemId = 'item-\u{1F600}-\uFFFD';
        await store.enqueue({
          queue,
          itemId,
          flow: 'fl\u00F6w',
          version: 'v\u{1F600}',
          input: { text: 'a\uD800' },
          dedupeKey: 'd\u{1F600}',
          partitionKey: 'p\uFFFD',
        });
        const item = await store.get(queue, itemId);
        expect(item).toMatchObject({
          itemId,
          flow: 'fl\u00F6w',
          version: 'v\u{1F600}',
          input: { text: 'a\uD800' },
          dedupeKey: 'd\u{1F600}',
          partitionKey: 'p\uFFFD',
        });
      });
    });
  });
}

import { type EventStore, InMemoryEventStore, pruneReceiptLogId } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { ManualClock, storedRows, until } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach, codeOf, testBackends } from './backends.test-support.js';
import { defineFlow } from './define-flow.js';
import { createRuntime, type Runtime } from './flow-runtime.js';

const backends = testBackends('prune');

const order = defineFlow({ name: 'order' }, async (ctx) => {
  await ctx.step('reserve', () => 'reserved');
  return 'shipped';
});
const waiting = defineFlow({ name: 'waiting' }, async (ctx) => {
  await ctx.sleep('1h');
  return 'woke';
});
const child = defineFlow({ name: 'child' }, async () => 'child done');
/** Its child ends at once; the parent then sleeps, still unsettled. */
const parent = defineFlow({ name: 'parent' }, async (ctx) => {
  const answer = await ctx.child(child, {});
  await ctx.sleep('1h');
  return answer;
});

/** Edits one stored payload behind the store's back, whatever the backend. */
async function tamper(store: EventStore, executionId: string, sequence: number): Promise<void> {
  if (store instanceof InMemoryEventStore) {
    const row = storedRows(store, executionId)[sequence];
    if (row === undefined) throw new Error(`no row ${executionId}:${sequence} to tamper with`);
    row.payloadText = '{"edited":true}';
  } else if (store instanceof SqliteEventStore) {
    store.database
      .prepare('UPDATE loom_events SET payload = ? WHERE execution_id = ? AND sequence = ?')
      .run('{"edited":true}', executionId, sequence);
  } else if (store instanceof PostgresEventStore) {
    await store.connectionPool.query(
      `UPDATE "${store.schema}".events SET payload = $1 WHERE execution_id = $2 AND sequence = $3`,
      ['{"edited":true}', executionId, sequence],
    );
  } else {
    throw new Error(`cannot tamper with a ${store.backend} store`);
  }
}

for (const [backend, open] of backends) {
  describe(`runtime.prune on ${backend}`, () => {
    const cleanups = cleanupsAfterEach();

    const make = async (): Promise<{ clock: ManualClock; runtime: Runtime; store: EventStore }> => {
      const clock = new ManualClock(1_000);
      const { store, drop } = await open(clock);
      const runtime = createRuntime({
        store,
        clock,
        timerPollMs: 0,
        inlineWaitMs: 0,
        flows: [order, waiting, child, parent],
      });
      cleanups.push(async () => {
        await runtime.shutdown();
        await drop();
        await store.close();
      });
      return { clock, runtime, store };
    };
    const ids = async (runtime: Runtime) =>
      (await runtime.findExecutions()).executions.map((row) => row.id).sort();

    it('removes executions that ended before the time behind a chained receipt; running, suspended, later ones and a child of an unsettled parent stay', async () => {
      const { clock, runtime, store } = await make();
      await (await runtime.start(order, {}, { executionId: 'o-1' })).result();
      await runtime.start(waiting, {}, { executionId: 'w-1' });
      await runtime.start(parent, {}, { executionId: 'p-1' });
      const parentSleeps = async () =>
        (await runtime.findExecutions({ flow: parent, status: 'suspended' })).executions.length ===
        1;
      await until(parentSleeps, 'the parent p-1 to sleep after its child ended', 10_000);
      const [childRow] = (await runtime.findExecutions({ flow: child })).executions;
      expect(childRow?.status).toBe('completed');
      const childId = childRow?.id as string;
      const o1 = await store.read('o-1');
      await clock.advance(10_000);
      await (await runtime.start(order, {}, { executionId: 'o-2' })).result();

      const dry = await runtime.prune({ endedBefore: 5_000, dryRun: true });
      expect(dry.pruned.map((row) => row.executionId)).toEqual(['o-1']);
      expect(dry.receiptSequence).toBeNull();
      expect(await store.read('o-1')).toHaveLength(o1.length);

      const report = await runtime.prune({ endedBefore: new Date(5_000) });
      expect(report).toEqual({
        pruned: [
          { executionId: 'o-1', events: o1.length, lastHash: o1[o1.length - 1]?.hash as string },
        ],
        skipped: [{ executionId: childId, reason: 'parent_unsettled' }],
        receiptSequence: 0,
        nextCursor: undefined,
      });
      expect(await store.read('o-1')).toEqual([]);
      expect(await codeOf(runtime.status('o-1'))).toBe('EXECUTION_NOT_FOUND');
      expect(await ids(runtime)).toEqual(['o-2', 'p-1', childId, 'w-1'].sort());
      expect(await runtime.status('w-1')).toBe('running');

      const receipts = await store.read(pruneReceiptLogId);
      expect(receipts.map((event) => [event.type, event.payload])).toEqual([
        ['loom.pruned', { endedBeforeMs: 5_000, executions: report.pruned }],
      ]);
      expect(await store.verify(pruneReceiptLogId)).toMatchObject({ ok: true, events: 1 });
      expect(await runtime.prune({ endedBefore: 5_000 })).toMatchObject({
        pruned: [],
        receiptSequence: null,
      });

      // Once the parent has settled, its child goes too, in the next receipt of the chain.
      await clock.advance(3_600_000);
      await runtime.wakeDue();
      // The poll resumes what it claimed one after the other: w-1 may end after p-1.
      await until(
        async () =>
          (await runtime.status('p-1')) === 'completed' &&
          (await runtime.status('w-1')) === 'completed',
        'the parent p-1 and w-1 to complete after their sleeps',
        10_000,
      );
      const later = await runtime.prune({ endedBefore: clock.now() + 1 });
      expect(later.pruned.map((row) => row.executionId).sort()).toEqual(
        ['o-2', 'p-1', childId, 'w-1'].sort(),
      );
      expect(later.receiptSequence).toBe(1);
      expect(await ids(runtime)).toEqual([]);
      expect(await store.verify(pruneReceiptLogId)).toMatchObject({ ok: true, events: 2 });
    });

    it('keeps an execution whose chain is broken, as evidence, and says so', async () => {
      const { clock, runtime, store } = await make();
      await (await runtime.start(order, {}, { executionId: 'edited' })).result();
      await (await runtime.start(order, {}, { executionId: 'intact' })).result();
      await tamper(store, 'edited', 1);
      await clock.advance(1_000);
      const report = await runtime.prune({ endedBefore: clock.now() });
      expect(report.pruned.map((row) => row.executionId)).toEqual(['intact']);
      expect(report.skipped).toEqual([{ executionId: 'edited', reason: 'chain_broken' }]);
      expect(await store.verify('edited')).toMatchObject({ ok: false, brokenAtSequence: 1 });
    });

    it('goes through the settled executions one batch at a time with nextCursor', async () => {
      const { clock, runtime } = await make();
      for (const id of ['a', 'b', 'c']) {
        await (await runtime.start(order, {}, { executionId: id })).result();
      }
      await clock.advance(1_000);
      const first = await runtime.prune({ endedBefore: clock.now(), limit: 2 });
      expect(first.pruned.map((row) => row.executionId)).toEqual(['a', 'b']);
      expect(first.nextCursor).toBe('b');
      const second = await runtime.prune({
        endedBefore: clock.now(),
        limit: 2,
        cursor: first.nextCursor as string,
      });
      expect(second.pruned.map((row) => row.executionId)).toEqual(['c']);
      expect(second.nextCursor).toBeUndefined();
      expect([first.receiptSequence, second.receiptSequence]).toEqual([0, 1]);
    });

    it('refuses bad options with INVALID_ARGUMENT, removing nothing', async () => {
      const { clock, runtime } = await make();
      await (await runtime.start(order, {}, { executionId: 'kept' })).result();
      await clock.advance(1_000);
      const endedBefore = clock.now();
      const codes = [
        await codeOf(runtime.prune(undefined as never)),
        await codeOf(runtime.prune({ endedBefore: new Date('not a date') })),
        await codeOf(runtime.prune({ endedBefore: 'yesterday' as never })),
        await codeOf(runtime.prune({ endedBefore: -1 })),
        await codeOf(runtime.prune({ endedBefore, limit: 0 })),
        await codeOf(runtime.prune({ endedBefore, limit: 1_001 })),
        await codeOf(runtime.prune({ endedBefore, cursor: '' })),
        await codeOf(runtime.prune({ endedBefore, dryRun: 'yes' as never })),
      ];
      expect(codes).toEqual(Array.from({ length: 8 }, () => 'INVALID_ARGUMENT'));
      expect(await ids(runtime)).toEqual(['kept']);
    });
  });
}

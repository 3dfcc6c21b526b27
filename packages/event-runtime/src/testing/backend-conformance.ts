import { describe, expect, it } from 'vitest';
import type { Backend } from '../backend.js';
import { ErrorCode, type LoomError } from '../errors.js';
import { freshId } from './event-store-conformance.js';

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

/**
 * What every backend opener (`openMemory`, `openSqlite`, `openPostgres`) promises: one call gives
 * four working stores on one database, and `close()` closes all of them in order, once.
 * `open` returns a freshly opened, migrated backend.
 */
export function backendConformance(name: string, open: () => Promise<Backend>): void {
  describe(`backend conformance: ${name}`, () => {
    it('one open call gives a log, leases, snapshots and queues that work together', async () => {
      const backend = await open();
      try {
        const id = freshId('backend');
        const [started] = await backend.events.append([
          { executionId: id, sequence: 0, type: 'execution.started', payload: { flow: 'f' } },
        ]);
        expect(started?.sequence).toBe(0);
        expect(await backend.leases.acquireMany('node-a', [id], 30_000)).toEqual(new Set([id]));
        await backend.snapshots.save({ executionId: id, sequence: 0, state: { n: 1 }, at: 1 });
        expect((await backend.snapshots.load(id))?.state).toEqual({ n: 1 });
        const queued = await backend.queues.enqueue({ queue: `q-${id}`, flow: 'f', input: null });
        expect(queued.duplicate).toBe(false);
        expect((await backend.queues.queueStats(`q-${id}`)).depth).toBe(1);
        const live = backend.live;
        expect(live).toBeDefined();
        await live?.write({
          executionId: id,
          stream: 'decide:1',
          attempt: 'a',
          offset: 0,
          text: 'hi',
        });
        expect((await live?.read(id, 'decide:1'))?.map((chunk) => chunk.text)).toEqual(['hi']);
        await backend.migrate(); // again: a current schema is left as it is
        expect(await backend.events.read(id)).toHaveLength(1);
      } finally {
        await backend.close();
      }
    });

    it('after close() every store refuses with STORE_CLOSED, and closing again is harmless', async () => {
      const backend = await open();
      const id = freshId('closed');
      await backend.close();
      expect(await codeOf(backend.events.read(id))).toBe(ErrorCode.STORE_CLOSED);
      expect(
        await codeOf(
          backend.events.append([
            { executionId: id, sequence: 0, type: 'execution.started', payload: {} },
          ]),
        ),
      ).toBe(ErrorCode.STORE_CLOSED);
      expect(await codeOf(backend.leases.acquireMany('node-a', [id], 1_000))).toBe(
        ErrorCode.STORE_CLOSED,
      );
      expect(await codeOf(backend.snapshots.load(id))).toBe(ErrorCode.STORE_CLOSED);
      expect(await codeOf(backend.queues.queueStats('q'))).toBe(ErrorCode.STORE_CLOSED);
      expect(await codeOf(backend.live?.read(id, 'decide:1') ?? Promise.resolve())).toBe(
        ErrorCode.STORE_CLOSED,
      );
      await backend.close();
      await Promise.all([backend.close(), backend.close()]);
    });
  });
}

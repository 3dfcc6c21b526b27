import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, type LoomError } from '../errors.js';
import { type LiveChunkInput, type LiveStore, liveChunkTextMax } from '../live-store.js';
import { freshId } from './event-store-conformance.js';
import type { TestClock } from './manual-clock.js';
import { until } from './until.js';

/** What a backend hands the live-store conformance suite for one test. */
export interface LiveStoreHarness {
  /** A writable store on a fresh (or test-private) database, on `clock`. */
  store: LiveStore;
  /** The clock `store` stamps chunks with (a `ManualClock`). */
  clock: TestClock;
  /**
   * A second handle on the same database, as another process would have (its own connection;
   * the memory backend hands the same store), on the wall clock.
   */
  openPeer(): Promise<LiveStore>;
  /** Releases everything. */
  close(): Promise<void>;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code ?? `untyped: ${String(error)}`;
  }
  return 'resolved';
}

function chunk(executionId: string, offset: number, text: string, attempt = 'a1'): LiveChunkInput {
  return { executionId, stream: 'decide:1', attempt, offset, text };
}

/** Counts a watch's wakes. */
function watched(store: LiveStore, executionId: string): { wakes: () => number; stop: () => void } {
  let wakes = 0;
  const stop = store.watch(executionId, () => {
    wakes++;
  });
  return { wakes: () => wakes, stop };
}

/**
 * The one behaviour suite every `LiveStore` backend passes (ADR 0050). Call it from a `*.test.ts`
 * with a factory for a fresh harness per test.
 *
 * @example
 * liveStoreConformance('memory', async () => {
 *   const clock = new ManualClock(1_000);
 *   const store = new InMemoryLiveStore({ clock });
 *   return { store, clock, openPeer: async () => store, close: () => store.close() };
 * });
 */
export function liveStoreConformance(name: string, open: () => Promise<LiveStoreHarness>): void {
  describe(`LiveStore conformance: ${name}`, () => {
    let harness: LiveStoreHarness;
    let store: LiveStore;

    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(async () => {
      await harness.close();
    });

    it('reads back what was written, in position order, with the store clock stamp', async () => {
      const id = freshId('live');
      expect(await store.write(chunk(id, 0, 'Hel'))).toBe(true);
      expect(await store.write(chunk(id, 3, 'lo, ✓ "wörld"\n🧵'))).toBe(true);
      const chunks = await store.read(id, 'decide:1');
      expect(
        chunks.map(({ attempt, offset, text, stream }) => ({ attempt, offset, text, stream })),
      ).toEqual([
        { attempt: 'a1', offset: 0, text: 'Hel', stream: 'decide:1' },
        { attempt: 'a1', offset: 3, text: 'lo, ✓ "wörld"\n🧵', stream: 'decide:1' },
      ]);
      expect(chunks[0]?.executionId).toBe(id);
      expect((chunks[1]?.position ?? 0) > (chunks[0]?.position ?? 0)).toBe(true);
      expect(chunks[0]?.atMs).toBe(harness.clock.now());
    });

    it('a chunk at an offset already written for that attempt is stored once', async () => {
      const id = freshId('live-dup');
      expect(await store.write(chunk(id, 0, 'Hel'))).toBe(true);
      expect(await store.write(chunk(id, 0, 'Hel'))).toBe(false);
      expect(await store.write(chunk(id, 0, 'Other'))).toBe(false);
      // The same offset of another attempt is another chunk.
      expect(await store.write(chunk(id, 0, 'Re', 'a2'))).toBe(true);
      const chunks = await store.read(id, 'decide:1');
      expect(chunks.map((c) => `${c.attempt}@${c.offset}:${c.text}`)).toEqual([
        'a1@0:Hel',
        'a2@0:Re',
      ]);
    });

    it('pages by afterPosition and limit; streams and executions stay apart', async () => {
      const id = freshId('live-page');
      const other = freshId('live-other');
      for (let n = 0; n < 5; n++) await store.write(chunk(id, n, String(n)));
      await store.write(chunk(other, 0, 'x'));
      await store.write({ ...chunk(id, 0, 'y'), stream: 'decide:2' });
      const first = await store.read(id, 'decide:1', { limit: 2 });
      expect(first.map((c) => c.text)).toEqual(['0', '1']);
      const rest = await store.read(id, 'decide:1', {
        afterPosition: first[1]?.position ?? 0,
      });
      expect(rest.map((c) => c.text)).toEqual(['2', '3', '4']);
      expect((await store.read(id, 'decide:2')).map((c) => c.text)).toEqual(['y']);
      expect(await store.read(freshId('live-none'), 'decide:1')).toEqual([]);
    });

    it('a watcher on another connection is woken once in effect, then by a write', async () => {
      const id = freshId('live-watch');
      const peer = await harness.openPeer();
      const watch = watched(peer, id);
      try {
        await until(() => watch.wakes() >= 1, 'the watch to be in effect', 10_000);
        const before = watch.wakes();
        await store.write(chunk(id, 0, 'ping'));
        await until(() => watch.wakes() > before, 'a wake after the write', 10_000);
        expect((await peer.read(id, 'decide:1')).map((c) => c.text)).toEqual(['ping']);
      } finally {
        watch.stop();
      }
    });

    it('drop deletes every attempt of one stream and nothing else', async () => {
      const id = freshId('live-drop');
      await store.write(chunk(id, 0, 'a'));
      await store.write(chunk(id, 0, 'b', 'a2'));
      await store.write({ ...chunk(id, 0, 'c'), stream: 'decide:2' });
      await store.drop(id, 'decide:1');
      expect(await store.read(id, 'decide:1')).toEqual([]);
      expect((await store.read(id, 'decide:2')).map((c) => c.text)).toEqual(['c']);
      // A dropped key may be written again (a new chunk, a higher position).
      expect(await store.write(chunk(id, 0, 'a'))).toBe(true);
    });

    it('prune deletes the chunks written before a time, and says how many', async () => {
      const id = freshId('live-prune');
      await store.write(chunk(id, 0, 'old'));
      const cut = harness.clock.now() + 1;
      await harness.clock.advance(10);
      await store.write(chunk(id, 3, 'new'));
      expect(await store.prune(cut)).toBeGreaterThanOrEqual(1);
      expect((await store.read(id, 'decide:1')).map((c) => c.text)).toEqual(['new']);
      expect(await store.prune(cut)).toBe(0);
    });

    it('refuses bad input with typed errors, and writes nothing', async () => {
      const id = freshId('live-bad');
      expect(await codeOf(store.write(chunk(id, 0, '')))).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(await codeOf(store.write(chunk(id, -1, 'x')))).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(await codeOf(store.write(chunk(id, 0.5, 'x')))).toBe(ErrorCode.INVALID_ARGUMENT);
      expect(await codeOf(store.write({ ...chunk(id, 0, 'x'), attempt: '' }))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
      expect(await codeOf(store.write({ ...chunk(id, 0, 'x'), stream: '' }))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
      expect(await codeOf(store.write(chunk(id, 0, 'x'.repeat(liveChunkTextMax + 1))))).toBe(
        ErrorCode.LIMIT_EXCEEDED,
      );
      expect(await codeOf(store.write(chunk('', 0, 'x')))).toBe(ErrorCode.INVALID_ENVELOPE);
      expect(await codeOf(store.read(id, 'decide:1', { limit: 0 }))).toBe(
        ErrorCode.INVALID_ARGUMENT,
      );
      expect(await store.read(id, 'decide:1')).toEqual([]);
    });

    it('after close every call refuses with STORE_CLOSED', async () => {
      const id = freshId('live-closed');
      await store.close();
      expect(await codeOf(store.write(chunk(id, 0, 'x')))).toBe(ErrorCode.STORE_CLOSED);
      expect(await codeOf(store.read(id, 'decide:1'))).toBe(ErrorCode.STORE_CLOSED);
      expect(await codeOf(store.drop(id, 'decide:1'))).toBe(ErrorCode.STORE_CLOSED);
      await store.close();
    });
  });
}

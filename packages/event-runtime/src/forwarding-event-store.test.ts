// The helpers for payload-rewriting decorators: the runtime's recorded payload text, read through
// the public accessor, and transactRewriting on a real SQLite file (a synchronous transaction).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { AppendGuard, EventEnvelope, StoredEvent } from './envelope.js';
import { isLoomError } from './errors.js';
import { recordedPayloadText, transactRewriting } from './forwarding-event-store.js';
import type { Flow } from './runtime/flow.js';
import { createKernelRuntime } from './runtime/runtime.js';
import { InMemoryEventStore } from './store/memory/in-memory-event-store.js';
import { SqliteEventStore } from './store/sqlite/sqlite-event-store.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-forwarding-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
let files = 0;

/** Keeps what recordedPayloadText says of each envelope the runtime appends. */
class Recording extends InMemoryEventStore {
  readonly seen: Array<{ type: string; text: string | undefined; replaced: string | undefined }> =
    [];

  override append(envelopes: readonly EventEnvelope[], guard?: AppendGuard) {
    for (const envelope of envelopes) {
      this.seen.push({
        type: envelope.type,
        text: recordedPayloadText(envelope),
        // A spread copy with a payload of its own: its text is no longer the recorded one.
        replaced: recordedPayloadText({ ...envelope, payload: { other: true } }),
      });
    }
    return super.append(envelopes, guard);
  }
}

describe('recordedPayloadText', () => {
  it("is the runtime's recorded text, and undefined once the payload is replaced", async () => {
    const store = new Recording();
    const runtime = createKernelRuntime({ store, timerPollMs: 0 });
    const live = { tag: 'recorded' };
    const flow: Flow<null, string> = {
      name: 'recorded-text',
      run: async (ctx) => {
        const value = await ctx.step('live', () => live);
        // The effect's object changes after it was recorded: the log keeps what the flow saw.
        live.tag = 'changed';
        return value.tag;
      },
    };
    const handle = await runtime.start(flow, null, { executionId: 'recorded-1' });
    expect(await handle.result()).toBe('recorded');
    await runtime.shutdown();
    const completed = store.seen.find((entry) => entry.type === 'step.completed');
    expect(JSON.parse(completed?.text as string)).toMatchObject({ result: { tag: 'recorded' } });
    expect(completed?.replaced).toBeUndefined();
    expect(recordedPayloadText({ executionId: 'x', sequence: 0, type: 't', payload: 1 })).toBe(
      undefined,
    );
  });
});

describe('transactRewriting over SQLite', () => {
  function open() {
    const path = join(directory, `store-${++files}.db`);
    const store = SqliteEventStore.open({ path, migrate: true });
    store.database.exec('CREATE TABLE IF NOT EXISTS notes (body TEXT)');
    return store;
  }
  const note = (tx: unknown, body: string) =>
    (tx as Database.Database).prepare('INSERT INTO notes (body) VALUES (?)').run(body);
  const notes = (store: SqliteEventStore) =>
    (store.database.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n;
  const event = (n: number): EventEnvelope => ({
    executionId: 'tx-1',
    sequence: 0,
    type: 'demo.saved',
    payload: { n },
  });

  it('stores the rewritten envelopes with the work, calling the builder once, synchronously', async () => {
    const store = open();
    let built = 0;
    const seen: boolean[] = [];
    const { result, stored } = await transactRewriting(
      store,
      (tx) => {
        note(tx, 'a');
        return 5;
      },
      (n) => {
        built += 1;
        return [event(n)];
      },
      undefined,
      (list, canAwait) => {
        seen.push(canAwait);
        return list.map((envelope) => ({ ...envelope, payload: { rewritten: envelope.payload } }));
      },
    );
    expect(result).toBe(5);
    expect(built).toBe(1);
    expect(seen).toEqual([false]);
    expect(stored.map((e: StoredEvent) => e.payload)).toEqual([{ rewritten: { n: 5 } }]);
    expect((await store.read('tx-1'))[0]?.payload).toEqual({ rewritten: { n: 5 } });
    expect(notes(store)).toBe(1);
    await store.close();
  });

  it('a rewrite that throws rolls the work back; one that goes async is refused, nothing written', async () => {
    const store = open();
    const failing = await transactRewriting(
      store,
      (tx) => note(tx, 'b'),
      () => [event(1)],
      undefined,
      () => {
        throw new Error('refused by the decorator');
      },
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect((failing as Error).message).toBe('refused by the decorator');
    const awaiting = await transactRewriting(
      store,
      (tx) => note(tx, 'c'),
      () => [event(2)],
      undefined,
      async (list) => list,
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isLoomError(awaiting, 'INVALID_ARGUMENT')).toBe(true);
    expect(notes(store)).toBe(0);
    expect(await store.read('tx-1')).toEqual([]);
    await store.close();
  });
});

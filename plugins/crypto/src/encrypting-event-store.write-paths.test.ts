// Every write path of EventStore through the decorator, not only `append`: a transactional step
// (`transact`, the step's write and its event in one database transaction), a batch of appends
// (`appendBatch`, what CoalescingEventStore sends) and the signal inbox (`sendSignal`). Each
// checks what the database holds behind the decorator's back.
import {
  type AppendOutcome,
  canAppendBatch,
  type EventStore,
  isLoomError,
  isTransactional,
  type JsonValue,
  type StoredEvent,
} from '@loom/event-runtime';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import type Database from 'better-sqlite3';
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type EncryptingEventStore, encryptingEventStore } from './encrypting-event-store.js';
import { CryptoErrorCode } from './errors.js';
import { isEncryptedField, isErased } from './field-cipher.js';
import { InMemoryKeyring } from './in-memory-keyring.js';
import type { SensitiveFields } from './sensitive-fields.js';
import { backendNames, type RawStore, useBackends } from './store-harness.test-support.js';

const backends = useBackends();

const sensitive: SensitiveFields = {
  'execution.started': { subject: 'input.userId', fields: ['input.email'] },
  'step.completed': { subject: 'result.userId', fields: ['result.email'] },
  'user.registered': { subject: 'userId', fields: ['email'] },
  'signal:confirm': { subject: 'userId', fields: ['email'] },
};

interface Signup {
  userId: string;
  email: string;
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function opened(backend: (typeof backendNames)[number]): Promise<RawStore> {
  const raw = await backends.open(backend);
  closing.push(raw.close);
  return raw;
}

/** The step's own write, in the transaction it is given (SQLite handle or Postgres client). */
function accountsTable(raw: RawStore): string {
  const location = raw.location;
  return location !== undefined && 'schema' in location
    ? `"${location.schema}".accounts`
    : 'accounts';
}

async function createAccounts(raw: RawStore): Promise<() => Promise<string[]>> {
  const table = accountsTable(raw);
  const location = raw.location;
  if (location !== undefined && 'schema' in location) {
    const pool = backends.pool();
    await pool.query(`CREATE TABLE ${table} (user_id text PRIMARY KEY)`);
    return async () =>
      (await pool.query<{ user_id: string }>(`SELECT user_id FROM ${table}`)).rows.map(
        (row) => row.user_id,
      );
  }
  const { default: Sqlite } = await import('better-sqlite3');
  const side = new Sqlite((location as { path: string }).path);
  side.exec(`CREATE TABLE ${table} (user_id TEXT PRIMARY KEY)`);
  closing.push(async () => {
    side.close();
  });
  return async () =>
    (side.prepare(`SELECT user_id FROM ${table}`).all() as Array<{ user_id: string }>).map(
      (row) => row.user_id,
    );
}

function insertAccount(raw: RawStore, tx: unknown, userId: string): Promise<unknown> | undefined {
  const table = accountsTable(raw);
  if (raw.store.backend === 'postgres')
    return (tx as pg.ClientBase).query(`INSERT INTO ${table} (user_id) VALUES ($1)`, [userId]);
  (tx as Database.Database).prepare(`INSERT INTO ${table} (user_id) VALUES (?)`).run(userId);
  return undefined;
}

const transactional = ['sqlite', 'postgres'] as const;

for (const backend of transactional) {
  describe(`transact through the decorator (${backend})`, () => {
    it("a transactional step's event is ciphertext in the raw store; the step's row commits with it", async () => {
      const raw = await opened(backend);
      const accounts = await createAccounts(raw);
      const keyring = new InMemoryKeyring();
      const store = encryptingEventStore(raw.store, { sensitive, keyring });
      expect(isTransactional(store)).toBe(true);
      const signup = defineFlow({ name: 'signup-tx' }, async (ctx, input: Signup) => {
        // Postgres: an asynchronous work (a query); SQLite: a synchronous one (better-sqlite3).
        const saved = await ctx.transaction('save', (tx) => {
          const wrote = insertAccount(raw, tx, input.userId);
          const result = { userId: input.userId, email: input.email };
          return wrote === undefined ? result : wrote.then(() => result);
        });
        // What the flow got back is the plaintext (the output itself is not marked).
        return { saved: saved.email === input.email };
      });
      const runtime = createRuntime({ store, flows: [signup], timerPollMs: 0 });
      closing.push(() => runtime.shutdown());
      const run = await runtime.start(
        signup,
        { userId: 'ada', email: 'ada@example.com' },
        { executionId: `tx-${backend}` },
      );
      expect(await run.result()).toEqual({ saved: true });
      expect(await accounts()).toEqual(['ada']);

      const events = await raw.store.read(run.executionId);
      const completed = events.find((event) => event.type === 'step.completed') as StoredEvent;
      const text = await raw.payloadText(run.executionId, completed.sequence);
      expect(text).not.toContain('ada@example.com');
      expect(
        isEncryptedField((JSON.parse(text) as { result: { email: unknown } }).result.email),
      ).toBe(true);
      // The run's whole log (readAll may hide fresh rows on Postgres; this assertion would then
      // pass on nothing).
      expect(JSON.stringify(events)).not.toContain('ada@example.com');
      expect(events.length).toBeGreaterThan(2);
      // Through the decorator it reads as plaintext, and the chain holds over the ciphertext.
      const read = await store.read(run.executionId);
      expect(read.find((event) => event.type === 'step.completed')?.payload).toMatchObject({
        result: { email: 'ada@example.com' },
      });
      expect(await store.verify(run.executionId)).toMatchObject({ ok: true });
    });

    it('transact returns the events as the caller gave them, and stores them sealed', async () => {
      const raw = await opened(backend);
      const keyring = new InMemoryKeyring();
      const store = encryptingEventStore(raw.store, { sensitive, keyring });
      if (!isTransactional(store)) throw new Error('the decorator lost transact');
      // The subject's key is fetched by an append first (SQLite seals from the store's cache).
      await store.append([registered('tx-warm', 0, 'bob')]);
      const { result, stored } = await store.transact(
        () => 7,
        (n) => [registered(`tx-direct-${backend}`, 0, 'bob', n)],
      );
      expect(result).toBe(7);
      expect(stored[0]?.payload).toEqual({ userId: 'bob', email: 'bob@example.com', n: 7 });
      const text = await raw.payloadText(`tx-direct-${backend}`, 0);
      expect(text).not.toContain('bob@example.com');
      expect(isEncryptedField(JSON.parse(text).email)).toBe(true);
    });
  });
}

describe('transact on SQLite with a subject whose key the store has not fetched', () => {
  it('fails with CRYPTO_KEY_NOT_READY, writes nothing, and a retry succeeds', async () => {
    const raw = await opened('sqlite');
    const store = encryptingEventStore(raw.store, { sensitive, keyring: new InMemoryKeyring() });
    if (!isTransactional(store)) throw new Error('the decorator lost transact');
    const attempt = () =>
      store.transact(
        () => null,
        () => [registered('tx-cold', 0, 'cleo')],
      );
    const error = await attempt().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(isLoomError(error, CryptoErrorCode.CRYPTO_KEY_NOT_READY)).toBe(true);
    expect(await raw.countRows('tx-cold')).toBe(0);
    // The refused attempt started fetching the key: a retry finds it (deadline 5 s).
    const deadline = Date.now() + 5_000;
    for (;;) {
      const outcome = await attempt().then(
        () => 'ok',
        (thrown: unknown) => thrown,
      );
      if (outcome === 'ok') break;
      expect(isLoomError(outcome, CryptoErrorCode.CRYPTO_KEY_NOT_READY)).toBe(true);
      if (Date.now() > deadline) throw new Error('the key never reached the cache');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(await raw.countRows('tx-cold')).toBe(1);
    expect(isEncryptedField(JSON.parse(await raw.payloadText('tx-cold', 0)).email)).toBe(true);
  });
});

describe('transact on SQLite after forget through the same store', () => {
  it('is SUBJECT_FORGOTTEN and writes nothing', async () => {
    const raw = await opened('sqlite');
    const store = encryptingEventStore(raw.store, { sensitive, keyring: new InMemoryKeyring() });
    if (!isTransactional(store)) throw new Error('the decorator lost transact');
    await store.append([registered('tx-forgotten', 0, 'dora')]);
    await store.forget('dora');
    const error = await store
      .transact(
        () => null,
        () => [registered('tx-forgotten', 1, 'dora')],
      )
      .then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
    expect(isLoomError(error, CryptoErrorCode.SUBJECT_FORGOTTEN)).toBe(true);
    expect(await raw.countRows('tx-forgotten')).toBe(1);
  });
});

function registered(executionId: string, sequence: number, userId: string | null, n = 0) {
  return {
    executionId,
    sequence,
    type: 'user.registered',
    payload: { userId, email: `${userId}@example.com`, n } as JsonValue,
  };
}

for (const backend of transactional) {
  describe(`appendBatch through the decorator (${backend})`, () => {
    it('seals each request, refuses only the bad one, and gives the plaintext back', async () => {
      const raw = await opened(backend);
      const store = encryptingEventStore(raw.store, { sensitive, keyring: new InMemoryKeyring() });
      if (!canAppendBatch(store)) throw new Error('the decorator lost appendBatch');
      const outcomes: AppendOutcome[] = await store.appendBatch([
        { envelopes: [registered('batch-a', 0, 'ada')] },
        { envelopes: [registered('batch-b', 0, null)] },
        {
          envelopes: [
            { executionId: 'batch-c', sequence: 0, type: 'plain', payload: { x: 1 } },
            registered('batch-c', 1, 'bob'),
          ],
        },
      ]);
      expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, true]);
      const refused = outcomes[1] as { ok: false; error: unknown };
      expect(isLoomError(refused.error, CryptoErrorCode.CRYPTO_SUBJECT_MISSING)).toBe(true);
      const [a, , c] = outcomes as Array<{ ok: true; stored: StoredEvent[] }>;
      expect(a?.stored[0]?.payload).toEqual({ userId: 'ada', email: 'ada@example.com', n: 0 });
      expect(c?.stored[1]?.payload).toEqual({ userId: 'bob', email: 'bob@example.com', n: 0 });
      for (const [id, sequence] of [
        ['batch-a', 0],
        ['batch-c', 1],
      ] as const) {
        const text = await raw.payloadText(id, sequence);
        expect(text).not.toContain('@example.com');
        expect(isEncryptedField(JSON.parse(text).email)).toBe(true);
      }
      expect(await raw.countRows('batch-b')).toBe(0);
      expect(await raw.payloadText('batch-c', 0)).toContain('"x"');
    });
  });
}

for (const backend of backendNames) {
  describe(`the signal inbox through the decorator (${backend})`, () => {
    it("a 'signal:<name>' entry seals the inbox payload; reads open it; forget erases it", async () => {
      const raw = await opened(backend);
      const store: EncryptingEventStore = encryptingEventStore(raw.store, {
        sensitive,
        keyring: new InMemoryKeyring(),
      });
      const id = `inbox-${backend}`;
      await store.append([
        { executionId: id, sequence: 0, type: 'execution.started', payload: { flow: 'f' } },
      ]);
      const sent = await store.sendSignal({
        executionId: id,
        name: 'confirm',
        payload: { userId: 'ada', email: 'ada@example.com' },
      });
      await store.sendSignal({ executionId: id, name: 'other', payload: { email: 'kept' } });
      const text = await raw.inboxPayloadText(id, sent.signalId);
      expect(text).not.toContain('ada@example.com');
      expect(isEncryptedField(JSON.parse(text).email)).toBe(true);
      // A signal name the map does not mark stays as it was.
      expect(await raw.inboxPayloadText(id, sent.signalId + 1)).toContain('kept');

      const inbox = await store.readSignals(id);
      expect(inbox.map((signal) => signal.payload)).toEqual([
        { userId: 'ada', email: 'ada@example.com' },
        { email: 'kept' },
      ]);
      await store.forget('ada');
      const after = (await store.readSignals(id))[0]?.payload as { email: unknown };
      expect(isErased(after.email)).toBe(true);
    });
  });
}

describe('a flow waiting for a sealed signal', () => {
  it('receives the plaintext; the inbox row and the signal.received event hold ciphertext', async () => {
    const raw = await opened('sqlite');
    const store = encryptingEventStore(raw.store, {
      keyring: new InMemoryKeyring(),
      sensitive: {
        ...sensitive,
        'signal.received': { subject: 'payload.userId', fields: ['payload.email'] },
      },
    });
    const confirm = defineFlow({ name: 'confirm' }, async (ctx) => {
      const got = await ctx.waitForSignal<{ userId: string; email: string }>('confirm');
      // The flow sees the plaintext (its output is not marked, so it says only that).
      return got.received && got.payload.email === 'ada@example.com';
    });
    const runtime = createRuntime({
      store: store as EventStore,
      flows: [confirm],
      timerPollMs: 0,
    });
    closing.push(() => runtime.shutdown());
    const run = await runtime.start(confirm, null, { executionId: 'wait-sqlite' });
    await runtime.signal(run.executionId, 'confirm', { userId: 'ada', email: 'ada@example.com' });
    await runtime.wakeDue();
    expect(await runtime.attach(run.executionId).result()).toBe(true);
    expect(await raw.inboxPayloadText(run.executionId, 1)).not.toContain('ada@example.com');
    const log = await raw.store.read(run.executionId);
    expect(log.some((event) => event.type === 'signal.received')).toBe(true);
    expect(JSON.stringify(log)).not.toContain('ada@example.com');
  });
});

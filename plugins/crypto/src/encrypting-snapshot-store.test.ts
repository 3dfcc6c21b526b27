import {
  ErrorCode,
  InMemorySnapshotStore,
  LoomError,
  type SnapshotStore,
} from '@loom/event-runtime';
import { migrate, PostgresSnapshotStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore, SqliteSnapshotStore } from '@loom/event-runtime/sqlite';
import { snapshotStoreConformance } from '@loom/event-runtime/testing';
import { describe, expect, it } from 'vitest';
import { encryptingSnapshotStore } from './encrypting-snapshot-store.js';
import { isEncryptedField } from './field-cipher.js';
import { InMemoryKeyring } from './in-memory-keyring.js';
import { pgTestUrl, useBackends } from './store-harness.test-support.js';

const backends = useBackends();

/** One process, one heap: the "other handle" is a view on the same store that closes alone. */
function peerOf(store: SnapshotStore): SnapshotStore {
  let closed = false;
  const guard = <T>(call: () => Promise<T>): Promise<T> =>
    closed
      ? Promise.reject(new LoomError(ErrorCode.STORE_CLOSED, 'the memory snapshot peer is closed'))
      : call();
  return {
    save: (snapshot) => guard(() => store.save(snapshot)),
    load: (id) => guard(() => store.load(id)),
    close: async () => {
      closed = true;
    },
  };
}

// Inert for executions without a subject: the kernel's snapshot suite, unchanged.
const inert = { keyring: new InMemoryKeyring(), subjectOf: () => undefined };
snapshotStoreConformance('encrypting over memory, no subject', async () => {
  const inner = new InMemorySnapshotStore();
  return {
    store: encryptingSnapshotStore(inner, inert),
    openPeer: async () => encryptingSnapshotStore(peerOf(inner), inert),
    close: () => inner.close(),
  };
});
snapshotStoreConformance('encrypting over sqlite, no subject', async () => {
  const path = backends.freshPath();
  const events: SqliteEventStore[] = [];
  const open = () => {
    const database = SqliteEventStore.open({ path, migrate: true });
    events.push(database);
    return encryptingSnapshotStore(new SqliteSnapshotStore(database.database), inert);
  };
  const store = open();
  return {
    store,
    openPeer: async () => open(),
    close: async () => {
      for (const database of events) await database.close();
    },
  };
});
snapshotStoreConformance('encrypting over postgres, no subject', async () => {
  const schema = backends.freshSchema();
  await migrate({ pool: backends.pool(), schema });
  const open = async () =>
    encryptingSnapshotStore(
      await PostgresSnapshotStore.open({ connectionString: pgTestUrl, schema }),
      inert,
    );
  const store = await open();
  const peers: Array<Awaited<ReturnType<typeof open>>> = [];
  return {
    store,
    openPeer: async () => {
      const peer = await open();
      peers.push(peer);
      return peer;
    },
    close: async () => {
      for (const peer of peers) await peer.close();
      await store.close();
    },
  };
});

describe('encryptingSnapshotStore', () => {
  const state = { input: { userId: 'ada', email: 'ada@example.com' }, steps: [1, 2] };

  it('stores the state as ciphertext under the subject, and loads it back', async () => {
    const inner = new InMemorySnapshotStore();
    const keyring = new InMemoryKeyring();
    const store = encryptingSnapshotStore(inner, { keyring, subjectOf: (id) => id.split(':')[1] });
    await store.save({ executionId: 'signup:ada', sequence: 4, state, at: 1 });
    const raw = await inner.load('signup:ada');
    expect(JSON.stringify(raw)).not.toContain('ada@example.com');
    expect(isEncryptedField(raw?.state)).toBe(true);
    expect(await store.load('signup:ada')).toEqual({
      executionId: 'signup:ada',
      sequence: 4,
      state,
      at: 1,
    });
  });

  it('a forgotten subject’s snapshot loads as none, and a new save stores nothing', async () => {
    const inner = new InMemorySnapshotStore();
    const keyring = new InMemoryKeyring();
    const store = encryptingSnapshotStore(inner, { keyring, subjectOf: (id) => id.split(':')[1] });
    await store.save({ executionId: 'signup:ada', sequence: 4, state, at: 1 });
    await keyring.forget('ada');
    expect(await store.load('signup:ada')).toBeUndefined();
    await store.save({ executionId: 'signup:ada', sequence: 9, state, at: 2 });
    expect((await inner.load('signup:ada'))?.sequence).toBe(4);
  });

  it('a changed snapshot is CRYPTO_INTEGRITY naming execution and sequence', async () => {
    const inner = new InMemorySnapshotStore();
    const keyring = new InMemoryKeyring();
    const store = encryptingSnapshotStore(inner, { keyring, subjectOf: () => 'ada' });
    await store.save({ executionId: 'signup:ada', sequence: 4, state, at: 1 });
    const raw = await inner.load('signup:ada');
    const sealed = raw?.state as { ct: string };
    await inner.save({
      executionId: 'signup:ada',
      sequence: 5,
      state: { ...sealed, ct: Buffer.from('tampered').toString('base64') },
      at: 2,
    });
    await expect(store.load('signup:ada')).rejects.toMatchObject({
      code: 'CRYPTO_INTEGRITY',
      fields: { executionId: 'signup:ada', sequence: 5 },
    });
  });
});

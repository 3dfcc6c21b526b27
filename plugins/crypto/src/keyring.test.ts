import { randomBytes } from 'node:crypto';
import { serverDropsConnections } from '@loom/event-runtime/testing/postgres';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { InMemoryKeyring } from './in-memory-keyring.js';
import { localKeyProvider, masterKeyFromEnv } from './key-provider.js';
import type { Keyring } from './keyring.js';
import { PostgresKeyring } from './postgres-keyring.js';
import { SqliteKeyring } from './sqlite-keyring.js';
import { pgTestUrl, useBackends } from './store-harness.test-support.js';
import { keyringConformance } from './testing/keyring-conformance.js';

const backends = useBackends();
const master = randomBytes(32);
const provider = localKeyProvider({ current: 'm1', keys: { m1: master } });

keyringConformance('memory', async () => {
  const keyring = new InMemoryKeyring();
  return { keyring, openPeer: async () => keyring, close: () => keyring.close() };
});

keyringConformance('sqlite', async () => {
  const path = backends.freshPath();
  const peers: Keyring[] = [];
  const keyring = SqliteKeyring.open({ path, provider });
  return {
    keyring,
    openPeer: async () => {
      const peer = SqliteKeyring.open({ path, provider, cacheTtlMs: 0 });
      peers.push(peer);
      return peer;
    },
    close: async () => {
      for (const peer of peers) await peer.close();
      await keyring.close();
    },
  };
});

keyringConformance('postgres', async () => {
  const schema = backends.freshSchema();
  const peers: Keyring[] = [];
  const keyring = await PostgresKeyring.open({ connectionString: pgTestUrl, schema, provider });
  return {
    keyring,
    openPeer: async () => {
      const peer = await PostgresKeyring.open({
        connectionString: pgTestUrl,
        schema,
        provider,
        cacheTtlMs: 0,
      });
      peers.push(peer);
      return peer;
    },
    close: async () => {
      for (const peer of peers) await peer.close();
      await keyring.close();
    },
  };
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'resolved',
    (error: { code?: string }) => error.code ?? String(error),
  );
}

describe('envelope encryption of the durable keyrings', () => {
  it('SQLite stores data keys only wrapped: the raw key is nowhere in the table', async () => {
    const path = backends.freshPath();
    const keyring = SqliteKeyring.open({ path, provider });
    const key = await keyring.current('ada');
    const side = new Database(path, { readonly: true });
    const rows = side.prepare('SELECT * FROM loom_crypto_keys').all() as Array<{
      wrapped: Buffer;
      master_key_id: string;
    }>;
    side.close();
    await keyring.close();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.master_key_id).toBe('m1');
    expect(rows[0]?.wrapped.includes(Buffer.from(key.key))).toBe(false);
  });

  it('Postgres stores data keys only wrapped, under the current master key id', async () => {
    const schema = backends.freshSchema();
    const keyring = await PostgresKeyring.open({ connectionString: pgTestUrl, schema, provider });
    const key = await keyring.current('ada');
    const { rows } = await backends
      .pool()
      .query(`SELECT wrapped, master_key_id FROM "${schema}".crypto_keys`);
    await keyring.close();
    expect(rows).toHaveLength(1);
    expect(rows[0].master_key_id).toBe('m1');
    expect((rows[0].wrapped as Buffer).includes(Buffer.from(key.key))).toBe(false);
  });

  it('a master key rotation keeps old data keys readable; a wrong master key is MASTER_KEY_INVALID', async () => {
    const path = backends.freshPath();
    const before = SqliteKeyring.open({ path, provider });
    const old = await before.current('ada');
    await before.close();
    const m2 = randomBytes(32);
    const rotated = SqliteKeyring.open({
      path,
      provider: localKeyProvider({ current: 'm2', keys: { m1: master, m2 } }),
    });
    const found = await rotated.lookup([{ subject: 'ada', version: 1 }]);
    expect(Buffer.from(found.keys.get('1:ada')?.key ?? []).equals(Buffer.from(old.key))).toBe(true);
    await rotated.rotate('ada');
    await rotated.close();
    const side = new Database(path, { readonly: true });
    const ids = side
      .prepare('SELECT version, master_key_id FROM loom_crypto_keys ORDER BY version')
      .all();
    side.close();
    expect(ids).toEqual([
      { version: 1, master_key_id: 'm1' },
      { version: 2, master_key_id: 'm2' },
    ]);
    const wrong = SqliteKeyring.open({
      path,
      provider: localKeyProvider({ current: 'm1', keys: { m1: randomBytes(32) } }),
    });
    expect(await codeOf(wrong.lookup([{ subject: 'ada', version: 1 }]))).toBe('MASTER_KEY_INVALID');
    expect(await codeOf(wrong.lookup([{ subject: 'ada', version: 2 }]))).toBe('MASTER_KEY_INVALID');
    await wrong.close();
  });

  it('a forget in another process reaches this cache when the entry expires', async () => {
    const path = backends.freshPath();
    let nowMs = 1_000;
    const cached = SqliteKeyring.open({ path, provider, cacheTtlMs: 500, now: () => nowMs });
    const other = SqliteKeyring.open({ path, provider });
    await cached.current('ada');
    await other.forget('ada');
    expect(await codeOf(cached.current('ada'))).toBe('resolved');
    nowMs += 500;
    expect(await codeOf(cached.current('ada'))).toBe('SUBJECT_FORGOTTEN');
    await cached.close();
    await other.close();
  });

  it('a keyring opened without a provider can forget, and nothing else', async () => {
    const path = backends.freshPath();
    const writer = SqliteKeyring.open({ path, provider });
    await writer.current('ada');
    const eraser = SqliteKeyring.open({ path });
    expect(await codeOf(eraser.lookup([{ subject: 'ada', version: 1 }]))).toBe(
      'MASTER_KEY_INVALID',
    );
    expect(await codeOf(eraser.current('bob'))).toBe('MASTER_KEY_INVALID');
    expect(await eraser.forget('ada')).toMatchObject({ keysDestroyed: 1 });
    expect(await codeOf(writer.current('ada'))).toBe('resolved'); // its cache, until the TTL
    await eraser.close();
    await writer.close();
  });

  it('masterKeyFromEnv reads base64 from the environment and refuses a missing or short key', async () => {
    const fromEnv = masterKeyFromEnv('K', { K: master.toString('base64') });
    expect(fromEnv.currentKeyId).toBe('env:K');
    const wrapped = await fromEnv.wrap(new Uint8Array(32).fill(7), 'ctx');
    expect([...(await provider.unwrap(wrapped, 'm1', 'ctx'))]).toEqual(new Array(32).fill(7));
    expect(await codeOf(provider.unwrap(wrapped, 'm1', 'other context'))).toBe(
      'MASTER_KEY_INVALID',
    );
    expect(await codeOf(provider.unwrap(wrapped, 'm9', 'ctx'))).toBe('MASTER_KEY_INVALID');
    expect(await codeOf(Promise.resolve().then(() => masterKeyFromEnv('K', {})))).toBe(
      'MASTER_KEY_INVALID',
    );
    expect(
      await codeOf(Promise.resolve().then(() => masterKeyFromEnv('K', { K: 'c2hvcnQ=' }))),
    ).toBe('MASTER_KEY_INVALID');
  });
});

describe('a Postgres keyring whose connections the server drops (a restart, a failover)', () => {
  it('does not crash the process, and the next call connects again', async () => {
    const schema = backends.freshSchema();
    const name = `loom-keyring-drop-${process.pid}`;
    const keyring = await PostgresKeyring.open({
      connectionString: `${pgTestUrl}?application_name=${name}`,
      schema,
      provider,
      cacheTtlMs: 0,
    });
    try {
      const key = await keyring.current('ada');
      expect(await serverDropsConnections(pgTestUrl, name)).toBeGreaterThan(0);
      // The idle connection's 57P01 reaches the pool as an 'error' event: unheard, it would end
      // this process. A call after it is served by a new connection (one retry if it raced the
      // dead one out of the pool).
      const again = await keyring.current('ada').catch(() => keyring.current('ada'));
      expect(Buffer.from(again.key).equals(Buffer.from(key.key))).toBe(true);
    } finally {
      await keyring.close();
    }
  });
});

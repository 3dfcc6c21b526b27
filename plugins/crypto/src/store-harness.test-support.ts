// Harnesses for this package's tests: an event store of each backend (memory, a real SQLite
// file, a throwaway Postgres schema) with a side door to read and change rows behind its back.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, InMemoryEventStore } from '@loom/event-runtime';
import { migrate, PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import { sameProcessPeer, storedRows } from '@loom/event-runtime/testing';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

/** The test server (role root, database test); LOOM_TEST_PG_URL overrides it. */
export const pgTestUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** One backend's store with what the tests need behind its back. */
export interface RawStore {
  store: EventStore;
  openPeer(): Promise<EventStore>;
  countRows(executionId: string): Promise<number>;
  /** The stored payload text of one event, as the database holds it. */
  payloadText(executionId: string, sequence: number): Promise<string>;
  tamper(executionId: string, sequence: number, payloadText: string): Promise<void>;
  /** The stored payload text of one signal in the inbox, as the database holds it. */
  inboxPayloadText(executionId: string, signalId: number): Promise<string>;
  /** Where the store keeps its tables: a SQLite file, a Postgres schema (none for memory). */
  location: { path: string } | { schema: string } | undefined;
  close(): Promise<void>;
}

export type BackendName = 'memory' | 'sqlite' | 'postgres';
export const backendNames: readonly BackendName[] = ['memory', 'sqlite', 'postgres'];

/** Call at the top of a test file: opens stores of each backend, cleans up after the file. */
export function useBackends() {
  const directory = mkdtempSync(join(tmpdir(), 'loom-crypto-test-'));
  const schemas: string[] = [];
  let admin: pg.Pool | undefined;
  let files = 0;
  beforeAll(() => {
    admin = new pg.Pool({ connectionString: pgTestUrl, max: 4 });
  });
  afterAll(async () => {
    for (const schema of schemas) await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin?.end();
    rmSync(directory, { recursive: true, force: true });
  });

  const pool = (): pg.Pool => {
    if (admin === undefined) throw new Error('the admin pool opens in beforeAll');
    return admin;
  };

  return {
    pool,
    /** A fresh Postgres schema name, dropped after the file (prefix hcrypto_). */
    freshSchema(): string {
      const schema = `hcrypto_${randomBytes(5).toString('hex')}`;
      schemas.push(schema);
      return schema;
    },
    /** A fresh SQLite file path in the file's temporary directory. */
    freshPath(): string {
      files += 1;
      return join(directory, `store-${files}.db`);
    },
    async open(name: BackendName): Promise<RawStore> {
      if (name === 'memory') {
        const store = new InMemoryEventStore();
        return {
          store,
          openPeer: async () => sameProcessPeer(store),
          countRows: async (id) => storedRows(store, id).length,
          payloadText: async (id, sequence) => storedRows(store, id)[sequence]?.payloadText ?? '',
          tamper: async (id, sequence, text) => {
            const row = storedRows(store, id)[sequence];
            if (row !== undefined) row.payloadText = text;
          },
          // The memory store keeps no text: its inbox as the store itself returns it.
          inboxPayloadText: async (id, signalId) =>
            JSON.stringify(
              (await store.readSignals(id)).find((signal) => signal.signalId === signalId)?.payload,
            ),
          location: undefined,
          close: () => store.close(),
        };
      }
      if (name === 'sqlite') {
        files += 1;
        const path = join(directory, `store-${files}.db`);
        const store = SqliteEventStore.open({ path, migrate: true });
        const side = new Database(path);
        const peers: EventStore[] = [];
        return {
          store,
          openPeer: async () => {
            const peer = SqliteEventStore.open({ path });
            peers.push(peer);
            return peer;
          },
          countRows: async (id) =>
            (
              side
                .prepare('SELECT count(*) AS n FROM loom_events WHERE execution_id = ?')
                .get(id) as { n: number }
            ).n,
          payloadText: async (id, sequence) =>
            (
              side
                .prepare('SELECT payload FROM loom_events WHERE execution_id = ? AND sequence = ?')
                .get(id, sequence) as { payload: string }
            ).payload,
          tamper: async (id, sequence, text) => {
            side
              .prepare('UPDATE loom_events SET payload = ? WHERE execution_id = ? AND sequence = ?')
              .run(text, id, sequence);
          },
          inboxPayloadText: async (id, signalId) =>
            (
              side
                .prepare(
                  'SELECT payload FROM loom_signals WHERE execution_id = ? AND signal_id = ?',
                )
                .get(id, signalId) as { payload: string }
            ).payload,
          location: { path },
          close: async () => {
            await Promise.all(peers.map((peer) => peer.close()));
            await store.close();
            side.close();
          },
        };
      }
      const schema = this.freshSchema();
      await migrate({ pool: pool(), schema });
      const open = () =>
        PostgresEventStore.open({ connectionString: pgTestUrl, schema, pollIntervalMs: 200 });
      const store = await open();
      const peers: EventStore[] = [];
      return {
        store,
        openPeer: async () => {
          const peer = await open();
          peers.push(peer);
          return peer;
        },
        countRows: async (id) =>
          (
            await pool().query(
              `SELECT count(*)::int AS n FROM "${schema}".events WHERE execution_id = $1`,
              [id],
            )
          ).rows[0].n as number,
        payloadText: async (id, sequence) =>
          (
            await pool().query(
              `SELECT payload::text AS p FROM "${schema}".events WHERE execution_id = $1 AND sequence = $2`,
              [id, sequence],
            )
          ).rows[0].p as string,
        tamper: async (id, sequence, text) => {
          await pool().query(
            `UPDATE "${schema}".events SET payload = $3 WHERE execution_id = $1 AND sequence = $2`,
            [id, sequence, text],
          );
        },
        inboxPayloadText: async (id, signalId) =>
          (
            await pool().query(
              `SELECT payload::text AS p FROM "${schema}".signals WHERE execution_id = $1 AND signal_id = $2`,
              [id, signalId],
            )
          ).rows[0].p as string,
        location: { schema },
        close: async () => {
          await Promise.all([store.close(), ...peers.map((peer) => peer.close())]);
          await pool().query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        },
      };
    },
  };
}

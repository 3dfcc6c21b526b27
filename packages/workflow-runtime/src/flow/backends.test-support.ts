import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventStore, InMemoryEventStore, type LoomError } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import type { ManualClock } from '@loom/event-runtime/testing';
import { afterAll } from 'vitest';

/** One test's event store on a backend, and how to drop what it made. */
export interface TestBackend {
  store: EventStore;
  drop(): Promise<void>;
}

/**
 * The three backends a flow-layer test runs on, each store on `clock`: memory, a fresh SQLite
 * file in a temporary folder removed after the file's tests, and a throwaway Postgres schema
 * (`LOOM_TEST_PG_URL`, default the local test database) that `drop()` removes.
 */
export function testBackends(
  prefix: string,
): Array<[string, (clock: ManualClock) => Promise<TestBackend>]> {
  const directory = mkdtempSync(join(tmpdir(), `loom-${prefix}-`));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
  let counter = 0;
  return [
    [
      'memory',
      async (clock) => ({ store: new InMemoryEventStore({ clock }), drop: async () => {} }),
    ],
    [
      'sqlite',
      async (clock) => ({
        store: SqliteEventStore.open({
          path: join(directory, `${prefix}-${++counter}.db`),
          migrate: true,
          clock,
        }),
        drop: async () => {},
      }),
    ],
    [
      'postgres',
      async (clock) => {
        const schema = `loom_${prefix}_${process.pid}_${++counter}`;
        const store = await PostgresEventStore.open({ connectionString: pgUrl, schema, clock });
        await store.migrate();
        return {
          store,
          drop: async () => {
            await store.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          },
        };
      },
    ],
  ];
}

/** The `code` a promise rejects with, or 'resolved'. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as LoomError).code;
  }
  return 'resolved';
}

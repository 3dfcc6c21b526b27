import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Backend,
  type EventStore,
  InMemoryEventStore,
  type LoomError,
  openMemory,
} from '@loom/event-runtime';
import { openPostgres, PostgresEventStore } from '@loom/event-runtime/postgres';
import { openSqlite, SqliteEventStore } from '@loom/event-runtime/sqlite';
import type { ManualClock } from '@loom/event-runtime/testing';
import { afterAll, afterEach } from 'vitest';
import { isLoomError, WorkflowErrorCode } from '../errors.js';
import { defineFlow } from './define-flow.js';

/**
 * A list a test pushes its cleanups to (closing runtimes and stores, dropping schemas); an
 * `afterEach` registered here runs them in order and empties it. Call it inside a `describe`.
 */
export function cleanupsAfterEach(): Array<() => Promise<void>> {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  return cleanups;
}

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

/** One database a test opens as many times as it wants (two runtimes, two processes' worth). */
export interface SharedDatabase {
  /** A new backend on the database (memory: the one backend, shared). */
  open(): Promise<Backend>;
  /** Removes what the database made. */
  drop(): Promise<void>;
}

/**
 * The backends a flow-control test runs on, each a database opened as many times as the test
 * wants: memory (one backend shared; left out with `memory: false`), a fresh SQLite file in a
 * temporary folder removed after the file's tests, a throwaway Postgres schema, migrated once.
 */
export function sharedDatabases(
  prefix: string,
  { memory = true }: { memory?: boolean } = {},
): Array<[string, () => Promise<SharedDatabase>]> {
  const directory = mkdtempSync(join(tmpdir(), `loom-${prefix}-`));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
  let counter = 0;
  const databases: Array<[string, () => Promise<SharedDatabase>]> = [
    [
      'sqlite',
      async () => {
        const path = join(directory, `${prefix}-${++counter}.db`);
        return { open: async () => openSqlite({ path, migrate: true }), drop: async () => {} };
      },
    ],
    [
      'postgres',
      async () => {
        const schema = `loom_${prefix.replaceAll('-', '_')}_${process.pid}_${++counter}`;
        const admin = await openPostgres({ connectionString: pgUrl, schema, migrate: true });
        return {
          open: () => openPostgres({ connectionString: pgUrl, schema }),
          drop: async () => {
            await admin.events.connectionPool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
            await admin.close();
          },
        };
      },
    ],
  ];
  if (!memory) return databases;
  const inMemory: [string, () => Promise<SharedDatabase>] = [
    'memory',
    async () => {
      const backend = openMemory();
      return { open: async () => backend, drop: () => backend.close() };
    },
  ];
  return [inMemory, ...databases];
}

/** Polls `check` every 10 ms until it holds; fails naming `what` after 20 s. */
export async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  for (const deadline = Date.now() + 20_000; !(await check()); ) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * The `fields.path` of the `INVALID_ARGUMENT` that `defineFlow` throws for these options (merged
 * into a flow named `bad`). Any other outcome (accepted, another error) fails the calling test.
 */
export function refusedOptionPath(options: object): string {
  try {
    defineFlow({ name: 'bad', ...options } as never, async () => null);
  } catch (error) {
    if (isLoomError(error, WorkflowErrorCode.INVALID_ARGUMENT)) {
      return String((error.fields as { path?: unknown } | undefined)?.path);
    }
    throw error;
  }
  throw new Error(`defineFlow accepted ${JSON.stringify(options)}`);
}

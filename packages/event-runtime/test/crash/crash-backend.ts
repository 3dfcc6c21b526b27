// Opens the store a crash worker drives, from environment variables set by the test, with the
// side table its transactional steps write to (`crash_side`, one row per transaction committed,
// in the same database as the log).
import type Database from 'better-sqlite3';
import type pg from 'pg';
import type { EventStore } from '../../src/index.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';

export interface CrashBackend {
  store: EventStore;
  /**
   * Inserts a side row for `executionId` through a `ctx.transaction` handle: synchronously on
   * SQLite (better-sqlite3 holds no transaction across an await), a promise on Postgres.
   */
  insertSide(tx: unknown, executionId: string): undefined | Promise<void>;
  close(): Promise<void>;
}

/**
 * `env` names the store (LOOM_CRASH_BACKEND, LOOM_CRASH_DB or LOOM_CRASH_PG_URL and
 * LOOM_CRASH_SCHEMA; LOOM_CRASH_NOTIFICATIONS=poll opens Postgres without LISTEN/NOTIFY). `prepare` (default: unless LOOM_CRASH_PREPARED=1) migrates and creates the side table; several
 * workers opening one log at once leave that to whoever prepared it before they started.
 */
export async function openCrashBackend(
  env: NodeJS.ProcessEnv = process.env,
  prepare = env.LOOM_CRASH_PREPARED !== '1',
): Promise<CrashBackend> {
  const backend = env.LOOM_CRASH_BACKEND ?? 'sqlite';
  if (backend === 'sqlite') {
    const store = SqliteEventStore.open({
      path: env.LOOM_CRASH_DB as string,
      migrate: prepare,
    });
    if (prepare)
      store.database.exec('CREATE TABLE IF NOT EXISTS crash_side (execution_id TEXT NOT NULL)');
    return {
      store,
      insertSide: (tx, executionId) => {
        (tx as Database.Database)
          .prepare('INSERT INTO crash_side (execution_id) VALUES (?)')
          .run(executionId);
        return undefined;
      },
      close: () => store.close(),
    };
  }
  if (backend === 'postgres') {
    const schema = env.LOOM_CRASH_SCHEMA as string;
    const store = await PostgresEventStore.open({
      connectionString: env.LOOM_CRASH_PG_URL as string,
      schema,
      // LOOM_CRASH_NOTIFICATIONS=poll: the store without LISTEN/NOTIFY (ADR 0057).
      ...(env.LOOM_CRASH_NOTIFICATIONS === 'poll' ? { notifications: 'poll' as const } : {}),
    });
    if (prepare) {
      await store.migrate();
      await store.connectionPool.query(
        `CREATE TABLE IF NOT EXISTS "${schema}".crash_side (execution_id text NOT NULL)`,
      );
    }
    return {
      store,
      insertSide: async (tx, executionId) => {
        await (tx as pg.ClientBase).query(
          `INSERT INTO "${schema}".crash_side (execution_id) VALUES ($1)`,
          [executionId],
        );
      },
      close: () => store.close(),
    };
  }
  throw new Error(`unknown LOOM_CRASH_BACKEND ${backend}`);
}

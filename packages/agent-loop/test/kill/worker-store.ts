// The event store a test's worker process opens, named by its environment under one prefix:
// `<P>_BACKEND` (`postgres`, else SQLite), `<P>_PG_URL` and `<P>_SCHEMA`, or `<P>_DB` (a SQLite
// file). Migrated, as the parent test expects of every life of the worker.
import { env } from 'node:process';
import type { EventStore } from '@loom/event-runtime';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';

/** Opens (and migrates) the store the worker's environment names under `prefix`. */
export async function openWorkerStore(prefix: string): Promise<EventStore> {
  if (env[`${prefix}_BACKEND`] === 'postgres') {
    const { PostgresEventStore } = await import('@loom/event-runtime/postgres');
    const store = await PostgresEventStore.open({
      connectionString: env[`${prefix}_PG_URL`] as string,
      schema: env[`${prefix}_SCHEMA`] as string,
    });
    await store.migrate();
    return store;
  }
  return SqliteEventStore.open({ path: env[`${prefix}_DB`] as string, migrate: true });
}

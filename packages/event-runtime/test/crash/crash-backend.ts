// Opens the store a crash worker drives, from environment variables set by the test.
import type { EventStore } from '../../src/index.js';
import { PostgresEventStore } from '../../src/postgres.js';
import { SqliteEventStore } from '../../src/sqlite.js';

export interface CrashBackend {
  store: EventStore;
  close(): Promise<void>;
}

export async function openCrashBackend(): Promise<CrashBackend> {
  const backend = process.env.LOOM_CRASH_BACKEND ?? 'sqlite';
  if (backend === 'sqlite') {
    const store = SqliteEventStore.open({
      path: process.env.LOOM_CRASH_DB as string,
      migrate: true,
    });
    return { store, close: () => store.close() };
  }
  if (backend === 'postgres') {
    const store = await PostgresEventStore.open({
      connectionString: process.env.LOOM_CRASH_PG_URL as string,
      schema: process.env.LOOM_CRASH_SCHEMA as string,
    });
    await store.migrate();
    return { store, close: () => store.close() };
  }
  throw new Error(`unknown LOOM_CRASH_BACKEND ${backend}`);
}

// Type-checked (never run) under moduleResolution NodeNext and Bundler with pg, better-sqlite3
// and their @types installed.
import { createRuntime, type EventStore } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';

const sqlite: EventStore = SqliteEventStore.open({ path: 'loom.db', migrate: true });
const postgres: PostgresEventStore = await PostgresEventStore.open({
  connectionString: 'postgres://root@127.0.0.1:5432/test',
  schema: 'loom',
});
export const runtimes = [sqlite, postgres].map((store) => createRuntime({ store, flows: [] }));

// Shared set-up of the agent-loop tests that run on the durable stores: a SQLite file in a fresh
// temporary folder and a throwaway Postgres schema per store opened (dropped after the file's
// tests), and the count of calls a tool wrote to its side-channel file.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventStore } from '@loom/event-runtime';
import { PostgresEventStore } from '@loom/event-runtime/postgres';
import { SqliteEventStore } from '@loom/event-runtime/sqlite';
import pg from 'pg';
import { afterAll } from 'vitest';

const pgUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** A store's name for `describe.each`, and how to open a fresh one named `name`. */
export type DurableBackend = [string, (name: string) => Promise<EventStore>];

/**
 * The two durable stores for `describe.each`, each opened fresh per call: a SQLite file in `dir`,
 * or a Postgres schema named after `prefix` (dropped in this file's `afterAll`).
 */
export function durableBackends(prefix: string): { dir: string; backends: DurableBackend[] } {
  const schemaPrefix = `${prefix}_${process.pid}_${Date.now().toString(36)}`;
  const schemas: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), `loom-${prefix}-`));
  afterAll(async () => {
    if (schemas.length === 0) return;
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });
  const backends: DurableBackend[] = [
    [
      'a SQLite file',
      async (name) => SqliteEventStore.open({ path: join(dir, `${name}.db`), migrate: true }),
    ],
    [
      'Postgres',
      async () => {
        const schema = `${schemaPrefix}_${schemas.length}`;
        schemas.push(schema);
        const store = await PostgresEventStore.open({ connectionString: pgUrl, schema });
        await store.migrate();
        return store;
      },
    ],
  ];
  return { dir, backends };
}

/** Lines in the file a tool appends one line to per call: how many times it ran. */
export function callsIn(file: string): number {
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '').length;
}

// The two databases the operator tests run against: a SQLite file in a temporary folder and a
// Postgres schema of the test file's own, dropped before first use and at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Backend } from '@loom/event-runtime';
import pg from 'pg';

export const pgUrl = process.env.LOOM_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';

export interface DbTarget {
  name: 'sqlite' | 'postgres';
  /** What `--db` / `LOOM_DB` takes. */
  db: string;
  /** What a worker process needs to open the same database (its environment). */
  env: Record<string, string>;
  /** Opens it with `migrate: true` (the Postgres schema is dropped before its first open). */
  open(): Promise<Backend>;
}

/**
 * The SQLite file and the Postgres schema `<prefix>_<pid>` of one test file, with the folder for
 * its other files and `cleanup` for its `afterAll`.
 */
export function dbTargets(prefix: string): {
  dir: string;
  targets: DbTarget[];
  cleanup(): Promise<void>;
} {
  const dir = mkdtempSync(join(tmpdir(), `loom-${prefix}-`));
  const schema = `${prefix.replaceAll('-', '_')}_${process.pid}`;
  const path = join(dir, 'loom.db');
  const dropSchema = async () => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  };
  let pgOpened = false;
  const targets: DbTarget[] = [
    {
      name: 'sqlite',
      db: `sqlite:${path}`,
      env: { SQLITE_PATH: path },
      open: async () => {
        const { openSqlite } = await import('@loom/event-runtime/sqlite');
        return openSqlite({ path, migrate: true });
      },
    },
    {
      name: 'postgres',
      db: `${pgUrl}?schema=${schema}`,
      env: { PG_URL: pgUrl, PG_SCHEMA: schema },
      open: async () => {
        if (!pgOpened) await dropSchema();
        pgOpened = true;
        const { openPostgres } = await import('@loom/event-runtime/postgres');
        return openPostgres({ connectionString: pgUrl, schema, migrate: true });
      },
    },
  ];
  return {
    dir,
    targets,
    cleanup: async () => {
      await dropSchema();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

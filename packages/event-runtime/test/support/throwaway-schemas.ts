// Throwaway Postgres schemas for one test file: an admin pool opened before the file's tests,
// every schema handed out dropped after them. Shared by the Postgres store tests.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { migrate } from '../../src/store/postgres/migrate.js';

/** The test server (role root, database test); LOOM_TEST_PG_URL overrides it. */
export const pgTestUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

export interface ThrowawaySchemas {
  /** A pool for setup and inspection behind the stores' backs (open during the tests). */
  readonly admin: pg.Pool;
  /** A fresh schema name, dropped after the file. */
  freshSchema(): string;
  dropSchema(schema: string): Promise<void>;
  /**
   * A migrated schema with no rows, dropped after the file: one released by
   * {@link ThrowawaySchemas.releaseSchema} and emptied, or else a fresh one migrated. Migrating
   * costs about 70 ms of the server's CPU and 250 ms of wall per schema (11 migrations, each its
   * own commit), emptying about 1 ms: a file whose every test wants a fresh database migrates
   * once per schema it holds at a time, not once per test.
   */
  migratedSchema(): Promise<string>;
  /**
   * Empties `schema` (every table but `loom_schema_version`, sequences restarted: as migrated)
   * and hands it to the next {@link ThrowawaySchemas.migratedSchema}. Call it only once every
   * store on it is closed; if emptying fails the schema is not handed out again.
   */
  releaseSchema(schema: string): Promise<void>;
}

/** Call at the top of a test file. */
export function useThrowawaySchemas(): ThrowawaySchemas {
  const schemas: string[] = [];
  const free: string[] = [];
  let admin: pg.Pool | undefined;
  const handle: ThrowawaySchemas = {
    get admin(): pg.Pool {
      if (admin === undefined)
        throw new Error('the admin pool opens in beforeAll: use it inside a test');
      return admin;
    },
    freshSchema: () => {
      const schema = `loom_test_${randomBytes(5).toString('hex')}`;
      schemas.push(schema);
      return schema;
    },
    dropSchema: async (schema) => {
      await handle.admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
    migratedSchema: async () => {
      const reused = free.pop();
      if (reused !== undefined) return reused;
      const schema = handle.freshSchema();
      await migrate({ pool: handle.admin, schema });
      return schema;
    },
    releaseSchema: async (schema) => {
      await emptySchema(handle.admin, schema);
      free.push(schema);
    },
  };
  beforeAll(() => {
    admin = new pg.Pool({ connectionString: pgTestUrl, max: 4 });
  });
  afterAll(async () => {
    for (const schema of schemas) await handle.dropSchema(schema);
    await admin?.end();
  });
  return handle;
}

/**
 * Empties a migrated schema: every table but `loom_schema_version` deleted from and every sequence
 * restarted, in one transaction (as freshly migrated). Call it only once every store on it is
 * closed: a store left open holds a lock here, and the 5 s lock timeout fails it rather than hang.
 */
export async function emptySchema(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables
       WHERE schemaname = $1 AND tablename <> 'loom_schema_version'`,
      [schema],
    );
    const sequences = await client.query<{ name: string }>(
      'SELECT sequencename AS name FROM pg_sequences WHERE schemaname = $1',
      [schema],
    );
    await client.query(
      [
        'BEGIN',
        "SET LOCAL lock_timeout = '5s'",
        ...tables.rows.map((table) => `DELETE FROM "${schema}"."${table.name}"`),
        ...sequences.rows.map(
          (sequence) => `ALTER SEQUENCE "${schema}"."${sequence.name}" RESTART`,
        ),
        'COMMIT',
      ].join('; '),
    );
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

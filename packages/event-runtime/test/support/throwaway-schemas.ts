// Throwaway Postgres schemas for one test file: an admin pool opened before the file's tests,
// every schema handed out dropped after them. Shared by the Postgres store tests.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

/** The test server (role root, database test); LOOM_TEST_PG_URL overrides it. */
export const pgTestUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

export interface ThrowawaySchemas {
  /** A pool for setup and inspection behind the stores' backs (open during the tests). */
  readonly admin: pg.Pool;
  /** A fresh schema name, dropped after the file. */
  freshSchema(): string;
  dropSchema(schema: string): Promise<void>;
}

/** Call at the top of a test file. */
export function useThrowawaySchemas(): ThrowawaySchemas {
  const schemas: string[] = [];
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

// Throwaway storage for this package's tests: Postgres schemas (prefix `loom_content_t_`, dropped
// after the file), SQLite files and directories in a temporary folder removed after the file.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

/** The test server (role root, database test); LOOM_TEST_PG_URL overrides it. */
export const pgTestUrl = process.env.LOOM_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';

export interface Throwaway {
  /** A pool for inspection behind the stores' backs (open during the tests). */
  readonly admin: pg.Pool;
  freshSchema(): string;
  dropSchema(schema: string): Promise<void>;
  freshPath(suffix: string): string;
}

/** Call at the top of a test file. */
export function useThrowaway(): Throwaway {
  const schemas: string[] = [];
  const directory = mkdtempSync(join(tmpdir(), 'loom-content-test-'));
  let counter = 0;
  let admin: pg.Pool | undefined;
  const handle: Throwaway = {
    get admin(): pg.Pool {
      if (admin === undefined) throw new Error('the admin pool opens in beforeAll');
      return admin;
    },
    freshSchema: () => {
      const schema = `loom_content_t_${randomBytes(5).toString('hex')}`;
      schemas.push(schema);
      return schema;
    },
    dropSchema: async (schema) => {
      await handle.admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
    freshPath: (suffix) => join(directory, `${++counter}${suffix}`),
  };
  beforeAll(() => {
    admin = new pg.Pool({ connectionString: pgTestUrl, max: 4 });
  });
  afterAll(async () => {
    for (const schema of schemas) await handle.dropSchema(schema);
    await admin?.end();
    rmSync(directory, { recursive: true, force: true });
  });
  return handle;
}

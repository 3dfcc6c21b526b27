import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pgTestUrl, useThrowawaySchemas } from '../test/support/throwaway-schemas.js';
import { ErrorCode, type LoomError } from './errors.js';
import { openMemory } from './open-memory.js';
import { openPostgres } from './store/postgres/open-postgres.js';
import { openSqlite } from './store/sqlite/open-sqlite.js';
import { backendConformance } from './testing/backend-conformance.js';

const directory = mkdtempSync(join(tmpdir(), 'loom-backend-'));
let counter = 0;
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const db = useThrowawaySchemas();

backendConformance('memory', async () => openMemory());
backendConformance('sqlite', async () =>
  openSqlite({ path: join(directory, `backend-${++counter}.db`), migrate: true }),
);
backendConformance('postgres', async () =>
  openPostgres({ connectionString: pgTestUrl, schema: db.freshSchema(), migrate: true }),
);

async function refusal(promise: Promise<unknown>): Promise<LoomError> {
  try {
    await promise;
  } catch (error) {
    return error as LoomError;
  }
  throw new Error('expected the call to fail');
}

describe('openSqlite', () => {
  it('the stores share one handle, and close() closes the file once', async () => {
    const backend = openSqlite({ path: join(directory, `shared-${++counter}.db`), migrate: true });
    expect(backend.leases.readOnly).toBe(false);
    const { database } = backend.events;
    await backend.close();
    expect(database.open).toBe(false);
    await backend.close();
  });

  it('a file that cannot be opened is STORE_UNAVAILABLE naming the path', async () => {
    const path = join(directory, 'no-such-dir', 'loom.db');
    const error = await refusal(Promise.resolve().then(() => openSqlite({ path })));
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
    expect(error.fields.path).toBe(path);
  });
});

describe('openPostgres', () => {
  it('a connection string that is not a PostgreSQL URL is INVALID_ARGUMENT, before any connection', async () => {
    const error = await refusal(openPostgres({ connectionString: 'http://127.0.0.1:5432/test' }));
    expect(error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(error.fields.path).toBe('connectionString');
  });

  it('a server that cannot be reached is STORE_UNAVAILABLE (and nothing is left open)', async () => {
    const error = await refusal(
      openPostgres({
        connectionString: 'postgres://root@127.0.0.1:1/test',
        connectTimeoutMs: 2_000,
      }),
    );
    expect(error.code).toBe(ErrorCode.STORE_UNAVAILABLE);
  });

  it('without migrate the schema is untouched, and migrate() makes every store usable', async () => {
    const schema = db.freshSchema();
    const backend = await openPostgres({ connectionString: pgTestUrl, schema });
    try {
      expect(backend.schema).toBe(schema);
      expect((await refusal(backend.leases.get('x'))).code).toBe(ErrorCode.SCHEMA_NOT_MIGRATED);
      await backend.migrate();
      expect(await backend.leases.get('x')).toBeUndefined();
      expect((await backend.queues.queueStats('q')).depth).toBe(0);
    } finally {
      await backend.close();
    }
  });

  it('close() leaves a pool the caller passed in open', async () => {
    const schema = db.freshSchema();
    const backend = await openPostgres({ pool: db.admin, schema, migrate: true });
    await backend.close();
    expect((await db.admin.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect((await refusal(backend.events.read('x'))).code).toBe(ErrorCode.STORE_CLOSED);
  });
});

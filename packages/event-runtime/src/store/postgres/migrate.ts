import type { Pool, PoolClient } from 'pg';
import { latestSchemaVersion, postgresMigrations } from './migrations/migration-list.js';
import { type CheckedOutClient, checkOut } from './pg-client.js';
import { classifyPgError, schemaTooNew, toLoomError } from './pg-errors.js';
import { type PgConnectionOptions, resolvePool } from './pg-pool.js';
import { beginReadCommitted } from './read-committed.js';
import { checkSchemaName, quoteIdent } from './schema-name.js';
import { readSchemaVersion } from './schema-version.js';

/** Where to migrate: a connection (string or pool) and the schema name (default `loom`). */
export interface PostgresMigrateOptions extends PgConnectionOptions {
  schema?: string;
}

/** What `migrate` did. `applied` is empty when the schema was already current. */
export interface PostgresMigrateResult {
  schema: string;
  /** The version found before migrating (null: the schema had no Loom tables). */
  fromVersion: number | null;
  toVersion: number;
  /** Names of the migrations this call applied, oldest first. */
  applied: string[];
}

/**
 * Creates or upgrades Loom's tables in a Postgres schema (creating the schema if needed). Safe to
 * run from several processes at once: they serialize on a per-schema advisory lock, and a
 * current schema is left untouched. Throws `SCHEMA_TOO_NEW` (a newer Loom migrated it),
 * `STORE_UNAVAILABLE`, `STORE_BUSY`, `STORE_FAILURE`, `INVALID_ARGUMENT` (bad schema name).
 *
 * @example
 * await migrate({ connectionString: process.env.DATABASE_URL, schema: 'loom' });
 */
export async function migrate(
  options: PostgresMigrateOptions = {},
): Promise<PostgresMigrateResult> {
  const schema = checkSchemaName(options.schema ?? 'loom');
  const { pool, owned } = resolvePool(options);
  try {
    return await migratePool(pool, schema);
  } finally {
    if (owned) await pool.end();
  }
}

/** {@link migrate} on a pool the caller keeps (the store's `migrate()` uses it). */
export async function migratePool(pool: Pool, schema: string): Promise<PostgresMigrateResult> {
  const context = { schema, operation: 'migrate', latestVersion: latestSchemaVersion };
  let checkedOut: CheckedOutClient;
  try {
    checkedOut = await checkOut(pool);
  } catch (error) {
    throw toLoomError(error, context);
  }
  let broken = false;
  try {
    return await migrateLocked(checkedOut.client, schema);
  } catch (error) {
    broken = checkedOut.lost !== undefined || classifyPgError(error) === 'connection_lost';
    throw toLoomError(checkedOut.lost ?? error, context);
  } finally {
    checkedOut.release(broken);
  }
}

/**
 * A deliberately tiny runner rather than kysely's Migrator. The Migrator looks for its
 * bookkeeping tables by introspecting every column of every table in every schema of the
 * database (`has_schema_privilege`, `pg_get_serial_sequence` per column) on every run: that
 * grows with the database, and fails with 3F000/42P01 whenever another session drops a schema
 * or table meanwhile, which throwaway-schema tests (and multi-tenant databases) do all the
 * time. It also keeps its own tables and a database-wide lock beside ours. What Loom needs is
 * small: under a per-schema session advisory lock, read `loom_schema_version`, then apply each
 * newer migration in its own transaction together with its version bump.
 */
async function migrateLocked(client: PoolClient, schema: string): Promise<PostgresMigrateResult> {
  const lockKey = `loom.migrate:${schema}`;
  await client.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [lockKey]);
  try {
    const fromVersion = await readSchemaVersion(client, schema);
    if (fromVersion !== null && fromVersion > latestSchemaVersion) {
      throw schemaTooNew(schema, fromVersion, latestSchemaVersion);
    }
    const quoted = quoteIdent(schema);
    const applied: string[] = [];
    for (const migration of postgresMigrations) {
      if (migration.version <= (fromVersion ?? 0)) continue;
      await inTransaction(client, async () => {
        // Only when missing: a schema a DBA created beforehand needs no CREATE on the database.
        const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [
          schema,
        ]);
        if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted}`);
        for (const statement of migration.statements(quoted)) await client.query(statement);
        await client.query(
          `INSERT INTO ${quoted}.loom_schema_version (singleton, version) VALUES (true, $1)
           ON CONFLICT (singleton) DO UPDATE SET version = excluded.version`,
          [migration.version],
        );
      });
      applied.push(migration.name);
    }
    return { schema, fromVersion, toVersion: latestSchemaVersion, applied };
  } finally {
    // When the connection is gone the lock went with its session; nothing to release.
    await client
      .query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [lockKey])
      .catch(() => undefined);
  }
}

async function inTransaction(client: PoolClient, work: () => Promise<void>): Promise<void> {
  await client.query(beginReadCommitted);
  try {
    await work();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

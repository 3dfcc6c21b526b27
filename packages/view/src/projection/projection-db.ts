import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { LoomError, ViewErrorCode } from '../errors.js';
import type { DbTarget } from '../internal/db-url.js';
import {
  checkpointName,
  type ProjectionDatabase,
  projectionDdl,
  projectionSchemaVersion,
  projectionTables,
} from './tables.js';

/** The Postgres schema of the store when `?schema=` names none (the kernel's default). */
const defaultPgSchema = 'loom';

/** How long a SQLite connection waits for another's lock before `database is locked`. */
const busyTimeoutMs = 10_000;

/** Projection tables on one database, through kysely (SQLite file or Postgres schema). */
export interface ProjectionDb {
  readonly dialect: 'sqlite' | 'postgres';
  /** The kysely instance, already scoped to the Postgres schema. */
  readonly db: Kysely<ProjectionDatabase>;
  /** Where: a file path or a schema, for messages. */
  readonly where: string;
  /** The Postgres schema the tables live in (undefined on SQLite). */
  readonly schema: string | undefined;
  close(): Promise<void>;
}

/**
 * Opens kysely on the database `target` names. `readOnly` opens a SQLite file read-only (and
 * never creates it). Nothing is created or migrated here.
 */
export async function openProjectionDb(target: DbTarget, readOnly: boolean): Promise<ProjectionDb> {
  if (target.kind === 'sqlite') {
    const { default: Database } = await import('better-sqlite3');
    const database = new Database(target.path, { readonly: readOnly, fileMustExist: true });
    // The wait first: a file a killed projector left needs WAL recovery by whoever opens it next.
    database.pragma(`busy_timeout = ${busyTimeoutMs}`);
    if (!readOnly) database.pragma('journal_mode = WAL');
    return sqliteProjectionDb(database, target.path);
  }
  // Loom's pool (a host list finds its primary again after a failover: ADR 0055).
  const { createPostgresPool } = await import('@loom/event-runtime/postgres');
  const pool = createPostgresPool({ connectionString: target.connectionString, max: 2 });
  const schema = target.schema ?? defaultPgSchema;
  const db = new Kysely<ProjectionDatabase>({ dialect: new PostgresDialect({ pool }) }).withSchema(
    schema,
  );
  return {
    dialect: 'postgres',
    db,
    where: `PostgreSQL schema '${schema}'`,
    schema,
    close: () => db.destroy(),
  };
}

/**
 * Projection tables in a better-sqlite3 database you opened (a file, or `:memory:` for the
 * in-memory backend and for rebuilds to compare against).
 */
export function sqliteProjectionDb(
  database: import('better-sqlite3').Database,
  where = ':memory:',
): ProjectionDb {
  const db = new Kysely<ProjectionDatabase>({ dialect: new SqliteDialect({ database }) });
  return {
    dialect: 'sqlite',
    db,
    where: `SQLite file ${where}`,
    schema: undefined,
    close: () => db.destroy(),
  };
}

/**
 * Runs `work` in one write transaction. SQLite: `BEGIN IMMEDIATE`, so the write lock is taken (or
 * waited for, up to the busy timeout) before the first read: a deferred transaction that reads
 * and then writes fails at once with `database is locked` when another connection wrote between.
 */
export async function writeTransaction<T>(
  projections: ProjectionDb,
  work: (trx: Kysely<ProjectionDatabase>) => Promise<T>,
): Promise<T> {
  if (projections.dialect === 'postgres') return projections.db.transaction().execute(work);
  return projections.db.connection().execute(async (connection) => {
    await sql`BEGIN IMMEDIATE`.execute(connection);
    try {
      const result = await work(connection);
      await sql`COMMIT`.execute(connection);
      return result;
    } catch (error) {
      await sql`ROLLBACK`.execute(connection);
      throw error;
    }
  });
}

/** `PROJECTIONS_NOT_INITIALIZED` for `where`, naming the command that creates them. */
function notInitialized(where: string, cause?: unknown): LoomError {
  return new LoomError(
    ViewErrorCode.PROJECTIONS_NOT_INITIALIZED,
    `${where} has no Loom projection tables: create them once with 'loom projections init --db <url>' ` +
      "(or initProjections({ db })), then keep them current with 'loom projections run'",
    { where },
    cause,
  );
}

/** The checkpoint row, read in one query; `PROJECTIONS_NOT_INITIALIZED` when the tables are missing. */
export async function readCheckpoint(
  projections: ProjectionDb,
  /** True when the tables were found before (by this reader): the catalog read is skipped. */
  tablesKnown = false,
): Promise<{ position: number; events: number }> {
  if (!tablesKnown && !(await tablesExist(projections))) throw notInitialized(projections.where);
  const row = await projections.db
    .selectFrom('loom_projection_checkpoints')
    .select(['position', 'events', 'version'])
    .where('name', '=', checkpointName)
    .executeTakeFirst();
  if (row === undefined || row.version !== projectionSchemaVersion) {
    throw notInitialized(projections.where);
  }
  return { position: Number(row.position), events: Number(row.events) };
}

/** The checkpoint's schema version, or undefined when there is no checkpoint table or row. */
async function storedVersion(projections: ProjectionDb): Promise<number | undefined> {
  const row = await projections.db
    .selectFrom('loom_projection_checkpoints')
    .select('version')
    .where('name', '=', checkpointName)
    .executeTakeFirst();
  return row?.version;
}

/** True when every projection table exists (a catalog read: nothing is created). */
export async function tablesExist(projections: ProjectionDb): Promise<boolean> {
  const names = [...projectionTables];
  if (projections.dialect === 'sqlite') {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN (${sql.join(names)})
    `.execute(projections.db);
    return Number(rows[0]?.n) === names.length;
  }
  const { rows } = await sql<{ n: string }>`
    SELECT count(*) AS n FROM information_schema.tables
    WHERE table_schema = ${projections.schema ?? defaultPgSchema} AND table_name IN (${sql.join(names)})
  `.execute(projections.db);
  return Number(rows[0]?.n) === names.length;
}

/**
 * Creates the projection tables and their checkpoint (position 0) in one transaction; a second
 * call finds them and does nothing. Returns whether it created them.
 */
export async function createProjectionTables(projections: ProjectionDb): Promise<boolean> {
  // Tables of this version are left as they are; so are a newer Loom's, never dropped from here.
  if (
    (await tablesExist(projections)) &&
    ((await storedVersion(projections)) ?? 0) >= projectionSchemaVersion
  ) {
    return false;
  }
  const schema = projections.schema ?? defaultPgSchema;
  const prefix = projections.dialect === 'postgres' ? `"${schema}".` : '';
  await writeTransaction(projections, async (trx) => {
    // Tables of an older projection version (or a part of them) are derived data: dropped and
    // re-created at position 0, so the next projector run rebuilds every row from the log.
    for (const table of projectionTables) {
      await sql.raw(`DROP TABLE IF EXISTS ${prefix}${table}`).execute(trx);
    }
    for (const statement of projectionDdl(projections.dialect, prefix)) {
      await sql.raw(statement).execute(trx);
    }
    await trx
      .insertInto('loom_projection_checkpoints')
      .values({
        name: checkpointName,
        position: 0,
        events: 0,
        version: projectionSchemaVersion,
        updated_at_ms: Date.now(),
      })
      .execute();
  });
  return true;
}

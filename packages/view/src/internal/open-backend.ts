import { type Backend, isLoomError } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';
import type { DbTarget } from './db-url.js';
import { type PageReader, postgresPageReader, sqlitePageReader } from './page-reader.js';

/** A backend the view opened, with its reader of whole pages of runs (one query per read). */
export type OpenedBackend = Backend & { readonly pages: PageReader };

/** How long connecting to Postgres may take (the kernel's `connectTimeoutMsDefault`). */
const pgConnectTimeoutMs = 10_000;

/**
 * Opens a backend without creating or migrating anything: a SQLite file is first opened read-only
 * (so a missing file is not created) and its schema version checked; a Postgres schema is checked
 * with one read. A writable open (`readOnly: false`) only follows a successful check.
 */
export async function openBackend(target: DbTarget, readOnly: boolean): Promise<OpenedBackend> {
  if (target.kind === 'sqlite') {
    const { openSqlite, sqliteSchemaVersion } = await driver(
      () => import('@loom/event-runtime/sqlite'),
      'better-sqlite3@12',
    );
    const probe = openSqlite({ path: target.path, readOnly: true });
    try {
      const version = probe.events.database.pragma('user_version', { simple: true }) as number;
      if (version < sqliteSchemaVersion) {
        throw notMigrated(
          `SQLite file ${target.path}`,
          `version ${version}, need ${sqliteSchemaVersion}`,
        );
      }
    } finally {
      await probe.close();
    }
    const backend = readOnly
      ? openSqlite({ path: target.path, readOnly: true })
      : openSqlite({ path: target.path });
    return { ...backend, pages: sqlitePageReader(backend.events.database) };
  }
  const { openPostgres } = await driver(() => import('@loom/event-runtime/postgres'), 'pg@8');
  // The store's own pool (a host list needs the store's connections: ADR 0055); the page reads
  // borrow it (`connectionPool`), and closing the backend ends it.
  const backend = await openPostgres({
    connectionString: target.connectionString,
    connectTimeoutMs: pgConnectTimeoutMs,
    readOnly,
    ...(target.schema === undefined ? {} : { schema: target.schema }),
  });
  const pool = backend.events.connectionPool;
  const close = () => backend.close();
  try {
    await backend.events.findExecutions({ limit: 1 });
  } catch (error) {
    await close();
    if (isLoomError(error, 'SCHEMA_NOT_MIGRATED')) {
      throw notMigrated(`PostgreSQL schema '${backend.schema}'`, null, error);
    }
    throw error;
  }
  return { ...backend, close, pages: postgresPageReader(pool, backend.schema) };
}

/** Loads a store entry whose driver is an optional peer; a missing driver says what to install. */
async function driver<T>(load: () => Promise<T>, install: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new LoomError(
      ViewErrorCode.DRIVER_MISSING,
      `cannot load the database driver: install it beside @loom/view (npm install ${install})`,
      { driver: install },
      error,
    );
  }
}

function notMigrated(where: string, version: string | null, cause?: unknown): LoomError {
  return new LoomError(
    ViewErrorCode.SCHEMA_NOT_MIGRATED,
    `${where} has no current Loom schema${version === null ? '' : ` (${version})`}: ` +
      'the view never creates or migrates tables; point --db at the database your runtime uses, ' +
      'or migrate it with the runtime first (openSqlite/openPostgres with migrate: true)',
    { where },
    cause,
  );
}

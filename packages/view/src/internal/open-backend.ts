import { type Backend, isLoomError } from '@loom/event-runtime';
import { LoomError, ViewErrorCode } from '../errors.js';
import type { DbTarget } from './db-url.js';

/**
 * Opens a backend without creating or migrating anything: a SQLite file is first opened read-only
 * (so a missing file is not created) and its schema version checked; a Postgres schema is checked
 * with one read. A writable open (`readOnly: false`) only follows a successful check.
 */
export async function openBackend(target: DbTarget, readOnly: boolean): Promise<Backend> {
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
    return readOnly
      ? openSqlite({ path: target.path, readOnly: true })
      : openSqlite({ path: target.path });
  }
  const { openPostgres } = await driver(() => import('@loom/event-runtime/postgres'), 'pg@8');
  const backend = await openPostgres({
    connectionString: target.connectionString,
    readOnly,
    ...(target.schema === undefined ? {} : { schema: target.schema }),
  });
  try {
    await backend.events.findExecutions({ limit: 1 });
  } catch (error) {
    await backend.close();
    if (isLoomError(error, 'SCHEMA_NOT_MIGRATED')) {
      throw notMigrated(`PostgreSQL schema '${backend.schema}'`, null, error);
    }
    throw error;
  }
  return backend;
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

import type Database from 'better-sqlite3';
import { ErrorCode, LoomError } from '../../errors.js';
import { mapSqliteError } from './sqlite-errors.js';
import { sqliteMigrations, sqliteSchemaVersion } from './sqlite-migrations.js';

/** The version of the migration named `name`; a missing name is a bug in this package. */
export function sqliteMigrationVersion(name: string): number {
  const migration = sqliteMigrations.find((candidate) => candidate.name === name);
  if (migration === undefined) throw new Error(`no SQLite migration is named '${name}'`);
  return migration.version;
}

/**
 * Refuses a database whose schema lacks what a store needs: `SCHEMA_NOT_MIGRATED` below
 * `requiredVersion` (the migration that created the store's tables), `SCHEMA_TOO_NEW` past the
 * newest version this code knows.
 */
export function assertSqliteSchema(
  database: Database.Database,
  requiredVersion: number,
  store: string,
): void {
  let version: number;
  try {
    version = database.pragma('user_version', { simple: true }) as number;
  } catch (error) {
    throw mapSqliteError(error, `${store}: schema check`);
  }
  if (version < requiredVersion) {
    throw new LoomError(
      ErrorCode.SCHEMA_NOT_MIGRATED,
      `SQLite database ${database.name} is at schema version ${version}, the ${store} needs ` +
        `${requiredVersion}: call migrate() on the SqliteEventStore (or open it with ` +
        '{ migrate: true }) first',
      { expected: requiredVersion, actual: version },
    );
  }
  if (version > sqliteSchemaVersion) {
    throw new LoomError(
      ErrorCode.SCHEMA_TOO_NEW,
      `SQLite database ${database.name} has schema version ${version}, but this Loom knows up to ` +
        `${sqliteSchemaVersion}: upgrade @loom/event-runtime before using it`,
      { expected: sqliteSchemaVersion, actual: version },
    );
  }
}

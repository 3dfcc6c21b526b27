import type Database from 'better-sqlite3';
import { ErrorCode, LoomError } from '../../errors.js';
import { storeReadOnly } from '../../internal/store-errors.js';
import { mapSqliteError } from './sqlite-errors.js';
import { assertSqliteSchema, sqliteMigrationVersion } from './sqlite-schema-gate.js';

/**
 * What the stores that live beside the event log in its SQLite file (leases, snapshots,
 * queues) share: the borrowed handle, read-only and closed guards, and statements prepared once
 * the migration that made their tables is known to be applied. The handle is never closed here:
 * the event store owns it.
 */
export class SqliteTableAccess<Statements> {
  readonly readOnly: boolean;
  private statements: Statements | undefined;
  private closed = false;

  /**
   * @param what the store's noun in messages ('lease', 'snapshot', 'queue')
   * @param migration the name of the migration that created the store's tables
   */
  constructor(
    readonly database: Database.Database,
    private readonly what: string,
    private readonly migration: string,
    private readonly prepare: (database: Database.Database) => Statements,
    readOnly: boolean | undefined,
  ) {
    this.readOnly = readOnly === true || database.readonly;
  }

  /** The cached statements. Throws `SCHEMA_NOT_MIGRATED` / `SCHEMA_TOO_NEW`, `STORE_FAILURE`. */
  ready(): Statements {
    if (this.statements !== undefined) return this.statements;
    assertSqliteSchema(this.database, sqliteMigrationVersion(this.migration), `${this.what} store`);
    try {
      this.statements = this.prepare(this.database);
    } catch (error) {
      throw mapSqliteError(error, `prepare ${this.what} statements`);
    }
    return this.statements;
  }

  /** Throws `STORE_CLOSED` when this store or the borrowed handle was closed. */
  assertOpen(): void {
    if (this.closed || !this.database.open) {
      throw new LoomError(
        ErrorCode.STORE_CLOSED,
        this.closed
          ? `the sqlite ${this.what} store is closed`
          : `the SQLite handle of the ${this.what} store (${this.database.name}) was closed by its owner`,
        { backend: 'sqlite' },
      );
    }
  }

  /** Throws `STORE_CLOSED`, or `STORE_READ_ONLY` naming the operation. */
  assertWritable(operation: string): void {
    this.assertOpen();
    if (this.readOnly) throw storeReadOnly(`sqlite ${this.what}`, operation);
  }

  close(): void {
    this.closed = true;
    this.statements = undefined;
  }
}

import type { LoomError } from '../../errors.js';
import { type StoreFailureKind, storeFailure } from '../../internal/store-errors.js';

/** Classifies a better-sqlite3 error into the kernel's failure kinds. */
export function sqliteFailureKind(error: unknown): StoreFailureKind {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'string') return 'other';
  if (code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE') {
    return 'unique_violation';
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code === 'SQLITE_CANTOPEN' || code.startsWith('SQLITE_IOERR')) return 'connection_lost';
  if (code === 'SQLITE_FULL') return 'full';
  if (code.startsWith('SQLITE_READONLY')) return 'read_only';
  return 'other';
}

/** What to tell the reader for each failure kind (the code comes from the kind: store-kit). */
function sqliteFailureMessage(kind: StoreFailureKind, error: unknown, operation: string): string {
  switch (kind) {
    case 'busy':
      return (
        `SQLite was locked by another writer for longer than the busy timeout during ${operation}; ` +
        'retry, or raise busyTimeoutMs'
      );
    case 'connection_lost':
      return `SQLite could not read or write its file during ${operation}`;
    case 'full':
      return (
        `SQLite's database is full during ${operation} (the disk, or its max_page_count): ` +
        'nothing of this write was stored; free space and it goes on'
      );
    case 'read_only':
      return (
        `SQLite refused to write during ${operation}: the file or its folder is read-only, or ` +
        'the connection is (query_only); nothing was stored'
      );
    default:
      return `SQLite failed during ${operation}: ${(error as Error)?.message ?? String(error)}`;
  }
}

/** Wraps a driver error as a typed LoomError (never loses the original: it is the `cause`). */
export function mapSqliteError(error: unknown, operation: string): LoomError {
  const kind = sqliteFailureKind(error);
  return storeFailure(kind, sqliteFailureMessage(kind, error, operation), { operation }, error);
}

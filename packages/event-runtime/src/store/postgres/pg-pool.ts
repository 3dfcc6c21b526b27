import pg, { type Pool } from 'pg';
import { ErrorCode, LoomError } from '../../errors.js';

/** How a caller points Loom at Postgres: a connection string, or a pool it owns. */
export interface PgConnectionOptions {
  /** `postgres://…`; without it (and without `pool`) pg's `PG*` environment variables apply. */
  connectionString?: string;
  /** A pool the caller created and will end; Loom never ends it. */
  pool?: Pool;
}

/** The pool to use and whether Loom created it (and so must end it). */
export interface ResolvedPool {
  pool: Pool;
  owned: boolean;
}

/** Picks the caller's pool or creates one (throws `INVALID_ARGUMENT` when given both). */
export function resolvePool(options: PgConnectionOptions): ResolvedPool {
  if (options.pool !== undefined) {
    if (options.connectionString !== undefined) {
      throw new LoomError(
        ErrorCode.INVALID_ARGUMENT,
        'pass either connectionString or pool, not both: a pool already knows where it connects',
        { path: 'connectionString' },
      );
    }
    return { pool: options.pool, owned: false };
  }
  const pool = new pg.Pool(
    options.connectionString === undefined ? {} : { connectionString: options.connectionString },
  );
  // An idle client whose server went away emits 'error' on the pool; unhandled, that would kill
  // the process. The next query on the pool fails and is mapped to STORE_UNAVAILABLE instead.
  pool.on('error', () => {});
  return { pool, owned: true };
}
